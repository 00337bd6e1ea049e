"""No compile after warm-up: over a 20-step run whose prompt lengths, completion
lengths, turn counts and informative rows change from step to step, the sampler and
the update compile programs in their first COMPILE_WARMUP_STEPS steps only (the logged
per-step counts `compiles/sampler` and `compiles/update` are 0 after them: a count,
not a timing).

The run: a tiny byte model that SFT taught to answer "Say 37." with the number or, on
a share of its demonstrations, with a refusal, so that its samples (and so rewards,
advantages and how many episodes end at turn 1) differ from step to step; each task's
prompt opens with 0-5 filler words, so prompt lengths differ across tasks and fall in
several of the sampler's length buckets; the sampler's own default buckets
(BucketPolicy()), the zero-advantage filter and tree packing on the packed update's
bin ladder, as in a real run."""

from __future__ import annotations

import dataclasses
import json

import numpy as np

from mtrl.data.gsm8k import MathTask
from mtrl.data.suite import SUITES
from mtrl.envs.math.prompts import MathTemplates
from mtrl.sampling import BucketPolicy
from mtrl.training.loop.step_metrics import COMPILE_WARMUP_STEPS, step_metrics
from mtrl.training.loop.trainer import Trainer
from tests.training.loop.learning_run import learning_base, with_overrides

STEPS = 20
SUITE = "compile_count_say_number"
SIZES = {"train": 60, "validation": 8, "test": 8}
FILLER = ("now", "please", "kindly", "just", "quickly")


def question(n: int) -> str:
    """"Say n." after 0-5 filler words: prompts of 8 to ~40 bytes."""
    return " ".join(FILLER[: n % 6] + (f"Say {n}.",))


class VariedSayNumberSuite:
    """Numbers 10-99 split by a seeded permutation; the SFT teacher refuses ("no") on a
    seeded 60% of its demonstrations."""

    task_type = MathTask  # played by the math environment

    def __init__(self, data, seed: int):
        del data
        chosen = np.random.default_rng([seed, 28]).permutation(np.arange(10, 100))
        self.split_numbers, start = {}, 0
        for split, size in SIZES.items():
            self.split_numbers[split] = chosen[start:start + size]
            start += size
        self.seed = int(seed)

    def tasks(self, split: str) -> list:
        return [MathTask(task_id=f"say/{split}/{n}", question=question(int(n)), answer=str(n))
                for n in self.split_numbers[split]]

    def templates(self, name: str) -> MathTemplates:
        del name
        return MathTemplates(first="{question}", try_again="Try again.",
                             last="{first} {response} {feedback}")

    def check_sft(self, sft, num_agents: int) -> None:
        del sft, num_agents

    def demonstrations(self, env, num_agents: int, sft) -> list[list[tuple]]:
        tasks = self.tasks("train") * 3
        wrong = set(np.random.default_rng([self.seed, 29]).permutation(len(tasks))
                    [:round(0.6 * len(tasks))].tolist())
        pairs = []
        for i, task in enumerate(tasks):
            _, prompts = env.reset(task)
            pairs.append((prompts[0], "no" if i in wrong else task.answer))
        return [pairs]


if SUITE not in SUITES:
    SUITES.register(SUITE)(VariedSayNumberSuite)


@dataclasses.dataclass(frozen=True)
class RecordingBuckets(BucketPolicy):
    """The default buckets, recording every chunk length asked for (prompts, feedback)."""

    asked: list = dataclasses.field(default_factory=list, compare=False, hash=False)

    def length(self, n: int) -> int:
        self.asked.append(n)
        return super().length(n)


def varied_config():
    c = learning_base(0, SUITE, SIZES)
    c.env.name = "math"
    c.env.num_agents = 1
    c.env.feedback_mode = "unary"
    c.env.history_mode = "last"
    c.rollout.num_turns = 2
    c.rollout.num_generations = 4
    c.rollout.max_new_tokens = 6
    c.rollout.max_context = 96
    c.sft = dict(c.sft.to_dict(), steps=150, batch_size=32, max_len=48, revision_fraction=0.0,
                 learning_rate=3e-3, schedule="constant", checkpoint_every=1000)
    c.train.steps = STEPS
    c.train.tasks_per_step = 8
    c.train.eval_interval = STEPS
    c.train.save_interval = STEPS
    c.train.drop_zero_advantage = True
    return with_overrides(c, {})


def test_nothing_compiles_after_the_warm_up(tmp_path):
    buckets = RecordingBuckets()
    trainer = Trainer(varied_config(), tmp_path, show_progress=False, sampler_buckets=buckets)
    try:
        trainer.run()
    finally:
        trainer.close()
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    by_step = {r["step"]: r for r in records if "compiles/sampler" in r}
    assert sorted(by_step) == list(range(1, STEPS + 1))
    series = {name: [by_step[s][name] for s in range(1, STEPS + 1)]
              for name in ("compiles/sampler", "compiles/update", "sampler_compiles",
                           "train_step_compiles", "rollout/generated_tokens",
                           "rollout/turn2_nodes", "informative_rows")}
    print({name: values for name, values in series.items()})
    later = range(COMPILE_WARMUP_STEPS, STEPS)
    # The run varies (else the test proves nothing): completion lengths, how many
    # episodes reach turn 2, how many rows carry a gradient, and prompts of several
    # length buckets.
    for name in ("rollout/generated_tokens", "rollout/turn2_nodes", "informative_rows"):
        assert len({series[name][i] for i in later}) > 1, (name, series[name])
    assert len({BucketPolicy().length(n) for n in buckets.asked}) > 1, sorted(set(buckets.asked))
    # The warm-up compiled programs, and nothing compiled after it.
    assert sum(series["compiles/sampler"][:COMPILE_WARMUP_STEPS]) > 0
    assert sum(series["compiles/update"][:COMPILE_WARMUP_STEPS]) > 0
    assert [series["compiles/sampler"][i] for i in later] == [0.0] * len(later), series
    assert [series["compiles/update"][i] for i in later] == [0.0] * len(later), series
    assert series["sampler_compiles"][-1] == series["sampler_compiles"][COMPILE_WARMUP_STEPS - 1]


class _Tree:
    turns, metrics = [], {"rollout/env_seconds": 0.0}


def test_per_step_counts_are_this_steps_alone(monkeypatch):
    """compiles/* = the totals now less the totals when the step began."""
    import mtrl.training.loop.step_metrics as module
    monkeypatch.setattr(module, "rollout_metrics", lambda tree: {})
    update = type("U", (), dict(metrics=[], kept=0, informative=0, compiles=7, packing={}))()
    step_tasks = type("S", (), dict(record=lambda self, step, tree: {}))()
    m = step_metrics(4, _Tree(), update, (0.0, 1.0, 2.0), step_tasks=step_tasks,
                     sampler_compiles=9, compiles_at_start=(6, 7))
    assert (m["compiles/sampler"], m["compiles/update"]) == (3.0, 0.0)
    assert (m["sampler_compiles"], m["train_step_compiles"]) == (9.0, 7.0)
