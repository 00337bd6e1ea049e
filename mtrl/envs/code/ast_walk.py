"""Walking a candidate's AST by scope, under a work budget (the helper analysis:
dataflow.py, helper_flow.py, rebinding.py).

A scope is a module, a def, a class or a lambda. Its own code is its body without
the bodies of the scopes nested in it; the parts of a nested scope evaluated where
it is defined (decorators, defaults, bases, annotations) belong to the outer one.
Every walk here is iterative (no recursion on hostile nesting) and may charge a
`Budget`, whose limit caps the analysis's total time.
"""

from __future__ import annotations

import ast
from typing import Iterator

SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
MUTATORS = frozenset({"append", "extend", "insert", "add", "update", "setdefault",
                      "appendleft", "extendleft", "put", "put_nowait", "push", "write",
                      "__setitem__", "intersection_update", "difference_update",
                      "symmetric_difference_update"})
# Functions that store a value into their first argument.
STORE_INTO_FIRST = frozenset({"heappush", "heappushpop", "heapreplace", "insort",
                              "insort_left", "insort_right"})


class BudgetExceeded(Exception):
    """The analysis used up its work budget (the caller vouches for nothing)."""


class Budget:
    """A hard cap on analysis work, in units of AST nodes visited and name entries
    copied or joined: total time is at most a constant times `limit`."""

    def __init__(self, limit: int):
        if limit <= 0:
            raise ValueError(f"Budget limit must be positive, got {limit}")
        self.limit, self.used = limit, 0

    def spend(self, units: int = 1) -> None:
        self.used += units
        if self.used > self.limit:
            raise BudgetExceeded(f"analysis past its budget of {self.limit} units")


def outer_parts(node: ast.AST) -> list[ast.AST]:
    """The parts of a def, class or lambda evaluated where it is defined (decorators,
    defaults, bases and annotations), not in its own scope."""
    parts: list[ast.AST] = list(getattr(node, "decorator_list", []))
    if isinstance(node, ast.ClassDef):
        parts += [*node.bases, *(keyword.value for keyword in node.keywords)]
    else:
        arguments = node.args
        parts += [*arguments.defaults, *(d for d in arguments.kw_defaults if d is not None)]
        if not isinstance(node, ast.Lambda):
            every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                     *(a for a in (arguments.vararg, arguments.kwarg) if a is not None)]
            parts += [a.annotation for a in every if a.annotation is not None]
            if node.returns is not None:
                parts.append(node.returns)
    return parts


def own_body(scope: ast.AST) -> list[ast.AST]:
    """The roots of a scope's own code: a def's or class's body, a lambda's body
    expression, a module's statements."""
    body = scope.body
    return list(body) if isinstance(body, list) else [body]


def own_nodes(scope: ast.AST, budget: Budget | None = None) -> Iterator[ast.AST]:
    """Nodes of a scope's own code: not the bodies of nested functions, classes or
    lambdas (those nodes themselves, with their decorators, defaults and bases, are
    part of it; comprehensions are part of it)."""
    stack = own_body(scope)
    while stack:
        node = stack.pop()
        if budget is not None:
            budget.spend()
        yield node
        if isinstance(node, SCOPES):
            stack.extend(outer_parts(node))
        else:
            stack.extend(ast.iter_child_nodes(node))


def walk_expression(expression: ast.AST, budget: Budget) -> Iterator[ast.AST]:
    """An expression's nodes, not entering lambdas' bodies."""
    stack = [expression]
    while stack:
        node = stack.pop()
        budget.spend()
        yield node
        if isinstance(node, SCOPES):
            stack.extend(outer_parts(node))
        else:
            stack.extend(ast.iter_child_nodes(node))


def walk_bodies(scope: ast.AST, budget: Budget) -> Iterator[ast.AST]:
    """Every node inside a scope's body, nested scopes included."""
    stack = own_body(scope)
    while stack:
        node = stack.pop()
        budget.spend()
        yield node
        stack.extend(ast.iter_child_nodes(node))


def assigned_names(bodies: list[list[ast.stmt]], budget: Budget) -> set[str]:
    """Names the statements bind or store into, in this scope."""
    names: set[str] = set()
    for body in bodies:
        for statement in body:
            for node in walk_expression(statement, budget) if not isinstance(statement, SCOPES) else [
                    statement]:
                if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                    names.add(node.id)
                elif isinstance(node, (ast.Subscript, ast.Attribute)) and isinstance(
                        node.ctx, ast.Store):
                    base = node.value
                    while isinstance(base, (ast.Subscript, ast.Attribute)):
                        base = base.value
                    if isinstance(base, ast.Name):
                        names.add(base.id)
                elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    names.add(node.name)
                elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
                        node.func.attr in MUTATORS and isinstance(node.func.value, ast.Name)):
                    names.add(node.func.value.id)
    return names


def stores_into(call: ast.Call) -> bool:
    function = call.func
    return (isinstance(function, ast.Attribute) and function.attr in MUTATORS) or (
        (function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", ""))
        in STORE_INTO_FIRST)


def is_call_to(node: ast.AST | None, name: str) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name
