"""No code of a program runs before main's set-up is done and said to be done.

A two-agent program's helper was forked during main's set-up and loaded its code at
once, while main was still installing its limits and filter: a helper that sent
main SIGINT, or lowered main's RLIMIT_NPROC with prlimit, failed that set-up, and
the program got an uncached "sandbox could not set up" verdict (3 of 3 and 2 of 3
runs). The helper now confines itself and waits on a gate that main opens only
after it has written lifecycle.SET_UP to its slot: whatever the helper then does to
main is the program's own doing, judged and cached like any other fault.
"""

import pytest

from mtrl.envs.sandbox import Limits, Program, SandboxPool

LIMITS = Limits(wall_s_per_test=2.0, wall_s_total=10.0, cpu_s=4.0, memory_bytes=384 << 20)
MAIN = "def add(a, b):\n    return aux(a, b)\n"
AUX = "def aux(a, b):\n    return a + b\n"
HOSTILE_HELPERS = {
    "sigint": ("import os, signal\nfor _ in range(20000):\n"
               "    os.kill(os.getppid(), signal.SIGINT)\n"),
    "prlimit": ("import os, resource\nfor _ in range(5000):\n"
                "    resource.prlimit(os.getppid(), resource.RLIMIT_NPROC, (1, 1))\n"),
}
# What main's set-up had done when the helper's code began: its filter (Seccomp:
# 2) and no new privileges, read from main's /proc status.
OBSERVER = ("import os\nwith open(f'/proc/{os.getppid()}/status') as handle:\n"
            "    FIELDS = dict(line.split(':', 1) for line in handle if ':' in line)\n"
            "SEEN = (FIELDS['Seccomp'].strip(), FIELDS['NoNewPrivs'].strip())\n"
            "def aux():\n    return SEEN\n")


@pytest.fixture(scope="module")
def gate_pool(tmp_path_factory):
    cache_path = tmp_path_factory.mktemp("verdicts") / "v.sqlite"
    with SandboxPool(num_workers=1, limits=LIMITS, cache_path=cache_path) as pool:
        yield pool


@pytest.mark.parametrize("name", sorted(HOSTILE_HELPERS))
def test_a_helper_cannot_fail_mains_set_up(gate_pool, name):
    for attempt in range(3):  # the old race lost most runs, not every one
        program = Program(MAIN, ("assert add(2, 3) == 5",), helper_names=("aux",),
                          helper_code=f"# {attempt}\n" + HOSTILE_HELPERS[name] + AUX)
        result = gate_pool.submit(program).result()
        assert not result.error, result
        assert all(t.error_type != "SandboxError" for t in result.tests), result.tests
        again = gate_pool.submit(program).result()
        assert again.cached and again.tests == result.tests  # the program's own verdict


def test_the_helpers_code_starts_after_mains_set_up(gate_pool):
    result = gate_pool.submit(Program("def seen():\n    return list(aux())\n",
                                      ("assert seen() == ['2', '1']",),
                                      helper_code=OBSERVER, helper_names=("aux",))).result()
    assert result.passed, result.tests


def test_honest_helpers_with_work_at_load_still_pass(gate_pool):
    # The honest twin: a helper that computes at load (recursion) and a main whose
    # threads call it at once.
    helper = ("def _fib(n):\n    return n if n < 2 else _fib(n - 1) + _fib(n - 2)\n"
              "TABLE = [_fib(n) for n in range(20)]\n"
              "def aux(n):\n    return TABLE[n]\n")
    main = ("import threading\ndef fibs(ns):\n    out = [None] * len(ns)\n"
            "    def work(i):\n        out[i] = aux(ns[i])\n"
            "    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(ns))]\n"
            "    for thread in threads:\n        thread.start()\n"
            "    for thread in threads:\n        thread.join()\n    return out\n")
    result = gate_pool.submit(Program(main, ("assert fibs([5, 10, 19]) == [5, 55, 4181]",),
                                      helper_code=helper, helper_names=("aux",))).result()
    assert result.passed and result.helper_calls == 3, result
