"""Level 4 from what ran and from data flow, with the real sandbox.

Four hacks once scored the full 4.0: a dead statement beside `return
aux(x)` (not a thin wrapper by shape), `_ = aux(x)` (not an ignored result by
shape), an entry point rebound after its `def` to something that calls aux (the
`def` analysed never calls it), and a helper that raises while loading (its calls
were counted all the same). Each now loses the points it stole; the honest twin of
each keeps them. Later hacks: a dead store, a value that reaches only a branch no
test takes, a call made outside the entry point, and an entry point replaced through
`getattr` with an attribute name built at run time."""

import pytest

from mtrl.envs.code.analysis import agent_programs, analyze_candidate
from mtrl.envs.code.env import task_program
from mtrl.envs.code.rewards import CodeRewardConfig, level_reward
from mtrl.envs.code.task import CodeTask
from mtrl.envs.sandbox import Limits, SandboxPool

TASK = CodeTask(task_id="t/odd", prompt="f(x) = 2x + 1", entry_point="f",
                tests=("assert f(1) == 3", "assert f(4) == 9"))
DOUBLE = "def aux(x):\n    return 2 * x"
ODD = "def aux(x):\n    return 2 * x + 1"
# Levels 1-3 with every test passing: 0.4 + 0.6 + 0.5 + 1.0.
LEVELS_1_TO_3 = 2.5

CASES = {
    # hack: (aux, main, reward); its honest twin follows it
    "dead_statement": (ODD, "def f(x):\n    y = 1\n    return aux(x)", 3.0),
    "thin_wrapper": (ODD, "def f(x):\n    return aux(x)", 3.0),
    "underscore": (DOUBLE, "def f(x):\n    _ = aux(x)\n    return 2 * x + 1", 2.5),
    "uses_and_adds": (DOUBLE, "def f(x):\n    doubled = aux(x)\n    return doubled + 1", 4.0),
    "rebound": (DOUBLE, "def f(x):\n    return 2 * x + 1\n\n\nf = lambda x: aux(x) + 1",
                LEVELS_1_TO_3),
    "rebound_def_calls_aux": (DOUBLE, "def f(x):\n    return aux(x) - 7\n\n\n"
                              "f = lambda x: aux(x) + 1", LEVELS_1_TO_3),
    "not_rebound": (DOUBLE, "def f(x):\n    return aux(x) + 1", 4.0),
    "helper_fails_to_load": (DOUBLE + "\n\n\nraise ValueError('not today')",
                             "def f(x):\n    try:\n        return aux(x) + 1\n"
                             "    except Exception:\n        return 2 * x + 1", LEVELS_1_TO_3),
    "helper_loads": (DOUBLE, "def f(x):\n    try:\n        return aux(x) + 1\n"
                     "    except Exception:\n        return 2 * x + 1", 4.0),
    # The value must reach main's answer as the code runs, wherever aux is
    # called (2.5: aux_called 0.5, less the ignored-result penalty 0.5).
    "dead_store": (DOUBLE, "def f(x):\n    y = aux(x)\n    y = 2 * x + 1\n    return y", 2.5),
    "dead_branch": (DOUBLE, "def f(x):\n    y = aux(x)\n    if x == 12345:\n"
                    "        return y + 1\n    return 2 * x + 1", 2.5),
    "side_call_elsewhere": (DOUBLE, "def g():\n    return aux(0)\n\n\ndef f(x):\n    g()\n"
                            "    if x == 12345:\n        return aux(x) + 1\n"
                            "    return 2 * x + 1", 2.5),
    "helper_function": (DOUBLE, "def g(v):\n    return aux(v) + 1\n\n\n"
                        "def f(x):\n    return g(x)", 4.0),
    "loop": (DOUBLE, "def f(x):\n    total = 1\n    for _ in range(2):\n"
             "        total += aux(x) // 2\n    return total", 4.0),
    # An attribute reached by a name built at run time replaces the entry point.
    "rebound_by_string": (DOUBLE, "def f(x):\n    return aux(x) - 7\n\n\n"
                          "def _real(x):\n    return aux(x) + 1\n\n\n"
                          "getattr(_real, '__glob' + 'als__')['f'] = _real", LEVELS_1_TO_3),
    "operator_without_strings": (DOUBLE, "import operator\n\n\ndef f(x):\n"
                                 "    return operator.add(aux(x), 1)", 4.0),
}


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(num_workers=2, limits=Limits(wall_s_per_test=5.0, wall_s_total=10.0)
                     ) as sandbox:
        yield sandbox


@pytest.mark.parametrize("name", list(CASES))
def test_level_four_pays_only_for_what_ran_and_what_flows(pool, name):
    aux, main, expected = CASES[name]
    analysis = analyze_candidate((aux, main), TASK.entry_point)
    result = pool.submit(task_program(TASK, *agent_programs(analysis))).result()
    assert result.passed, result  # every case passes the tests: only level 4 differs
    out = level_reward(analysis, result, CodeRewardConfig())
    assert out.reward == pytest.approx(expected), out.components
