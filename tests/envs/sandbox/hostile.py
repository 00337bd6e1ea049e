"""What the hostile-program tests (test_adversarial_*.py) share: the target function
and its tests, the limits and the planted secret of their pool (conftest.py's
hostile_pool), a ctypes prelude, the canary check that a pool still works, and the check that a
fixed batch of ordinary programs gets the same verdicts after a file's attacks as
before them (or as a fresh pool does)."""

from mtrl.envs.sandbox import Limits, Program

SECRET = "mtrl-fake-secret-7f3a9c"
TARGET = "def add(a, b):\n    return a + b\n"
ADD_TESTS = ("assert add(2, 3) == 5", "assert add(-1, 4) == 3", "assert add(10, 5) == 15")
LIMITS = Limits(wall_s_per_test=0.5, wall_s_total=5.0, cpu_s=2.0, memory_bytes=384 << 20,
                file_size_bytes=1 << 20, output_bytes=4096)
LIBC = "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"


def assert_pool_alive(pool):
    canary = pool.submit(Program(TARGET, ADD_TESTS)).result()
    assert canary.passed, canary


BASELINE = [
    Program(TARGET, ADD_TESTS),
    Program("def add(a, b):\n    return a * b\n", ADD_TESTS),
    Program("def add(a, b)\n    return a\n", ADD_TESTS),
    Program("def add(a, b):\n    return a + b + undefined\n", ADD_TESTS),
    Program("def add(a, b):\n    while True:\n        pass\n", ("assert add(1, 1) == 2",)),
]


def verdicts(results):
    return [(r.passed, r.syntax_error, [(t.status, t.error_type) for t in r.tests])
            for r in results]


def same_verdicts_after_the_attacks(hostile_pool, baseline):
    """Bound as the last test of the verdicts file: no attack changed a verdict or took
    a slot down."""
    assert verdicts(hostile_pool.run_batch(BASELINE)) == baseline
    assert baseline[0][0] and not any(v[0] for v in baseline[1:])
    assert hostile_pool.replaced_slots == 0


def verdicts_match_a_fresh_pool(hostile_pool):
    """Bound as the last test of the other attack files: after their attacks the pool
    judges the BASELINE batch as a pool that saw none does (compared at the end, so
    no extra work runs before attacks whose tests count processes)."""
    from mtrl.envs.sandbox import SandboxPool
    with SandboxPool(num_workers=1, limits=LIMITS) as fresh:
        expected = verdicts(fresh.run_batch(BASELINE))
    assert verdicts(hostile_pool.run_batch(BASELINE)) == expected
    assert expected[0][0] and not any(v[0] for v in expected[1:])
    assert hostile_pool.replaced_slots == 0
