"""Data flow inside the entry point: where the helper's value goes (issue 39).

The level reward's helper parts judge how main uses `aux` by data flow, not by the
shape of statements: a call's value is *used* when it reaches a value main returns
(or yields), directly or through the names it is stored in, and main is a *pass-
through* when every value it returns is aux's value unchanged. A dead statement
beside `return aux(x)` is no logic of main's own, and `_ = aux(x)` still drops the
result.

The analysis is flow-insensitive and conservative towards "used": a name is
tainted when any assignment to it takes a tainted value (augmented assignment,
unpacking, for/with targets, `:=`, an item or attribute store into it, or a
mutating call such as `xs.append(v)` or `heapq.heappush(h, v)`), and everything
assigned or returned inside an `if`/`while`/`for`/`match` whose condition is
tainted is tainted too (a helper used as a predicate decides what main returns).
Nested functions, classes and lambdas are their own scopes and are not followed.
What it cannot see: a branch whose tainted condition never holds in the tests
(docs/sandbox.md, what is not done).
"""

from __future__ import annotations

import ast
from typing import Iterable, Iterator

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_MUTATORS = frozenset({"append", "extend", "insert", "add", "update", "setdefault",
                       "appendleft", "extendleft", "put", "put_nowait", "push", "write",
                       "__setitem__", "intersection_update", "difference_update",
                       "symmetric_difference_update"})
# Functions that store a value into their first argument.
_STORE_INTO_FIRST = frozenset({"heappush", "heappushpop", "heapreplace", "insort",
                               "insort_left", "insort_right"})


def helper_calls(function: ast.AST, helper: str) -> list[ast.Call]:
    """Calls `helper(...)` in the function's own scope, in source order."""
    calls = [node for node in own_nodes(function) if is_call_to(node, helper)]
    return sorted(calls, key=lambda node: (node.lineno, node.col_offset))


def reaches_return(function: ast.FunctionDef | ast.AsyncFunctionDef,
                   sources: Iterable[ast.AST]) -> bool:
    """Whether a value of the expressions `sources` can reach a value the function
    returns or yields (data flow and tainted conditions; module docstring)."""
    flow = _Taint({id(node) for node in sources})
    while True:
        before = (len(flow.names), flow.returns)
        flow.block(function.body, False)
        if flow.returns or (len(flow.names), flow.returns) == before:
            return flow.returns


def passes_through(function: ast.FunctionDef | ast.AsyncFunctionDef, helper: str) -> bool:
    """Every value the function returns is `helper`'s value unchanged: `return
    aux(...)`, or a name bound only to such values (a thin wrapper). False when it
    returns nothing, yields, or returns anything else on some path."""
    nodes = list(own_nodes(function))
    if any(isinstance(node, (ast.Yield, ast.YieldFrom)) for node in nodes):
        return False
    returns = [node for node in nodes if isinstance(node, ast.Return)]
    bindings: dict[str, list[ast.expr | None]] = {}
    for node in nodes:
        for target, value in _bindings(node):
            bindings.setdefault(target, []).append(value)
    for argument in ast.walk(function.args):
        if isinstance(argument, ast.arg):
            bindings.setdefault(argument.arg, []).append(None)  # a parameter: not aux's

    def pure(expression: ast.expr | None, seen: frozenset[str]) -> bool:
        if isinstance(expression, ast.Await):
            return pure(expression.value, seen)
        if is_call_to(expression, helper):
            return True
        if isinstance(expression, ast.Name) and expression.id not in seen:
            values = bindings.get(expression.id, [])
            return bool(values) and all(pure(v, seen | {expression.id}) for v in values)
        return False

    return bool(returns) and all(pure(node.value, frozenset()) for node in returns)


def own_nodes(function: ast.AST) -> Iterator[ast.AST]:
    """Nodes of a function's body, not descending into nested functions, classes
    or lambdas (comprehensions are part of it)."""
    stack = list(ast.iter_child_nodes(function))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, _SCOPES):
            stack.extend(ast.iter_child_nodes(node))


def is_call_to(node: ast.AST | None, name: str) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name


def _bindings(node: ast.AST) -> Iterator[tuple[str, ast.expr | None]]:
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


def _target_names(target: ast.AST) -> list[str]:
    """The names an assignment target binds or stores into (`a[i]`, `a.x`: a)."""
    while isinstance(target, (ast.Subscript, ast.Attribute, ast.Starred)):
        target = target.value
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for element in target.elts for name in _target_names(element)]
    return []


class _Taint:
    """One pass of the flow-insensitive taint analysis (reaches_return iterates)."""

    def __init__(self, sources: set[int]):
        self.sources, self.names, self.returns = sources, set(), False

    def tainted(self, expression: ast.AST | None) -> bool:
        if expression is None:
            return False
        stack = [expression]
        while stack:
            node = stack.pop()
            if id(node) in self.sources or (isinstance(node, ast.Name) and node.id in self.names):
                return True
            if not isinstance(node, _SCOPES):
                stack.extend(ast.iter_child_nodes(node))
        return False

    def taint(self, target: ast.AST) -> None:
        self.names.update(_target_names(target))

    def block(self, statements: list[ast.stmt], controlled: bool) -> None:
        for statement in statements:
            self.statement(statement, controlled)

    def statement(self, node: ast.stmt, controlled: bool) -> None:
        if isinstance(node, _SCOPES):
            return
        self._expressions(node, controlled)
        if isinstance(node, ast.Return):
            self.returns |= controlled or self.tainted(node.value)
        elif isinstance(node, ast.Assign):
            if controlled or self.tainted(node.value):
                for target in node.targets:
                    self.taint(target)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            if controlled or self.tainted(node.value):
                self.taint(node.target)
        elif isinstance(node, (ast.If, ast.While)):
            inner = controlled or self.tainted(node.test)
            self.block(node.body, inner)
            self.block(node.orelse, inner)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            inner = controlled or self.tainted(node.iter)
            if inner:
                self.taint(node.target)
            self.block(node.body, inner)
            self.block(node.orelse, inner)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if item.optional_vars is not None and (
                        controlled or self.tainted(item.context_expr)):
                    self.taint(item.optional_vars)
            self.block(node.body, controlled)
        elif isinstance(node, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            self.block(node.body, controlled)
            for handler in node.handlers:
                self.block(handler.body, controlled)
            self.block(node.orelse, controlled)
            self.block(node.finalbody, controlled)
        elif isinstance(node, ast.Match):
            inner = controlled or self.tainted(node.subject)
            for case in node.cases:
                self.block(case.body, inner or self.tainted(case.guard))

    def _expressions(self, statement: ast.stmt, controlled: bool) -> None:
        """Within the statement's own expressions: yields (values main hands out),
        `:=` and stores through mutating calls."""
        for child in ast.iter_child_nodes(statement):
            if not isinstance(child, ast.expr):
                continue
            for node in _walk_expression(child):
                if isinstance(node, (ast.Yield, ast.YieldFrom)):
                    self.returns |= controlled or self.tainted(node.value)
                elif isinstance(node, ast.NamedExpr):
                    if controlled or self.tainted(node.value):
                        self.taint(node.target)
                elif isinstance(node, ast.Call) and (
                        controlled or any(self.tainted(a) for a in _arguments(node))):
                    self._store(node)

    def _store(self, call: ast.Call) -> None:
        function = call.func
        if isinstance(function, ast.Attribute) and function.attr in _MUTATORS:
            self.taint(function.value)
        name = function.attr if isinstance(function, ast.Attribute) else (
            function.id if isinstance(function, ast.Name) else "")
        if name in _STORE_INTO_FIRST and call.args:
            self.taint(call.args[0])


def _arguments(call: ast.Call) -> list[ast.expr]:
    return [*call.args, *(keyword.value for keyword in call.keywords)]


def _walk_expression(expression: ast.expr) -> Iterator[ast.AST]:
    stack: list[ast.AST] = [expression]
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, _SCOPES):
            stack.extend(ast.iter_child_nodes(node))
