"""Known-good and known-bad programs through the real sandbox.

Every HumanEval canonical solution passes its original `check` (HumanEval mode), its
split asserts and the environment's program (asserts, then the full `check`); all
427 sanitized-MBPP references pass their tests with their setup. These run under the
default `Limits()`, the limits training rewards use; the references listed in
KNOWN_SLOW may time out there and are checked for correctness under PATIENT_LIMITS.
Deliberately wrong programs (perturbed return values, `return None`, hand-written
mistakes and cheats, redefined prompt helpers) fail.
"""

import warnings

import pytest

from mtrl.envs.code.env import task_program
from mtrl.envs.code.task import CodeTask
from mtrl.envs.sandbox import Limits, SandboxPool
from mtrl.envs.sandbox.types import Program

# References that legitimately need more than the default Limits().wall_s_per_test
# (3 s) on a 2-core machine, with what was measured. Under the default limits they
# may pass or time out (nothing else); either way they must pass under PATIENT_LIMITS.
KNOWN_SLOW = {
    "mbpp_sanitized/123": "amicable_numbers_sum(9999) is quadratic in the limit: 2.4 s of "
                          "CPU in plain Python at load 2 on 2 cores; in the sandbox it "
                          "timed out at 3.0 s (and took 2-8 s of CPU on a busier machine)",
}
PATIENT_LIMITS = Limits(wall_s_per_test=30.0, wall_s_total=60.0, cpu_s=30.0)


# Appended to a correct program: rebinds the entry point to a wrapper whose answer
# differs from the correct one for every plain type (bool flips, numbers move by 1,
# containers and strings grow), so each test comparing the answer must fail.
_PERTURB = '''

def _mtrl_wrong(value):
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return value + "?"
    if isinstance(value, list):
        return [*value, None]
    if isinstance(value, tuple):
        return (*value, None)
    if isinstance(value, (set, frozenset)):
        return {*value, None}
    if isinstance(value, dict):
        return {**value, None: None}
    return 0 if value is None else None


_mtrl_original = {name}


def {name}(*args, **kwargs):
    return _mtrl_wrong(_mtrl_original(*args, **kwargs))
'''

_RETURN_NONE = '''

def {name}(*args, **kwargs):
    return None
'''


def humaneval_program(task: CodeTask, code: str) -> Program:
    """The exact benchmark verdict: the original test code in HumanEval mode."""
    return Program(code=code, tests=(task.test_code,), setup=task.setup,
                   entry_point=task.entry_point)


def asserts_program(task: CodeTask, code: str) -> Program:
    return Program(code=code, tests=task.tests, setup=task.setup,
                   candidate_names=(task.entry_point,))


def _describe(task_ids, results) -> str:
    lines = []
    for task_id, result in zip(task_ids, results):
        failing = [t for t in result.tests if t.status != "passed"][:2]
        lines.append(f"{task_id}: error={result.error!r} syntax={result.syntax_error} "
                     + "; ".join(f"{t.status} {t.error_type}: {t.message[:120]}"
                                 f" [{t.source[:80]!r}]" for t in failing))
    return "\n".join(lines)


@pytest.fixture(scope="module")
def pool():
    """Default limits and concurrency: what training rewards run under."""
    with SandboxPool() as sandbox:
        yield sandbox


@pytest.fixture(scope="module")
def patient_pool():
    with SandboxPool(limits=PATIENT_LIMITS) as sandbox:
        yield sandbox


@pytest.fixture(scope="module")
def humaneval(humaneval_tasks):
    return humaneval_tasks


@pytest.fixture(scope="module")
def sanitized(mbpp_sanitized_tasks):
    return mbpp_sanitized_tasks


def references_pass_under_training_limits(pool, patient_pool, tasks, make) -> list:
    """Runs every reference under the default limits; returns the results.

    Everything must pass there except KNOWN_SLOW references, which may only time out
    (reported as a warning) and must then pass under PATIENT_LIMITS.
    """
    results = pool.run_batch([make(t, t.canonical_solution) for t in tasks])
    timed_out, failed = [], []
    for task, result in zip(tasks, results):
        if result.passed:
            continue
        only_timeouts = all(t.status in ("passed", "timeout") for t in result.tests)
        if task.task_id in KNOWN_SLOW and only_timeouts:
            timed_out.append(task)
        else:
            failed.append((task.task_id, result))
    assert not failed, "failing under the default Limits():\n" + _describe(*zip(*failed))
    if timed_out:
        warnings.warn("known-slow references timed out under the default Limits(): "
                      + "; ".join(f"{t.task_id} ({KNOWN_SLOW[t.task_id]})" for t in timed_out))
        patient = patient_pool.run_batch([make(t, t.canonical_solution) for t in timed_out])
        slow_failed = [(t.task_id, r) for t, r in zip(timed_out, patient) if not r.passed]
        assert not slow_failed, _describe(*zip(*slow_failed))
    return results


def test_known_slow_references_exist(humaneval, sanitized):
    assert set(KNOWN_SLOW) <= {t.task_id for t in humaneval + sanitized}


def test_all_164_humaneval_canonical_solutions_pass_check(pool, patient_pool, humaneval):
    assert len(humaneval) == 164
    results = references_pass_under_training_limits(pool, patient_pool, humaneval,
                                                    humaneval_program)
    assert all(len(r.tests) == 1 for r in results)  # one `check` call per program


def test_humaneval_canonical_solutions_pass_their_split_asserts(pool, patient_pool, humaneval):
    with_tests = [t for t in humaneval if t.tests]
    assert len(with_tests) == 161  # 32, 38 and 50 keep no standalone assert
    results = references_pass_under_training_limits(pool, patient_pool, with_tests,
                                                    asserts_program)
    assert sum(r.num_passed for r in results) == 1127


def test_humaneval_canonical_solutions_pass_the_environment_program(pool, patient_pool,
                                                                    humaneval):
    # What CodeEnv's reward runs: the asserts, then the full `check` as one more test.
    results = references_pass_under_training_limits(pool, patient_pool, humaneval,
                                                    task_program)
    assert sum(r.num_passed for r in results) == 1127 + 161 + 3


def test_all_sanitized_mbpp_references_pass(pool, patient_pool, sanitized):
    # Includes 126 (the entry point is named `sum`, shadowing the builtin through
    # Program.candidate_names) and 737/787/794 (re.Match results judged by truthiness).
    assert len(sanitized) == 427
    references_pass_under_training_limits(pool, patient_pool, sanitized, asserts_program)


def test_perturbed_and_none_returning_solutions_fail(pool, humaneval, sanitized):
    # A fixed sample across both sets: every 8th HumanEval task, every 20th MBPP task.
    sample = [(t, humaneval_program) for t in humaneval[::8]]
    sample += [(t, asserts_program) for t in sanitized[::20]]
    assert len(sample) >= 30
    # Control: the same wrapper returning the value unchanged must pass, so the
    # failures below come from the wrong answers, not from the rebinding itself.
    identity = _PERTURB.replace("def _mtrl_wrong(value):\n",
                                "def _mtrl_wrong(value):\n    return value\n")
    variants = (("identity", identity), ("perturbed", _PERTURB), ("none", _RETURN_NONE))
    programs, ids = [], []
    for task, make in sample:
        for kind, template in variants:
            programs.append(make(task, task.canonical_solution
                                 + template.replace("{name}", task.entry_point)))
            ids.append((task.task_id, kind))
    results = pool.run_batch(programs)
    control = [(i, r) for i, r in zip(ids, results) if i[1] == "identity"]
    wrong = [(i, r) for i, r in zip(ids, results) if i[1] != "identity"]
    assert len(wrong) == 2 * len(sample)
    failed_control = [(i, r) for i, r in control if not r.passed]
    assert not failed_control, _describe(*zip(*failed_control))
    passed = [(i, r) for i, r in wrong if r.passed]
    assert not passed, _describe(*zip(*passed))
    # They fail on their answers (a failed assert or an error raised by the test),
    # not only by running out of time.
    assert all(any(t.status in ("failed", "error") for t in r.tests) for _, r in wrong), \
        _describe(*zip(*wrong))


# Candidates that redefine the prompt helpers the tests call. With the prompt's
# imports alone as setup each of these passed `check`; the task's setup now holds
# the real helpers, and the judge never lets a candidate's definition replace them.
_HELPER_HACKS = [
    ("HumanEval/32", "def poly(*args):\n    return 0\n\ndef find_zero(xs):\n    return 0.0\n"),
    ("HumanEval/38", "def encode_cyclic(s):\n    return s\n\ndef decode_cyclic(s):\n"
                     "    return s\n"),
    ("HumanEval/50", "def encode_shift(s):\n    return s\n\ndef decode_shift(s):\n"
                     "    return s\n"),
]


def _prompt_imports(task: CodeTask) -> str:
    return "\n".join(line for line in task.prompt.splitlines()
                     if line.startswith(("import ", "from ")))


def test_redefined_prompt_helpers_do_not_pass(pool, humaneval):
    by_id = {t.task_id: t for t in humaneval}
    hacks = [(by_id[task_id], code) for task_id, code in _HELPER_HACKS]
    programs = [task_program(task, code) for task, code in hacks]
    # Control: the same programs with imports-only setup (the old setup) do pass,
    # so the failures below come from the trusted helpers.
    controls = [Program(code=code, tests=(task.test_code,), setup=_prompt_imports(task),
                        entry_point=task.entry_point) for task, code in hacks]
    results = pool.run_batch(programs + controls)
    hacked, control = results[:len(hacks)], results[len(hacks):]
    labels = [task_id for task_id, _ in _HELPER_HACKS]
    assert all(r.passed for r in control), _describe(labels, control)
    passed = [(label, r) for label, r in zip(labels, hacked) if r.passed]
    assert not passed, _describe(*zip(*passed))
    assert all(r.tests[0].status == "failed" for r in hacked), _describe(labels, hacked)


_HAS_CLOSE = "HumanEval/0"
_SIMILAR = "mbpp_sanitized/2"

# Hand-written wrong programs: (task, why it is wrong, code).
_HAND_WRITTEN = [
    (_HAS_CLOSE, "off-by-one comparison",
     "def has_close_elements(numbers, threshold):\n"
     "    return any(abs(a - b) <= threshold + 1 for i, a in enumerate(numbers)\n"
     "               for j, b in enumerate(numbers) if i != j)\n"),
    (_HAS_CLOSE, "syntax error",
     "def has_close_elements(numbers, threshold):\n    return (\n"),
    (_HAS_CLOSE, "wrong function name",
     "def close_elements(numbers, threshold):\n    return True\n"),
    (_HAS_CLOSE, "raises", "def has_close_elements(numbers, threshold):\n    raise ValueError\n"),
    (_HAS_CLOSE, "exits early with status 0",
     "import sys\n\ndef has_close_elements(numbers, threshold):\n    sys.exit(0)\n"),
    (_HAS_CLOSE, "exits at import time", "import os\nos._exit(0)\n"),
    (_HAS_CLOSE, "object equal to everything",
     "class Anything:\n    def __eq__(self, other):\n        return True\n\n"
     "def has_close_elements(numbers, threshold):\n    return Anything()\n"),
    (_HAS_CLOSE, "prints fake success markers",
     "print('PASSED ' * 50)\n\ndef has_close_elements(numbers, threshold):\n"
     "    print('all tests passed')\n    return None\n"),
    (_HAS_CLOSE, "never returns", "def has_close_elements(numbers, threshold):\n"
                                  "    while True:\n        pass\n"),
    (_SIMILAR, "hard-codes the example shown in the prompt",
     "def similar_elements(a, b):\n    return (4, 5)\n"),
    (_SIMILAR, "returns the union",
     "def similar_elements(a, b):\n    return tuple(set(a) | set(b))\n"),
]


def test_hand_written_wrong_programs_fail(pool, humaneval, sanitized):
    by_id = {t.task_id: t for t in humaneval + sanitized}
    programs = []
    for task_id, _, code in _HAND_WRITTEN:
        task = by_id[task_id]
        make = humaneval_program if task.test_code is not None else asserts_program
        programs.append(make(task, code))
    labels = [f"{t} ({why})" for t, why, _ in _HAND_WRITTEN]
    # The split asserts too: per-test feedback must not be fooled either. (Not the
    # endless loop: it would only wait out one timeout per assert.)
    for task_id, why, code in _HAND_WRITTEN:
        if by_id[task_id].test_code is not None and why != "never returns":
            programs.append(asserts_program(by_id[task_id], code))
            labels.append(f"{task_id} ({why}, split asserts)")
    results = pool.run_batch(programs)
    passed = [(label, r) for label, r in zip(labels, results) if r.passed]
    assert not passed, _describe(*zip(*passed))
    hard_coded = results[[why for _, why, _ in _HAND_WRITTEN].index(
        "hard-codes the example shown in the prompt")]
    assert hard_coded.tests[0].status == "passed" and hard_coded.num_passed == 1
