"""Two agents: how often main called its helper is what the judge saw run (issue 25,
item 9).

The level-4 "main calls aux" bonus was judged from the source, so a call in dead code
counted. Main's calls of its helper now go through the judge, which relays each to
the helper's process on the helper's own socket and counts it per test; main never
holds that socket, so it cannot answer for the helper, and code that never ran counts
nothing.
"""

from mtrl.envs.sandbox import Program
from tests.envs.sandbox.hostile import ADD_TESTS

HELPER = "def aux(a, b):\n    return a + b\n"


def _run(pool, main, tests=ADD_TESTS, helper=HELPER):
    return pool.submit(Program(main, tests, helper_code=helper, helper_names=("aux",))).result()


def test_calls_that_ran_are_counted_per_test(pool):
    result = _run(pool, "def add(a, b):\n    return aux(a, b) + aux(0, 0)\n")
    assert result.passed, result
    assert [t.helper_calls for t in result.tests] == [2, 2, 2] and result.helper_calls == 6


def test_a_call_in_dead_code_counts_nothing(pool):
    main = "def add(a, b):\n    if a is None:\n        return aux(a, b)\n    return a + b\n"
    result = _run(pool, main)
    assert result.passed and result.helper_calls == 0, result


def test_top_level_calls_and_helper_failures(pool):
    # A call while main loads is relayed too (not a test's); a helper that does not
    # load makes main's call a NameError, and (issue 39) counts nothing: only calls
    # that returned a value count.
    loaded = _run(pool, "BASE = aux(0, 0)\ndef add(a, b):\n    return aux(a, b) + BASE\n")
    assert loaded.passed and loaded.helper_calls == 3, loaded
    broken = _run(pool, "def add(a, b):\n    return aux(a, b)\n", helper="def aux(a, b)\n")
    assert [t.error_type for t in broken.tests] == ["NameError"] * 3, broken.tests
    assert broken.helper_calls == 0


def test_main_cannot_answer_for_its_helper(pool):
    # Main's only line is its own socket to the judge; the helper's socket was
    # closed in main before its code ran.
    main = ("import os\ndef add(a, b):\n    open_sockets = []\n"
            "    for fd in range(3, 64):\n        try:\n            os.fstat(fd)\n"
            "            open_sockets.append(fd)\n        except OSError:\n            pass\n"
            "    return aux(a, b) if open_sockets == [3] else -1\n")
    result = _run(pool, main)
    assert result.passed and result.helper_calls == 3, result
