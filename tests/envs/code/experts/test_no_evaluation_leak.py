"""No expert sees an evaluation task's solution.

With env.feedback_mode=expert_edits and env.expert=reference, the feedback after a
wrong first attempt on a validation or test task must not carry the canonical
solution; on a training task it does (the expert is on, so the check can fail)."""

import pytest

from mtrl.envs.code.experts import ReferenceExpert
from mtrl.envs.code.experts.factory import build_expert
from mtrl.training.run.build import build_components
from mtrl.training.config import parse
from tests.training.loop.small_run import small_config

WRONG = ("```python\ndef aux(x):\n    return 0\n```", "```python\ndef f(x):\n    return 0\n```")


def solution_lines(task) -> list[str]:
    """The reference's lines a wrong program does not already hold."""
    wrong = "\n".join(WRONG)
    return [line.strip() for line in task.canonical_solution.splitlines()
            if line.strip() and line.strip() not in wrong]


def feedback_after_a_wrong_attempt(env, task) -> str:
    state, _ = env.reset(task)
    (result,) = env.step([state], [WRONG], turn=1)
    return "\n".join(result.observations)  # every agent's observation


@pytest.fixture(scope="module")
def components():
    c = small_config()
    c.env.feedback_mode, c.env.expert = "expert_edits", "reference"
    c.data.test_split, c.data.num_test = "test", 2
    c.data.options = dict(test_terms=("neg2x",), test_offset_range=(0, 9))
    built = build_components(parse(c))
    yield built
    built.close()


def test_validation_and_test_feedback_never_holds_the_solution(components):
    assert components.eval_tasks and components.test_tasks
    for task in components.eval_tasks + components.test_tasks:
        assert solution_lines(task), task.task_id  # something to leak
        text = feedback_after_a_wrong_attempt(components.env, task)
        assert "An expert reviewed" in text
        for line in solution_lines(task):
            assert line not in text, (task.task_id, line, text)


def test_training_feedback_holds_the_reference_edits(components):
    task = components.train_tasks[0]
    text = feedback_after_a_wrong_attempt(components.env, task)
    assert any(line in text for line in solution_lines(task)), text


def test_the_reference_expert_knows_only_the_tasks_it_was_given(components):
    train, held = components.train_tasks[0], components.eval_tasks[0]
    expert = build_expert("reference", {}, train_tasks=[train])
    assert expert.suggest(held, WRONG[1], "") == ""
    assert expert.suggest(train, WRONG[1], "").startswith("Edits to `f`")
    assert build_expert("reference", {}).suggest(train, WRONG[1], "") == ""  # none given
    assert isinstance(expert, ReferenceExpert)
