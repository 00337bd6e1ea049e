"""Static candidate calls of a test, sent to the candidate in one batch.

Each call into the candidate is a round trip between two processes; a HumanEval
`check` makes about ten, and on a loaded machine every wake-up costs. So at the
start of each test the judge sends, in one message, the calls the test is
certain to make first: calls to candidate names with literal arguments, in
evaluation order, found in the test's straight-line prefix (top-level statements
of an assert test, or of `check`'s body; the prefix ends at the first compound
statement). The candidate answers them in order; the judge then runs the test
exactly as written and takes each answer when the test makes that very call
(same name and same plain-data arguments), falling back to a live call
otherwise.

Only the second operand of `and`/`or`, the branches of `x if c else y`, later
links of a comparison chain and anything inside lambdas and comprehensions may
be skipped at run time, so calls there are never prefetched. A prefetched call
the test does not reach (an earlier assertion failed) is answered and ignored:
the verdict is already decided. Verdicts stay the judge's: a prefetched answer is
the same plain data a live call would have returned, as long as the candidate's
functions do not depend on hidden state changed by calls made out of order.
"""

from __future__ import annotations

import ast
from typing import Any

StaticCall = tuple[str, tuple, dict]

_STRAIGHT = (ast.Assert, ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Import,
             ast.ImportFrom, ast.Pass, ast.FunctionDef)  # a def runs no call of its body
_OPAQUE = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp,
           ast.Await, ast.Yield, ast.YieldFrom, ast.NamedExpr)


def _literal(node: ast.AST) -> tuple[bool, Any]:
    if isinstance(node, ast.Starred):
        return False, None
    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


def defined_names(tree: ast.AST) -> set[str]:
    """Names the test itself binds: never the candidate's."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return names


class _Collector:
    def __init__(self, resolve: dict[str, str] | None, excluded: set[str]):
        self.resolve = resolve or {}  # check's parameter -> entry point
        self.excluded = excluded
        self.calls: list[StaticCall] = []

    def visit(self, node: ast.AST) -> None:
        if isinstance(node, _OPAQUE):
            return
        if isinstance(node, ast.BoolOp):
            self.visit(node.values[0])
        elif isinstance(node, ast.IfExp):
            self.visit(node.test)
        elif isinstance(node, ast.Compare):
            self.visit(node.left)
            self.visit(node.comparators[0])
        elif isinstance(node, ast.Call):
            self.visit(node.func)
            for arg in node.args:
                self.visit(arg)
            for keyword in node.keywords:
                self.visit(keyword.value)
            self._maybe_add(node)
        else:
            for child in ast.iter_child_nodes(node):
                self.visit(child)

    def _maybe_add(self, node: ast.Call) -> None:
        if not isinstance(node.func, ast.Name):
            return
        name = node.func.id
        if name in self.resolve:
            name = self.resolve[name]
        elif name in self.excluded:
            return
        args = []
        for arg in node.args:
            ok, value = _literal(arg)
            if not ok:
                return
            args.append(value)
        kwargs = {}
        for keyword in node.keywords:
            ok, value = _literal(keyword.value)
            if keyword.arg is None or not ok:
                return
            kwargs[keyword.arg] = value
        self.calls.append((name, tuple(args), kwargs))

    def statements(self, body: list[ast.stmt]) -> None:
        for statement in body:
            if not isinstance(statement, _STRAIGHT):
                return
            if isinstance(statement, ast.Assert):
                self.visit(statement.test)  # the message runs only on failure
            elif isinstance(statement, (ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign)):
                if statement.value is not None:
                    self.visit(statement.value)


def static_calls(source: str, known_names: set[str], entry_point: str | None) -> list[StaticCall]:
    """The calls a test is certain to make first, with literal arguments, in order.

    known_names: names bound in the judge before the test runs (builtins, setup);
    calls to them are not candidate calls. With `entry_point`, `source` defines
    `check(candidate)` and calls through its parameter go to the entry point.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return []
    excluded = set(known_names) | defined_names(tree)
    if entry_point is None:
        collector = _Collector(None, excluded)
        collector.statements(tree.body)
        return collector.calls
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "check" and node.args.args:
            parameter = node.args.args[0].arg
            collector = _Collector({parameter: entry_point}, excluded - {entry_point})
            collector.statements(node.body)
            return collector.calls
    return []
