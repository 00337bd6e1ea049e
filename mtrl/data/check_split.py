"""Splitting HumanEval-style `def check(candidate): ...` into standalone asserts.

HumanEval (Chen et al. 2021, "Evaluating Large Language Models Trained on Code")
judges a program with one function, `check(candidate)`, whose body is mostly
`assert candidate(...) == ...` lines. Per-test feedback and pass-rate rewards need
those asserts one by one, calling the entry point by name. The split is lossy by
design: only top-level `assert` statements of `check`'s body are kept, and only when
they are self-contained (see `split_check_function`). Exact benchmark verdicts keep
using the original test code.
"""

from __future__ import annotations

import ast
import builtins
import copy
import dataclasses
from typing import Iterable

_BUILTIN_NAMES = frozenset(dir(builtins))


@dataclasses.dataclass(frozen=True)
class CheckSplit:
    """The asserts of one `check` function.

    tests: self-contained asserts calling the entry point, `candidate` renamed to
      it, in source order, with their original formatting.
    dropped: source of every statement of `check`'s body that tests the candidate
      but could not be kept (asserts inside loops, asserts reading local variables
      or module-level helpers): the test content the split loses.
    trivial: top-level asserts that never mention the candidate (HumanEval's
      `assert True, "This prints if this assert fails ..."`); they test nothing.
    """

    tests: tuple[str, ...]
    dropped: tuple[str, ...] = ()
    trivial: tuple[str, ...] = ()

    def __post_init__(self):
        for name in ("tests", "dropped", "trivial"):
            if not isinstance(getattr(self, name), tuple):
                raise TypeError(f"CheckSplit.{name} must be a tuple of strings")


def split_check_function(test_code: str, entry_point: str, *,
                         available_names: Iterable[str] = (),
                         check_name: str = "check") -> CheckSplit:
    """Extracts the standalone asserts of `check(candidate)` in `test_code`.

    A top-level `assert` of `check`'s body is kept when
      1. it mentions the candidate parameter (or the entry point itself), and
      2. every other name it reads is a builtin or in `available_names` (names the
         setup code binds, e.g. prompt imports), and is not rebound by the test
         module or by `check` itself (a local `input = ...` shadows the builtin).
    Names bound inside the assert (comprehension variables, lambda arguments) count
    as its own. The candidate parameter is renamed to `entry_point` in the source
    text; the result is checked against an AST rename and falls back to
    `ast.unparse` if the two ever disagree.

    Raises ValueError when `test_code` does not parse or defines no `check_name`
    function with at least one positional parameter.
    """
    if not entry_point.isidentifier():
        raise ValueError(f"entry_point must be an identifier, got {entry_point!r}")
    try:
        module = ast.parse(test_code)
    except SyntaxError as error:
        raise ValueError(f"test code does not parse: {error}") from None
    checks = [node for node in module.body
              if isinstance(node, ast.FunctionDef) and node.name == check_name]
    if not checks:
        raise ValueError(f"test code defines no top-level function {check_name!r}")
    check = checks[-1]  # the last definition is the one a caller would run
    if not check.args.args:
        raise ValueError(f"{check_name}() must take the candidate as its first parameter")
    parameter = check.args.args[0].arg

    shadowed = _bound_names(module.body) | _bound_names(check.body)
    allowed = (_BUILTIN_NAMES | set(available_names)) - shadowed
    allowed |= {parameter, entry_point}

    tests: list[str] = []
    dropped: list[str] = []
    trivial: list[str] = []
    for statement in check.body:
        source = ast.get_source_segment(test_code, statement) or ast.unparse(statement)
        if isinstance(statement, ast.Assert):
            free = _free_names(statement)
            if not free & {parameter, entry_point}:
                trivial.append(source)
            elif free <= allowed:
                tests.append(_renamed_source(test_code, statement, parameter, entry_point))
            else:
                dropped.append(source)
        elif any(isinstance(node, ast.Assert) for node in ast.walk(statement)):
            dropped.append(source)
    return CheckSplit(tests=tuple(tests), dropped=tuple(dropped), trivial=tuple(trivial))


def _bound_names(statements: list[ast.stmt]) -> set[str]:
    """Names a block binds anywhere (assignments, loops, imports, defs, with, except)."""
    bound: set[str] = set()
    for statement in statements:
        for node in ast.walk(statement):
            if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                bound.add(node.id)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bound.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    bound.add((alias.asname or alias.name).split(".")[0])
            elif isinstance(node, ast.ExceptHandler) and node.name:
                bound.add(node.name)
    return bound


def _free_names(statement: ast.stmt) -> set[str]:
    """Names read by `statement` that it does not bind itself."""
    loaded = {node.id for node in ast.walk(statement)
              if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}
    own = {node.id for node in ast.walk(statement)
           if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)}
    own |= {node.arg for node in ast.walk(statement) if isinstance(node, ast.arg)}
    return loaded - own


def _renamed_source(source: str, statement: ast.stmt, old: str, new: str) -> str:
    """The statement's source text with every `Name` `old` replaced by `new`.

    Edits the original text (keeping quotes, spacing and line breaks) at the AST's
    positions. Positions are UTF-8 byte offsets, so the edit works on bytes.
    """
    segment = ast.get_source_segment(source, statement)
    renamed_tree = _rename_tree(statement, old, new)
    if segment is None:
        return ast.unparse(renamed_tree)
    lines = [line.encode("utf-8") for line in segment.split("\n")]
    targets = sorted(((node.lineno, node.col_offset, node.end_col_offset)
                      for node in ast.walk(statement)
                      if isinstance(node, ast.Name) and node.id == old), reverse=True)
    for lineno, start, end in targets:
        row = lineno - statement.lineno
        shift = statement.col_offset if row == 0 else 0
        line = lines[row]
        lines[row] = line[:start - shift] + new.encode("utf-8") + line[end - shift:]
    edited = "\n".join(line.decode("utf-8") for line in lines)
    if _same_tree(edited, renamed_tree):
        return edited
    return ast.unparse(renamed_tree)


def _rename_tree(statement: ast.stmt, old: str, new: str) -> ast.stmt:
    renamed = copy.deepcopy(statement)
    for node in ast.walk(renamed):
        if isinstance(node, ast.Name) and node.id == old:
            node.id = new
    return renamed


def _same_tree(text: str, statement: ast.stmt) -> bool:
    try:
        parsed = ast.parse(text).body
    except SyntaxError:
        return False
    return len(parsed) == 1 and ast.dump(parsed[0]) == ast.dump(statement)
