"""MBPP, full and sanitized, as `CodeTask`s read from local files.

MBPP: Austin et al. 2021, "Program Synthesis with Large Language Models". The full
set (mbpp.jsonl, 974 tasks) and the hand-verified sanitized subset
(sanitized-mbpp.json, 427 tasks) are read from a local folder; the project never
downloads or bundles them.

Standard splits by task_id (the sanitized subset inherits them):
  prompt 1-10 (few-shot examples), test 11-510, validation 511-600, train 601-974.

Mapping to CodeTask:
  task_id     = "mbpp/<id>" (full) or "mbpp_sanitized/<id>" (the two sets' tests
                differ for the same id, so their records must not be confused)
  prompt      = the description (`text` in full, `prompt` in sanitized) and, when
                `show_first_test` (default True), the first test as an example of
                the signature, as standard MBPP prompting does. That test then
                appears in the prompt; it is still one of `tests`.
  entry_point = the function the tests call, parsed from test_list with `ast`
  tests       = test_list (+ challenge_test_list with `include_challenge_tests`,
                full set only)
  setup       = test_imports + test_setup_code, joined by newlines, preceded by
                `import <module>` for each standard-library module the tests read
                but the setup does not import (task 596's tests call
                `sys.getsizeof`: MBPP's own harness ran tests in the candidate's
                namespace, so they leaned on the reference code's imports; a judge
                that keeps tests apart from the candidate needs them in setup)
  canonical_solution = the reference `code` (CRLF normalized to LF)

Caveat: in two full-set tasks (367, 927) test_setup_code builds trees from a `Node`
class that the reference code defines, so that setup only works after the
candidate; neither task is in the sanitized set.
"""

from __future__ import annotations

import ast
import builtins
import os
import sys
from typing import Any, Literal

from mtrl.config.fields import check_choice
from mtrl.data.files import (PathLike, normalize_newlines, read_json_array, read_jsonl,
                             require_fields, resolve_in_folder)
from mtrl.envs.code.task import CodeTask

MbppVariant = Literal["full", "sanitized"]
MBPP_VARIANTS: tuple[str, ...] = ("full", "sanitized")
MBPP_FILE_NAMES = {"full": "mbpp.jsonl", "sanitized": "sanitized-mbpp.json"}
MBPP_TASK_PREFIX = {"full": "mbpp", "sanitized": "mbpp_sanitized"}

# Inclusive task_id ranges of the standard splits (Austin et al. 2021, section 2.1).
MBPP_SPLIT_RANGES: dict[str, tuple[int, int]] = {
    "prompt": (1, 10),
    "test": (11, 510),
    "validation": (511, 600),
    "train": (601, 974),
}
MBPP_SPLITS: tuple[str, ...] = (*MBPP_SPLIT_RANGES, "all")

FIRST_TEST_HEADER = "Your code should pass this test:"

_BUILTIN_NAMES = frozenset(dir(builtins))


def mbpp_split_of(task_id: int) -> str:
    """The standard split holding an MBPP task_id; ValueError outside 1-974."""
    for split, (low, high) in MBPP_SPLIT_RANGES.items():
        if low <= task_id <= high:
            return split
    raise ValueError(f"MBPP task_id {task_id} is outside the standard splits (1-974)")


def mbpp_entry_point(test_list: list[str] | tuple[str, ...], reference_code: str = "") -> str:
    """The name of the function MBPP's tests call.

    Collects, per test, the plain names called (`f(...)`, not `m.f(...)`) in source
    order. The entry point is the first name called by every test that the
    reference code defines at top level (this handles task 126, whose function is
    named `sum`); without such a name, the first non-builtin name called by every
    test. Raises ValueError when no name qualifies or a test does not parse.
    """
    if not test_list:
        raise ValueError("mbpp_entry_point needs at least one test")
    called_per_test: list[list[str]] = []
    for test in test_list:
        try:
            tree = ast.parse(test)
        except SyntaxError as error:
            raise ValueError(f"test does not parse ({error}): {test!r}") from None
        calls = sorted((node.func.lineno, node.func.col_offset, node.func.id)
                       for node in ast.walk(tree)
                       if isinstance(node, ast.Call) and isinstance(node.func, ast.Name))
        called_per_test.append([name for _, _, name in calls])
    common = set(called_per_test[0]).intersection(*map(set, called_per_test[1:]))
    ordered_common = [name for name in called_per_test[0] if name in common]
    defined = _top_level_definitions(reference_code)
    for name in ordered_common:
        if name in defined:
            return name
    for name in ordered_common:
        if name not in _BUILTIN_NAMES:
            return name
    raise ValueError(f"no function called by every test; tests: {list(test_list)}")


def _top_level_definitions(code: str) -> set[str]:
    try:
        module = ast.parse(code)
    except SyntaxError:
        return set()
    return {node.name for node in module.body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}


def missing_stdlib_imports(tests: list[str] | tuple[str, ...], setup: str) -> list[str]:
    """`import m` lines for standard-library modules the tests read but setup lacks.

    A name counts when the tests load it, it is a top-level stdlib module name
    (sys.stdlib_module_names) and neither the setup nor the test itself binds it.
    """
    bound: set[str] = set()
    try:
        setup_tree = ast.parse(setup)
    except SyntaxError:
        setup_tree = ast.Module(body=[], type_ignores=[])
    for node in ast.walk(setup_tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            bound.add(node.name)
    needed: list[str] = []
    for test in tests:
        tree = ast.parse(test)
        own = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
               and isinstance(n.ctx, ast.Store)}
        for node in ast.walk(tree):
            if (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
                    and node.id in sys.stdlib_module_names and node.id not in bound
                    and node.id not in own and node.id not in needed):
                needed.append(node.id)
    return [f"import {name}" for name in sorted(needed)]


def mbpp_prompt(description: str, first_test: str | None) -> str:
    """The task description, followed by the first test when one is given."""
    description = normalize_newlines(description).strip()
    if first_test is None:
        return description
    return f"{description}\n{FIRST_TEST_HEADER}\n{first_test.strip()}"


def mbpp_record_to_task(record: dict[str, Any], variant: MbppVariant, *,
                        show_first_test: bool = True,
                        include_challenge_tests: bool = False,
                        where: str = "record") -> CodeTask:
    """Builds the CodeTask for one MBPP record (see the module docstring)."""
    check_choice("variant", variant, MBPP_VARIANTS)
    description_field = "text" if variant == "full" else "prompt"
    require_fields(record, ("task_id", description_field, "code", "test_list"), where)
    if include_challenge_tests and variant != "full":
        raise ValueError("challenge_test_list exists only in the full MBPP set")
    tests = [normalize_newlines(test) for test in record["test_list"]]
    if include_challenge_tests:
        tests += [normalize_newlines(test) for test in record.get("challenge_test_list", [])]
    if not tests:
        raise ValueError(f"{where}: MBPP task {record['task_id']} has no tests")
    code = normalize_newlines(record["code"])
    setup_parts = list(record.get("test_imports") or [])
    setup_parts.append(record.get("test_setup_code") or "")
    setup = "\n".join(normalize_newlines(part).strip("\n")
                      for part in setup_parts if part.strip())
    try:
        entry_point = mbpp_entry_point(tests, code)
        setup = "\n".join([*missing_stdlib_imports(tests, setup), setup]).strip("\n")
    except (ValueError, SyntaxError) as error:
        raise ValueError(f"{where} (task {record['task_id']}): {error}") from None
    return CodeTask(
        task_id=f"{MBPP_TASK_PREFIX[variant]}/{int(record['task_id'])}",
        prompt=mbpp_prompt(record[description_field], tests[0] if show_first_test else None),
        entry_point=entry_point,
        tests=tuple(tests),
        setup=setup,
        canonical_solution=code,
    )


def load_mbpp(path: PathLike, variant: MbppVariant = "full", split: str = "all", *,
              show_first_test: bool = True,
              include_challenge_tests: bool = False) -> list[CodeTask]:
    """MBPP tasks of one standard split, ordered by task_id.

    path: the folder holding mbpp.jsonl / sanitized-mbpp.json, or the file itself.
    variant: "full" (974 tasks) or "sanitized" (427 tasks).
    split: "prompt", "test", "validation", "train" or "all".
    show_first_test: append the first test to the prompt (standard MBPP prompting).
    include_challenge_tests: add challenge_test_list to the tests (full set only).
    """
    check_choice("variant", variant, MBPP_VARIANTS)
    check_choice("split", split, MBPP_SPLITS)
    if path is None:
        raise ValueError("load_mbpp needs the local folder of the MBPP files "
                         "(e.g. ../shared/data/mbpp)")
    what = (f"the {variant} MBPP set ({MBPP_FILE_NAMES[variant]}), or a folder holding it")
    file = resolve_in_folder(path, MBPP_FILE_NAMES[variant], what)
    records = list(read_jsonl(file, what)) if variant == "full" else read_json_array(file, what)
    tasks: list[tuple[int, CodeTask]] = []
    for index, record in enumerate(records):
        where = f"{os.fspath(file)} record {index}"
        require_fields(record, ("task_id",), where)
        task_id = int(record["task_id"])
        if split != "all" and mbpp_split_of(task_id) != split:
            continue
        tasks.append((task_id, mbpp_record_to_task(
            record, variant, show_first_test=show_first_test,
            include_challenge_tests=include_challenge_tests, where=where)))
    tasks.sort(key=lambda pair: pair[0])
    ids = [task_id for task_id, _ in tasks]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{file}: duplicate MBPP task_ids")
    return [task for _, task in tasks]
