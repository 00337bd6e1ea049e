"""SFT demonstrations: correct programs, in the format the code environment reads."""

import dataclasses

import pytest

from mtrl.data.synthetic import (TINY_PROMPT_TEMPLATES, demonstration, make_splits,
                                 sft_demonstrations)
from mtrl.data.synthetic.demonstrations import helper_completion, revision_demonstrations
from mtrl.data.synthetic.family import FamilyConfig, IntFunction
from mtrl.data.synthetic.terms import TERMS
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
        assert completion.startswith("def f(x):\n    return ")  # bare, no fence
        assert len(completion.encode()) < 40
        code = extract_code(completion, "f")
        assert code.strip() == completion.strip()
        _run(code, demo.task.tests)


def test_two_agent_demonstrations_split_term_and_offset(splits):
    demos = sft_demonstrations(splits.train, fraction=0.5, num_agents=2, seed=0)
    assert len(demos) == 100
    for demo in demos:
        helper, main = demo.completions
        assert len(helper.encode()) < 40 and len(main.encode()) < 50
        # The offset is bound first, right after the prompt that shows it.
        assert main.startswith(f"def f(x, b={demo.task.prompt.split('== ')[1][:-1]}):\n")
        aux_code, main_code = extract_code(helper, "aux"), extract_code(main, "f")
        assert "def aux(x" in aux_code and "def f(x)" not in aux_code
        assert "def aux" not in main_code
        usage = helper_usage(main_code, "f")
        assert usage.calls_aux and usage.uses_result
        # Main adds the offset itself, so the level reward's not-a-thin-wrapper bonus
        # is always earned.
        assert not usage.thin_wrapper
        _run(aux_code + "\n" + main_code, demo.task.tests)


def test_helper_writes_a_linear_terms_coefficient_first():
    # k leads the answer, a few tokens after the feedback value it is copied from.
    assert helper_completion(IntFunction("3x", 5)) == "def aux(x, k=3):\n    return k*x\n"
    assert helper_completion(IntFunction("neg", 0)) == "def aux(x, k=-1):\n    return k*x\n"
    assert helper_completion(IntFunction("square", 2)) == "def aux(x):\n    return x*x\n"
    for name in TERMS.names():
        namespace: dict = {}
        exec(helper_completion(IntFunction(name, 0)), namespace)
        assert [namespace["aux"](x) for x in range(-3, 4)] == \
            [TERMS.get(name).apply(x) for x in range(-3, 4)]


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


def test_revision_demonstrations_start_from_a_rival_that_fits_the_example(splits):
    family = FamilyConfig()
    revisions = revision_demonstrations(splits.train, family, fraction=0.5, num_agents=2,
                                        seed=3)
    assert 0 < len(revisions) <= round(0.5 * len(splits.train))
    by_id = {item.task.task_id: item for item in splits.train}
    for r in revisions:
        item = by_id[r.revision.task.task_id]
        assert r.first.task == r.revision.task == item.task
        # The revision is the true program; the first attempt is another member with
        # the same value at the shown example, which the first hidden test rejects.
        assert r.revision.completions == demonstration(item, 2).completions
        assert r.first.completions != r.revision.completions
        wrong = [m for m in family.members()
                 if demonstration(dataclasses.replace(item, function=m), 2).completions
                 == r.first.completions]
        assert len(wrong) == 1 and wrong[0] != item.function
        assert wrong[0](item.example_x) == item.example_y
    again = revision_demonstrations(splits.train, family, fraction=0.5, num_agents=2, seed=3)
    assert again == revisions
    assert revision_demonstrations(splits.train, family, fraction=0.0) == ()
    with pytest.raises(ValueError, match="train"):
        revision_demonstrations(splits.heldout, family, fraction=0.5)


def test_first_guess_is_a_teacher_with_one_default_answer(splits):
    demos = sft_demonstrations(splits.train, fraction=0.5, num_agents=2, seed=0,
                               first_guess="x")
    honest = sft_demonstrations(splits.train, fraction=0.5, num_agents=2, seed=0)
    for demo, truth in zip(demos, honest):
        # The helper always opens with its guess; main still adds the shown offset.
        assert demo.completions == ("def aux(x, k=1):\n    return k*x\n", truth.completions[1])
    family = FamilyConfig(terms=("x", "2x", "3x", "4x", "neg"), offset_range=(0, 9))
    tasks = make_splits(family, num_train=100, num_heldout=0, seed=2).train
    revisions = revision_demonstrations(tasks, family, fraction=1.0, seed=0, first_guess="x")
    by_id = {item.task.task_id: item for item in tasks}
    # Tasks built on the guess have nothing to revise; every other one starts from it.
    assert len(revisions) == sum(item.function.term != "x" for item in tasks)
    for r in revisions:
        assert r.first.completions[0] == "def aux(x, k=1):\n    return k*x\n"
        assert r.revision.completions == demonstration(by_id[r.revision.task.task_id], 2
                                                       ).completions
    with pytest.raises(ValueError, match="num_agents = 2"):
        sft_demonstrations(splits.train, num_agents=1, first_guess="x")
    with pytest.raises(ValueError, match="first_guess must be one of .*, got .cube."):
        sft_demonstrations(splits.train, first_guess="cube")
