"""SFT demonstrations: correct programs, in the format the code environment reads."""

import pytest

from mtrl.data.synthetic import (TINY_PROMPT_TEMPLATES, make_splits, sft_demonstrations)
from mtrl.envs.code import extract_code, helper_usage


@pytest.fixture(scope="module")
def splits():
    return make_splits(num_train=200, num_heldout=20, seed=1)


def _run(program: str, tests) -> None:
    namespace: dict = {}
    exec(program, namespace)
    for test in tests:
        exec(test, namespace)


def test_single_agent_demonstrations_are_correct_and_tiny(splits):
    demos = sft_demonstrations(splits.train, fraction=0.25, num_agents=1, seed=0)
    assert len(demos) == 50
    assert len({d.task.task_id for d in demos}) == 50
    for demo in demos:
        (completion,) = demo.completions
        assert completion.startswith("```python\ndef f(x):\n    return ")
        assert completion.endswith("\n```")
        assert len(completion.encode()) < 60
        code = extract_code(completion, "f")
        assert code.strip() == completion[len("```python\n"):-len("```")].strip()
        _run(code, demo.task.tests)


def test_two_agent_demonstrations_split_term_and_offset(splits):
    demos = sft_demonstrations(splits.train, fraction=0.5, num_agents=2, seed=0)
    assert len(demos) == 100
    for demo in demos:
        helper, main = demo.completions
        assert len(helper.encode()) < 60 and len(main.encode()) < 60
        aux_code, main_code = extract_code(helper, "aux"), extract_code(main, "f")
        assert "def aux(x)" in aux_code and "def f(x)" not in aux_code
        assert "def aux" not in main_code
        usage = helper_usage(main_code, "f")
        assert usage.calls_aux and usage.uses_result
        # Main adds the offset itself, so the level reward's not-a-thin-wrapper bonus
        # is earned whenever there is an offset to add.
        assert usage.thin_wrapper == main_code.rstrip().endswith("return y")
        _run(aux_code + "\n" + main_code, demo.task.tests)


def test_demonstrations_are_seeded_and_train_only(splits):
    first = sft_demonstrations(splits.train, fraction=0.3, seed=5)
    assert first == sft_demonstrations(splits.train, fraction=0.3, seed=5)
    assert first != sft_demonstrations(splits.train, fraction=0.3, seed=6)
    with pytest.raises(ValueError, match="train tasks"):
        sft_demonstrations(splits.heldout)
    with pytest.raises(ValueError, match="num_agents"):
        sft_demonstrations(splits.train, num_agents=3)


def test_tiny_prompts_stay_short(splits):
    for item in splits.train[:50]:
        for agents in (1, 2):
            for prompt in TINY_PROMPT_TEMPLATES.first_turn(item.task, agents):
                assert item.task.prompt in prompt
                assert len(prompt.encode()) <= 110
