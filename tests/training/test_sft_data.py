"""SFT demonstrations for the built-in family: first-turn pairs plus revisions whose
prompts carry the environment's own feedback on a wrong first attempt."""

import pytest

from mtrl.training.build import build_templates, build_tasks
from mtrl.training.config import base_config
from mtrl.training.sft import Revision
from mtrl.training.sft_data import demonstration_pairs, revision_fractions
from mtrl.envs.code import CodeEnv, CodeEnvConfig
from mtrl.envs.sandbox import SandboxPool


def test_revision_pairs_carry_the_failing_probe_and_the_true_answer():
    c = base_config()
    c.data.num_train = 40
    c.sft.revision_fraction = 0.5
    train, _ = build_tasks(c)
    with SandboxPool(num_workers=1) as pool:
        env = CodeEnv(CodeEnvConfig(num_agents=2, feedback_style="compact",
                                    templates=build_templates("tiny")), sandbox=pool)
        pairs = demonstration_pairs(c, env, train)
        revisions = [[p for p in agent if isinstance(p[0], Revision)] for agent in pairs]
        assert len(revisions[0]) == len(revisions[1]) == 20
        first_turn = [[p for p in agent if isinstance(p[0], str)] for agent in pairs]
        assert len(first_turn[0]) == 40
        for (helper_prompt, helper_answer), (main_prompt, main_answer) in zip(*revisions):
            ((attempt, observation),) = helper_prompt.exchanges
            # The feedback is the environment's: the first hidden test failed and is shown
            # (tasks can share a prompt, so the shown probe identifies the task).
            matches = [t for t in train if t.prompt in helper_prompt.prompt and
                       f"FAILED {t.tests[0].removeprefix('assert ').strip()}:" in observation]
            assert matches  # (the example and the probe identify the function)
            task = matches[0]
            # The revision instruction restates the task (the example's value ends it).
            assert observation.endswith(f"Revise aux. {task.prompt}")
            assert main_prompt.exchanges[0][1].endswith(f"Revise f. {task.prompt}")
            assert (attempt, main_prompt.exchanges[0][0]) != (helper_answer, main_answer)
            # The revision solves the task.
            program = (helper_answer + "\n" + main_answer).replace("```python", "")
            namespace = {}
            exec(program.replace("```", ""), namespace)
            for test in task.tests:
                exec(test, namespace)


def test_revision_fraction_per_agent():
    c = base_config()
    c.data.num_train = 40
    c.sft = dict(c.sft.to_dict(), revision_fraction=(0.5, 0.0))
    train, _ = build_tasks(c)
    with SandboxPool(num_workers=1) as pool:
        env = CodeEnv(CodeEnvConfig(num_agents=2, feedback_style="compact",
                                    templates=build_templates("tiny")), sandbox=pool)
        pairs = demonstration_pairs(c, env, train)
    counts = [sum(isinstance(p[0], Revision) for p in agent) for agent in pairs]
    assert counts == [20, 0]
    assert revision_fractions(0.25, 2) == (0.25, 0.25)
    with pytest.raises(ValueError, match="2 agents"):
        revision_fractions((0.1, 0.2, 0.3), 2)
