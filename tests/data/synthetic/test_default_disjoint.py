"""The embedded default's held-out splits are held out input by input: rendered through
the real code environment and sandbox, no text any agent sees in validation, test or
ood_test (first-turn prompts, and turn-2 observations after every first attempt the SFT
teacher makes, plus a wrong coefficient, a broken helper and a wrong offset) occurs
among the texts of training (the same renders of every train task, and every SFT
demonstration prompt and observation); and no held-out text was seen with another
right answer. A split that fails this measures recall, not generalization."""

import pytest

from mtrl.data.overlap import overlap, visible_texts
from mtrl.data.suite import build_suite
from mtrl.data.synthetic.demonstrations import helper_completion, main_completion
from mtrl.data.synthetic.family import IntFunction
from mtrl.data.synthetic.terms import get_term
from mtrl.data.demonstrations import Revision
from tests.data.synthetic.world import config_world


# The default and its narrow-k ablation: both report a test split as unseen.
@pytest.fixture(scope="module", params=["default", "default_narrow_k"])
def default_world(request):
    with config_world(request.param) as world:
        yield world


def test_no_held_out_input_of_the_default_occurs_in_training(default_world):
    run, suite, env = default_world
    splits = suite.splits
    items = {t.task.task_id: t for name in ("train", "heldout", "test", "ood_test")
             for t in getattr(splits, name)}
    entry = suite.splits.train[0].task.entry_point
    teacher = run.sft.first_guess
    train_ks = sorted({get_term(t.function.term).coefficient for t in splits.train})

    def answers(task):
        f = items[task.task_id].function
        return helper_completion(f), main_completion(f, entry)

    def attempts(task):
        f = items[task.task_id].function
        k = get_term(f.term).coefficient
        wrong = next(c for c in train_ks if c not in (k, get_term(teacher).coefficient))
        return [(helper_completion(IntFunction(teacher, f.offset)), answers(task)[1]),
                (helper_completion(IntFunction(_linear(wrong), f.offset)), answers(task)[1]),
                ("def aux(x, k=:\n", answers(task)[1]),
                (helper_completion(f), main_completion(IntFunction(f.term, f.offset + 1), entry))]

    train = visible_texts(env, suite.tasks("train"), attempts, answers)
    for agent, pairs in enumerate(suite.demonstrations(env, 2, run.sft)):
        for prompt, completion in pairs:
            shown = [prompt] if isinstance(prompt, str) else \
                [prompt.prompt, *(obs for _, obs in prompt.exchanges)]
            for text in shown:
                for turn in (1, 2):  # a reset revision is shown as a first prompt
                    train.setdefault((agent, turn), {}).setdefault(text, set()).add(completion)
    heldout_tasks = {"validation": suite.tasks("validation"), "test": suite.tasks("test"),
                     **suite.extra_test_splits()}
    assert set(heldout_tasks) == {"validation", "test", "ood_test"}
    for name, tasks in heldout_tasks.items():
        found = overlap(train, visible_texts(env, tasks, attempts, answers))
        assert set(found.total) == {(0, 1), (1, 1), (0, 2), (1, 2)}, name
        assert all(n > 0 for n in found.total.values()), (name, found.total)
        assert not found.any_seen, (name, found.seen, found.examples)
        assert not any(found.seen_other_answer.values())


def _linear(k):
    from mtrl.data.synthetic.terms import linear_term_name
    return linear_term_name(k)


def test_the_check_sees_an_overlap_when_there_is_one(default_world):
    """The same check on the old default's split (held-out (term, offset) pairs, numbers
    all seen in training) finds the audit's overlap: it can fail."""
    run, _, env = default_world
    from mtrl.data.suite import DataConfig
    old = DataConfig(**{**run.data.__dict__, "options": dict(
        probe_form="difference", heldout_by="function", offset_range=(0, 9),
        terms=("x", "2x", "3x", "4x", "neg"), probe_xs=(1,),
        test_xs=(-3, -2, -1, 1, 2, 3, 4), iid_test=True)})
    suite = build_suite(old, run.seed)
    train = visible_texts(env, suite.tasks("train"))
    found = overlap(train, visible_texts(env, suite.tasks("test")))
    assert found.any_seen and found.fraction() > 0.9, found.seen
