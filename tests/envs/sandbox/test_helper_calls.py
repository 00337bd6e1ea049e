"""Two agents: how often main called its helper is what the judge saw run.

The level-4 "main calls aux" bonus was judged from the source, so a call in dead code
counted. Main's calls of its helper now go through the judge, which relays each to
the helper's process on the helper's own socket and counts it per test; main never
holds that socket, so it cannot answer for the helper, and code that never ran counts
nothing.
"""

import pytest

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
    # load makes main's call a NameError, and counts nothing: only calls
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


# Main's threads call the helper at once; each gets its own answer
# (the proxy read one socket from whichever thread called: mixed-up answers).
FOUR_THREADS = ("import threading\ndef add(a, b):\n    out = [None] * 4\n"
                "    def work(i):\n        out[i] = aux(a + i, b)\n"
                "    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]\n"
                "    for thread in threads:\n        thread.start()\n"
                "    for thread in threads:\n        thread.join()\n    return out\n")
SLOW_HELPER = "import time\ndef aux(a, b):\n    time.sleep(0.02 * (a % 3))\n    return a + b\n"


def test_threads_calling_the_helper_at_once_get_their_own_answers(pool):
    tests = tuple(f"assert add({a}, {b}) == {[a + i + b for i in range(4)]}"
                  for a, b in ((2, 3), (-1, 4), (10, 5)))
    result = _run(pool, FOUR_THREADS, tests, helper=SLOW_HELPER)
    assert result.passed, result.tests
    assert [t.helper_calls for t in result.tests] == [4, 4, 4]


# What the level reward reads is what ran. A call that raised
# counts nothing; main's answers count as its own only when they differ from every
# value the helper returned during the call.
PICKY_HELPER = "def aux(a, b):\n    if a < 0:\n        raise ValueError(a)\n    return a + b\n"
CATCHES = ("def add(a, b):\n    try:\n        return aux(a, b)\n"
           "    except ValueError:\n        return a + b\n")


def test_only_calls_that_returned_count(pool):
    result = _run(pool, CATCHES, ("assert add(2, 3) == 5", "assert add(-1, 4) == 3"),
                  helper=PICKY_HELPER)
    assert result.passed, result.tests
    assert [t.helper_calls for t in result.tests] == [1, 0]


@pytest.mark.parametrize("main, derived", [
    ("def add(a, b):\n    return aux(a, b)\n", 0),
    ("def add(a, b):\n    y = 1\n    return aux(a, b) * y\n", 0),  # the same value: passed on
    ("def add(a, b):\n    return aux(a, 0) + b\n", 1),  # main adds b itself
    ("def add(a, b):\n    _ = aux(a, b)\n    return a + b\n", 0),  # equal to aux's anyway
])
def test_answers_of_mains_own_are_counted(pool, main, derived):
    result = _run(pool, main)
    assert result.passed, result.tests
    assert [t.derived_answers for t in result.tests] == [derived] * 3
    assert [t.helper_calls for t in result.tests] == [1] * 3
