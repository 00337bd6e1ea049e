"""The try_again suite (experiments/configs/try_again.py: one agent, unary feedback,
offsets held out) is held out input by input: rendered through the real code
environment and sandbox, no validation or test prompt, and no turn-2 observation after
any first attempt the SFT policy can make (either term with the task's offset, or a
wrong offset), occurs among the texts of training (the same renders of every train
task, and every SFT demonstration prompt and observation); and every held-out answer
writes an offset that no train answer wrote."""

import re

import pytest

from mtrl.data.overlap import overlap, visible_texts
from mtrl.data.synthetic.demonstrations import single_agent_completion
from mtrl.data.synthetic.family import IntFunction
from tests.data.synthetic.world import config_world

@pytest.fixture(scope="module")
def world():
    with config_world("try_again") as world:
        yield world


def test_no_held_out_input_of_try_again_occurs_in_training(world):
    run, suite, env = world
    items = {t.task.task_id: t for name in ("train", "heldout", "test")
             for t in getattr(suite.splits, name)}
    entry = suite.splits.train[0].task.entry_point

    def answers(task):
        return (single_agent_completion(items[task.task_id].function, entry),)

    def attempts(task):
        f = items[task.task_id].function
        return [(single_agent_completion(IntFunction(term, offset), entry),)
                for term in ("x", "neg") for offset in (f.offset, f.offset + 1)]

    train = visible_texts(env, suite.tasks("train"), attempts, answers)
    for prompt, completion in suite.demonstrations(env, 1, run.sft)[0]:
        shown = [prompt] if isinstance(prompt, str) else \
            [prompt.prompt, *(obs for _, obs in prompt.exchanges)]
        for text in shown:
            for turn in (1, 2):
                train.setdefault((0, turn), {}).setdefault(text, set()).add(completion)
    train_offsets = {t.function.offset for t in suite.splits.train}
    for name in ("validation", "test"):
        tasks = suite.tasks(name)
        assert len(tasks) == 100
        found = overlap(train, visible_texts(env, tasks, attempts, answers))
        assert set(found.total) == {(0, 1), (0, 2)} and all(found.total.values()), name
        assert not found.any_seen, (name, found.seen, found.examples)
        written = {int(m) for t in tasks for m in re.findall(r"[+-]\d+", answers(t)[0])}
        assert len(written) >= 10 and not written & train_offsets, (name, written & train_offsets)
