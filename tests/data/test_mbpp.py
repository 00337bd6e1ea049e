"""MBPP full and sanitized from ../shared/data/mbpp: splits, fields, entry points."""

import ast
import json

import pytest

from mtrl.data import MBPP_SPLIT_RANGES, load_mbpp, mbpp_entry_point, mbpp_split_of
from mtrl.data.mbpp import missing_stdlib_imports


@pytest.fixture(scope="module")
def full(mbpp_full_tasks):
    return mbpp_full_tasks


@pytest.fixture(scope="module")
def sanitized(mbpp_sanitized_tasks):
    return mbpp_sanitized_tasks


def _number(task):
    return int(task.task_id.split("/")[1])


@pytest.mark.parametrize("variant, sizes", [
    ("full", {"prompt": 10, "test": 500, "validation": 90, "train": 374, "all": 974}),
    # The published sizes of the sanitized splits (test 257 is the usual benchmark).
    ("sanitized", {"prompt": 7, "test": 257, "validation": 43, "train": 120, "all": 427}),
])
def test_split_sizes_and_ranges(mbpp_dir, variant, sizes):
    for split, size in sizes.items():
        tasks = load_mbpp(mbpp_dir, variant, split)
        assert len(tasks) == size, (variant, split)
        numbers = [_number(t) for t in tasks]
        assert numbers == sorted(numbers)
        if split != "all":
            low, high = MBPP_SPLIT_RANGES[split]
            assert all(low <= n <= high for n in numbers)


def test_split_of_boundaries():
    assert [mbpp_split_of(n) for n in (1, 10, 11, 510, 511, 600, 601, 974)] == [
        "prompt", "prompt", "test", "test", "validation", "validation", "train", "train"]
    with pytest.raises(ValueError, match="outside"):
        mbpp_split_of(975)


def test_full_record_mapping(full, mbpp_dir):
    raw = json.loads((mbpp_dir / "mbpp.jsonl").read_text().splitlines()[0])
    task = full[0]
    assert task.task_id == "mbpp/1"
    assert task.entry_point == "min_cost"
    assert task.tests == tuple(raw["test_list"])
    assert task.prompt == (raw["text"] + "\nYour code should pass this test:\n"
                           + raw["test_list"][0])
    assert task.canonical_solution == raw["code"].replace("\r\n", "\n")
    assert "\r" not in task.canonical_solution
    assert task.setup == "" and task.test_code is None


def test_sanitized_record_mapping_and_setup(sanitized):
    by_id = {t.task_id: t for t in sanitized}
    task = by_id["mbpp_sanitized/2"]
    assert task.prompt.startswith(
        "Write a function to find the shared elements from the given two lists.\n")
    assert task.tests[0] == (
        "assert set(similar_elements((3, 4, 5, 6),(5, 7, 4, 10))) == set((4, 5))")
    assert by_id["mbpp_sanitized/82"].setup == "import math"
    # 13 tasks list test_imports; 596's tests use `sys` without importing it.
    assert sum(bool(t.setup) for t in sanitized) == 14
    assert by_id["mbpp_sanitized/596"].setup == "import sys"
    assert sum(len(t.tests) for t in sanitized) == 397 * 3 + 22 * 4 + 4 * 5 + 3 * 6 + 7


def test_full_set_setup_code_is_kept(full):
    task = {t.task_id: t for t in full}["mbpp/367"]
    assert task.setup.startswith("root = Node(1) \nroot.left = Node(2) \n")
    assert "\r" not in task.setup


def test_entry_point_is_a_top_level_function_of_the_reference(full, sanitized):
    for task in full + sanitized:
        defined = {n.name for n in ast.parse(task.canonical_solution).body
                   if isinstance(n, ast.FunctionDef)}
        assert task.entry_point in defined, task.task_id
        assert all(task.entry_point in test for test in task.tests), task.task_id


def test_entry_point_prefers_the_reference_over_builtins():
    # MBPP 126 names its function `sum`.
    tests = ["assert sum(10,15) == 6", "assert sum(100,150) == 93"]
    assert mbpp_entry_point(tests, "def sum(a, b):\n    return 0\n") == "sum"
    assert mbpp_entry_point(["assert math.isclose(area(2), 4.0)", "assert area(1) == 1"]) == "area"
    assert mbpp_entry_point(["assert set(f(1)) == set(g(2))", "assert f(3) == []"]) == "f"
    with pytest.raises(ValueError, match="no function called by every test"):
        mbpp_entry_point(["assert len([]) == 0"])
    with pytest.raises(ValueError, match="does not parse"):
        mbpp_entry_point(["assert f(1 =="])


def test_missing_stdlib_imports():
    tests = ["assert f(1) == sys.getsizeof(1)", "assert math.isclose(f(2), 2)",
             "assert [re for re in f(3)] == []", "assert f(json) == 1"]
    # `re` is bound by the comprehension, `json` is a local of the setup below.
    assert missing_stdlib_imports(tests, "import math as math\njson = 1") == ["import sys"]
    assert missing_stdlib_imports(tests, "") == ["import json", "import math", "import sys"]
    assert missing_stdlib_imports(["assert f(1) == 1"], "") == []


def test_flags_first_test_and_challenge_tests(mbpp_dir, full):
    plain = load_mbpp(mbpp_dir, "full", "prompt", show_first_test=False)
    assert plain[0].prompt == ("Write a function to find the minimum cost path to reach (m, n) "
                               "from (0, 0) for the given cost matrix cost[][] and a position "
                               "(m, n) in cost[][].")
    assert all(t.prompt.endswith("this test:\n" + t.tests[0].strip()) for t in full)
    assert not any("assert" in t.prompt for t in plain)
    with_challenge = {t.task_id: t for t in load_mbpp(mbpp_dir, "full",
                                                      include_challenge_tests=True)}
    extra = {tid: len(t.tests) - 3 for tid, t in with_challenge.items() if len(t.tests) > 3}
    assert sum(extra.values()) == 8 * 1 + 1 * 2 + 2 * 3
    with pytest.raises(ValueError, match="full MBPP set"):
        load_mbpp(mbpp_dir, "sanitized", include_challenge_tests=True)


def test_path_may_be_the_file(mbpp_dir, sanitized):
    assert load_mbpp(mbpp_dir / "sanitized-mbpp.json", "sanitized") == sanitized


def test_errors_name_the_path_and_what_was_expected(tmp_path, mbpp_dir):
    with pytest.raises(FileNotFoundError, match=r"sanitized-mbpp.json does not exist; "
                                                r"expected the sanitized MBPP set"):
        load_mbpp(tmp_path, "sanitized")
    with pytest.raises(ValueError, match="split must be one of"):
        load_mbpp(mbpp_dir, "full", "dev")
    with pytest.raises(ValueError, match="variant must be one of"):
        load_mbpp(mbpp_dir, "tiny")
    with pytest.raises(ValueError, match="needs the local folder"):
        load_mbpp(None)
