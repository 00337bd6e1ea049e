"""Whether the entry point that runs is the `def` the analysis read.

The level reward's helper parts read the entry point's last top-level `def`; the
tests call whatever the name is bound to when they run. An entry point rebound
after its `def` (`f = g`, a later `def` inside an `if`, a decorator, an import
as `f`, a `global f` in another function) or a program that can reach its own
namespace or a function's internals at run time (`globals()`, `vars()`, `exec`, a
function's `__globals__`, a frame's `f_globals`, `gc`, `ctypes`, ...) may run code
the analysis never saw: such a program earns no helper points, whatever the `def`
says. Names are not only read as written: an attribute reached by a name computed
at run time (`getattr`, `operator.attrgetter` / `methodcaller`,
`object.__getattribute__`, `string.Formatter().get_field`, a `case` pattern's
keyword), any dunder name beyond a few plain ones, any string containing `__`
(`'__glob' + 'als__'`) and modules that rebuild objects from data (`pickle`,
`marshal`, `types`) all count. Honest solutions do none of these.
"""

from __future__ import annotations

import ast

from mtrl.envs.code.ast_walk import Budget

# Names and attributes that reach a namespace at run time (or patch a function).
_DYNAMIC_NAMES = frozenset({"globals", "vars", "locals", "exec", "eval", "compile",
                            "setattr", "delattr", "__import__", "__builtins__"})
_DYNAMIC_ATTRIBUTES = frozenset({"__dict__", "__globals__", "__code__", "__closure__",
                                 "__builtins__", "f_globals", "f_locals", "f_back",
                                 "_getframe", "modules", "__setattr__", "__wrapped__"})
# As an attribute or an imported name (`len.__self__.globals`, `from sys import
# modules`); `compile` is left out: `re.compile` is common and plain.
_DYNAMIC_MEMBERS = (_DYNAMIC_NAMES - {"compile"}) | _DYNAMIC_ATTRIBUTES
# Attribute access by a name computed at run time: with these, any name above can
# be spelled as a string built when the program runs ('__glob' + 'als__').
_BY_STRING = frozenset({"getattr", "attrgetter", "methodcaller", "__getattribute__",
                        "__getattr__", "get_field", "getattr_static", "Formatter"})
_DYNAMIC_MODULES = frozenset({"gc", "ctypes", "inspect", "builtins", "importlib", "_ctypes",
                              "pickle", "_pickle", "marshal", "copyreg", "shelve", "dill",
                              "runpy", "code", "codeop", "pdb", "types", "__main__",
                              "_operator"})
# Dunder names an honest solution uses; any other dunder name, or a string that
# contains "__", may reach a function's or a module's internals.
_PLAIN_DUNDERS = frozenset({"__init__", "__name__", "__len__", "__eq__", "__lt__", "__le__",
                            "__gt__", "__ge__", "__ne__", "__hash__", "__repr__", "__str__",
                            "__iter__", "__next__", "__contains__", "__getitem__",
                            "__add__", "__mul__", "__sub__", "__neg__", "__bool__",
                            "__doc__", "__slots__", "__post_init__", "__future__"})
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def why_rebound(tree: ast.Module | None, function: ast.FunctionDef | ast.AsyncFunctionDef,
                budget: Budget | None = None) -> str:
    """"" when the entry point that runs is `function` as the analysis read it,
    else a short reason (what the program does that may rebind it)."""
    if tree is None:
        return ""
    name = function.name
    if function.decorator_list:
        return f"`{name}` is decorated"
    docstrings = {id(body[0].value) for body in _bodies(tree) if body and isinstance(
        body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)}
    for node in ast.walk(tree):
        if budget is not None:
            budget.spend()
        reason = _dynamic(node, name, docstrings)
        if reason:
            return reason
    for node in _module_scope(tree):  # earlier bindings are overwritten by the def
        if getattr(node, "lineno", 0) > function.lineno and name in _bound_names(node):
            return f"`{name}` is bound again at line {node.lineno}"
    return ""


def _dynamic(node: ast.AST, name: str, docstrings: set[int]) -> str:
    """Why `node` may reach a namespace or a function's internals at run time, or ""."""
    if isinstance(node, ast.Global) and name in node.names:
        return f"a function declares `global {name}`"
    identifiers: list[str] = []
    if isinstance(node, ast.Name):
        identifiers, dynamic = [node.id], _DYNAMIC_NAMES
    elif isinstance(node, ast.Attribute):
        identifiers, dynamic = [node.attr], _DYNAMIC_MEMBERS
    elif isinstance(node, ast.alias):  # `from operator import attrgetter as get`
        identifiers, dynamic = [node.name.split(".")[-1]], _DYNAMIC_MEMBERS
    elif isinstance(node, ast.MatchClass):  # `case object(__globals__=g)`
        identifiers, dynamic = list(node.kwd_attrs), _DYNAMIC_MEMBERS
    for identifier in identifiers:
        if identifier in dynamic or identifier in _BY_STRING:
            return f"the code uses `{identifier}`"
        if identifier.startswith("__") and identifier.endswith("__") and (
                identifier not in _PLAIN_DUNDERS):
            return f"the code uses `{identifier}`"
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)) and (
            id(node) not in docstrings):
        text = node.value if isinstance(node.value, str) else node.value.decode("latin-1")
        if "__" in text:
            return "a string in the code contains `__`"
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        modules = [alias.name for alias in node.names] if isinstance(node, ast.Import) else [
            node.module or ""]
        if any(module.split(".")[0] in _DYNAMIC_MODULES for module in modules):
            return f"the code imports `{modules[0]}`"
    return ""


def _bodies(tree: ast.Module):
    yield tree.body
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node.body

def _module_scope(tree: ast.Module):
    """Statements and expressions of the module's own scope (compound statements
    included, function and class bodies not)."""
    stack: list[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, _SCOPES):
            stack.extend(ast.iter_child_nodes(node))


def _bound_names(node: ast.AST) -> set[str]:
    """The names `node` binds in the scope it appears in."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
        return {node.id}
    if isinstance(node, ast.ExceptHandler) and node.name:
        return {node.name}
    if isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
        return {node.name}
    if isinstance(node, ast.MatchMapping) and node.rest:
        return {node.rest}
    return set()
