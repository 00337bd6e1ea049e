"""Where the helper's value goes in the whole of main's code (the level reward's
helper parts; per-function data flow: dataflow.py).

The sandbox counts main's calls of `aux` wherever they are made: in the entry
point, in a function it calls, in a lambda, at module level. So every place that
can call aux is checked, not only the entry point's own body. A function (def,
lambda or class) *carries* aux when its code refers to aux or to another function
that carries it (a least fixed point over references). In each function, the
calls that reach aux or a carrier (`aux(x)`, `g(x)`, `map(aux, xs)`) are sources,
and each must be used there (dataflow.FunctionFlow: it reaches every answer given
after it); a reference that escapes otherwise (`h = aux`) cannot be followed and
counts as unused. A source at
module level or in a class body (a method, reached through an attribute) is never
used. So a call's value counts only where it flows, through returns, into the
entry point's answer; a call made anywhere else is an ignored one.

Cost: one walk of the tree, one fixed point over references (a worklist, linear)
and one data-flow pass per function with sources, all counted against one Budget.
"""

from __future__ import annotations

import ast
import dataclasses

from mtrl.envs.code import ast_walk, dataflow

_NAMED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@dataclasses.dataclass(frozen=True)
class ProgramFlow:
    calls_aux: bool  # the entry point's own code refers to aux or to a carrier of it
    used: bool  # ... and some such reference reaches every answer given after it
    ignored_lines: tuple[int, ...]  # lines of references, anywhere, whose value is not used


def program_flow(tree: ast.Module, entry: ast.AST, helper: str, budget: ast_walk.Budget
                 ) -> ProgramFlow:
    """The helper's flow through `tree` (module docstring); raises
    ast_walk.BudgetExceeded past `budget`."""
    scopes: list[ast.AST] = [tree]
    parent: dict[int, ast.AST] = {}
    loads: dict[int, list[ast.Name]] = {}  # id(scope) -> its Name loads
    nested: dict[int, list[ast.AST]] = {}  # id(scope) -> scopes defined in its own code
    called: dict[int, ast.Call] = {}  # id(function or argument expression) -> its call
    index = 0
    while index < len(scopes):
        scope = scopes[index]
        index += 1
        names, inner = [], []
        for node in ast_walk.own_nodes(scope, budget):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                names.append(node)
            elif isinstance(node, (*_NAMED, ast.Lambda)):
                inner.append(node)
                parent[id(node)] = scope
            elif isinstance(node, ast.Call):
                for part in (node.func, *node.args, *(k.value for k in node.keywords)):
                    called[id(part.value if isinstance(part, ast.Starred) else part)] = node
        loads[id(scope)], nested[id(scope)] = names, inner
        scopes.extend(inner)

    carriers = _carriers(scopes, parent, loads, helper, budget)
    carried_names = {node.name for node in scopes
                     if isinstance(node, _NAMED) and id(node) in carriers}
    ignored: set[int] = set()
    entry_calls = entry_used = False
    for scope in scopes:
        references = [name for name in loads[id(scope)]
                      if name.id == helper or name.id in carried_names]
        references += [node for node in nested[id(scope)] if id(node) in carriers and (
            isinstance(node, ast.Lambda) or isinstance(scope, ast.ClassDef))]
        if not references:
            continue
        # A reference's value is the call it is made in (`aux(x)`) or handed to
        # (`map(aux, xs)`); one that escapes any other way (`g = aux`, `if aux:`)
        # cannot be followed and is never used.
        calls = {id(node): called.get(id(node)) for node in references}
        bits: dict[int, int] = {}
        for call in calls.values():
            if call is not None and id(call) not in bits:
                bits[id(call)] = 1 << len(bits)
        used = 0
        if bits and isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            used = dataflow.FunctionFlow(scope, bits, budget).run().used
        ignored.update(node.lineno for node in references
                       if calls[id(node)] is None or not used & bits[id(calls[id(node)])])
        if scope is entry:
            entry_calls, entry_used = True, bool(used)
    return ProgramFlow(calls_aux=entry_calls, used=entry_used, ignored_lines=tuple(sorted(ignored)))


def _carriers(scopes: list[ast.AST], parent: dict[int, ast.AST],
              loads: dict[int, list[ast.Name]], helper: str, budget: ast_walk.Budget
              ) -> set[int]:
    """ids of the scopes that carry the helper: they refer to it, or to a carrier by
    name; a lambda carries into the code it is written in, a method into its class."""
    loaders: dict[str, list[ast.AST]] = {}
    for scope in scopes:
        for name in loads[id(scope)]:
            budget.spend()
            loaders.setdefault(name.id, []).append(scope)
    carriers: set[int] = set()
    work = list(loaders.get(helper, []))
    while work:
        scope = work.pop()
        budget.spend()
        if id(scope) in carriers or scope is scopes[0]:
            continue  # the module carries nothing further
        carriers.add(id(scope))
        if isinstance(scope, _NAMED):
            work.extend(loaders.get(scope.name, []))
        up = parent.get(id(scope))
        if up is not None and (isinstance(scope, ast.Lambda) or isinstance(up, ast.ClassDef)):
            work.append(up)
    return carriers


def passes_through(function: ast.FunctionDef | ast.AsyncFunctionDef, helper: str,
                   budget: ast_walk.Budget) -> bool:
    """Every value the function returns is `helper`'s value unchanged: `return
    aux(...)`, or a name bound only to such values (a thin wrapper). False when it
    returns nothing, yields, or returns anything else on some path. Linear: a name
    is pure when every value bound to it is a helper call or a pure name (a least
    fixed point, so a cycle of names is not pure)."""
    returns: list[ast.expr | None] = []
    values: dict[str, list[ast.expr | None]] = {}
    for node in ast_walk.own_nodes(function, budget):
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return False
        if isinstance(node, ast.Return):
            returns.append(node.value)
        for target, value in _bindings(node):
            values.setdefault(target, []).append(value)
    for argument in ast.walk(function.args):
        if isinstance(argument, ast.arg):
            values.setdefault(argument.arg, []).append(None)  # a parameter: not aux's

    def unwrap(expression: ast.expr | None) -> ast.expr | None:
        while isinstance(expression, ast.Await):
            expression = expression.value
        return expression

    # pending[name]: its values not yet known pure; waiting[name]: names whose value it is.
    pending: dict[str, int] = {}
    waiting: dict[str, list[str]] = {}
    pure: list[str] = []
    for name, bound in values.items():
        count = 0
        for value in map(unwrap, bound):
            budget.spend()
            if isinstance(value, ast.Name):
                count += 1
                waiting.setdefault(value.id, []).append(name)
            elif not ast_walk.is_call_to(value, helper):
                count = -1
                break
        pending[name] = count
        if count == 0:
            pure.append(name)
    known: set[str] = set()
    while pure:
        name = pure.pop()
        if name in known:
            continue
        known.add(name)
        for other in waiting.get(name, []):
            budget.spend()
            if pending[other] > 0:
                pending[other] -= 1
                if pending[other] == 0:
                    pure.append(other)

    def is_pure(expression: ast.expr | None) -> bool:
        expression = unwrap(expression)
        return ast_walk.is_call_to(expression, helper) or (
            isinstance(expression, ast.Name) and expression.id in known)

    return bool(returns) and all(is_pure(value) for value in returns)


def _bindings(node: ast.AST):
    """(name, value) for each name `node` binds; value None where it is not one
    expression (augmented assignment, unpacking, loop targets, ...)."""
    if isinstance(node, ast.Assign):
        for target in node.targets:
            simple = isinstance(target, ast.Name)
            for name in _target_names(target):
                yield name, node.value if simple else None
    elif isinstance(node, ast.AnnAssign) and node.value is not None:
        yield from ((name, node.value) for name in _target_names(node.target))
    elif isinstance(node, ast.NamedExpr):
        yield node.target.id, node.value
    elif isinstance(node, (ast.AugAssign, ast.For, ast.AsyncFor)):
        yield from ((name, None) for name in _target_names(node.target))
    elif isinstance(node, ast.withitem) and node.optional_vars is not None:
        yield from ((name, None) for name in _target_names(node.optional_vars))
    elif isinstance(node, ast.ExceptHandler) and node.name:
        yield node.name, None
    elif isinstance(node, (*_NAMED, ast.Import, ast.ImportFrom)):
        names = [node.name] if isinstance(node, _NAMED) else [
            (alias.asname or alias.name).split(".")[0] for alias in node.names]
        yield from ((name, None) for name in names)


def _target_names(target: ast.AST) -> list[str]:
    """The names an assignment target binds or stores into (`a[i]`, `a.x`: a)."""
    names, stack = [], [target]
    while stack:
        node = stack.pop()
        while isinstance(node, (ast.Subscript, ast.Attribute, ast.Starred)):
            node = node.value
        if isinstance(node, ast.Name):
            names.append(node.id)
        elif isinstance(node, (ast.Tuple, ast.List)):
            stack.extend(node.elts)
    return names
