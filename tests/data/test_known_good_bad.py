"""Known-good and known-bad programs through the real sandbox (issue 4, item 6).

Every HumanEval canonical solution passes its original `check` (HumanEval mode) and
its split asserts; all 427 sanitized-MBPP references pass their tests with their
setup; deliberately wrong programs (perturbed
return values, `return None`, hand-written mistakes and cheats) fail.
"""

import pytest

from mtrl.envs.code.task import CodeTask
from mtrl.envs.sandbox import Limits, SandboxPool
from mtrl.envs.sandbox.types import Program

# Known-good runs check correctness, not speed: mbpp_sanitized/123's reference
# (amicable numbers below 9999, quadratic) needs 2-8 s of CPU on a busy 2-core
# machine, over the default 3 s per test.
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


def test_all_164_humaneval_canonical_solutions_pass_check(patient_pool, humaneval):
    assert len(humaneval) == 164
    results = patient_pool.run_batch(
        [humaneval_program(t, t.canonical_solution) for t in humaneval])
    failed = [(t.task_id, r) for t, r in zip(humaneval, results) if not r.passed]
    assert not failed, _describe(*zip(*failed))
    assert all(len(r.tests) == 1 for r in results)  # one `check` call per program


def test_humaneval_canonical_solutions_pass_their_split_asserts(patient_pool, humaneval):
    with_tests = [t for t in humaneval if t.tests]
    assert len(with_tests) == 161  # 32, 38 and 50 keep no standalone assert
    results = patient_pool.run_batch(
        [asserts_program(t, t.canonical_solution) for t in with_tests])
    failed = [(t.task_id, r) for t, r in zip(with_tests, results) if not r.passed]
    assert not failed, _describe(*zip(*failed))
    assert sum(r.num_passed for r in results) == 1127


def test_all_sanitized_mbpp_references_pass(patient_pool, sanitized):
    # Includes 126 (the entry point is named `sum`, shadowing the builtin through
    # Program.candidate_names) and 737/787/794 (re.Match results judged by truthiness).
    assert len(sanitized) == 427
    results = patient_pool.run_batch(
        [asserts_program(t, t.canonical_solution) for t in sanitized])
    failed = [(t.task_id, r) for t, r in zip(sanitized, results) if not r.passed]
    assert not failed, _describe(*zip(*failed))


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
