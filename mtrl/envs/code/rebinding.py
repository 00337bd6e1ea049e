"""Whether the entry point that runs is the `def` the analysis read (issue 39).

The level reward's helper parts read the entry point's last top-level `def`; the
tests call whatever the name is bound to when they run. An entry point rebound
after its `def` (`f = g`, a later `def` inside an `if`, a decorator, an import
as `f`, a `global f` in another function) or a program that can reach its own
namespace at run time (`globals()`, `vars()`, `exec`, a function's
`__globals__`, a frame's `f_globals`, `gc`, `ctypes`, ...) may run code the
analysis never saw: such a program earns no helper points, whatever the `def`
says. Honest solutions do none of these.
"""

from __future__ import annotations

import ast

# Names and attributes that reach a namespace at run time (or patch a function).
_DYNAMIC_NAMES = frozenset({"globals", "vars", "locals", "exec", "eval", "compile",
                            "setattr", "delattr", "__import__", "__builtins__"})
_DYNAMIC_ATTRIBUTES = frozenset({"__dict__", "__globals__", "__code__", "__closure__",
                                 "__builtins__", "f_globals", "f_locals", "f_back",
                                 "_getframe", "modules", "__setattr__", "__wrapped__"})
_DYNAMIC_MODULES = frozenset({"gc", "ctypes", "inspect", "builtins", "importlib", "_ctypes"})
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def why_rebound(tree: ast.Module | None, function: ast.FunctionDef | ast.AsyncFunctionDef
                ) -> str:
    """"" when the entry point that runs is `function` as the analysis read it,
    else a short reason (what the program does that may rebind it)."""
    if tree is None:
        return ""
    name = function.name
    if function.decorator_list:
        return f"`{name}` is decorated"
    for node in ast.walk(tree):
        if isinstance(node, ast.Global) and name in node.names:
            return f"a function declares `global {name}`"
        if isinstance(node, ast.Name) and node.id in _DYNAMIC_NAMES:
            return f"the code uses `{node.id}`"
        if isinstance(node, ast.Attribute) and node.attr in _DYNAMIC_ATTRIBUTES:
            return f"the code uses `.{node.attr}`"
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [alias.name for alias in node.names] if isinstance(node, ast.Import) else [
                node.module or ""]
            if any(module.split(".")[0] in _DYNAMIC_MODULES for module in modules):
                return f"the code imports `{modules[0]}`"
    for node in _module_scope(tree):  # earlier bindings are overwritten by the def
        if getattr(node, "lineno", 0) > function.lineno and name in _bound_names(node):
            return f"`{name}` is bound again at line {node.lineno}"
    return ""


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
