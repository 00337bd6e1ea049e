"""RL learns: a seeded run of the real trainer (SFT warm start, tree rollouts with the
sampler, credit, loss, optimizer, greedy evaluation, best checkpoint by validation,
test once) whose test success after RL beats its post-SFT test success by MARGIN.

Task (a suite defined here, run by the math environment): "Say 37." -> "37" for the
numbers 10-99, split by a seeded permutation into 58 train, 16 validation and 16 test
numbers (an iid test: disjoint numbers, same form). The SFT teacher is weak on purpose:
on a share WRONG = 0.6 of its demonstrations it answers "no" (no number: read as no
answer), on the rest with the number. After SFT greedy decoding mostly says "no"
(post-SFT test success low) while sampling still says the number about 40% of the
time. RL (MAGRPO's REINFORCE, T = 2 turns of G = 4 with unary "Try again." feedback,
32 tasks per step, 40 steps, Adam 1e-3) has to move probability from the refusal to
the copy; the choice is one for every number, so the held-out numbers move with the
train ones. A regression in credit (advantages), loss, optimizer, sampler or rollout
leaves the greedy refusal in place and the test fails.

Measured with the fixed shapes below (2026-11-26, 2-core machine shared with a
TextWorld experiment; user CPU of the whole process), post-SFT -> after-RL test success:
  seed 0 (this test under pytest, XLA's default compile flags then): 0.12 -> 1.00,
    77.5 s CPU (fresh compilation cache); under the suite's flags (tests/conftest.py,
    2026-11-26, quiet machine): 0.06 -> 1.00, 53.9 s user CPU for the file alone
  seed 1: 0.25 -> 1.00 (validation 0.25 -> 1.00), 65 s CPU
  seed 2: 0.19 -> 1.00 (validation 0.25 -> 0.94), 68 s CPU
(Before the fixed shapes, at an older tree: 0.06 / 0.31 / 0.25 -> 1.00.) Broken
learning (optim.learning_rate = 1e-12; 0 is refused by the config), seed 1, measured
at that older tree: test 0.31 -> 0.31, validation 0.12 -> 0.12: the assertion fails.
Re-measured 2026-11-28 after the sampled draw became inverse-CDF sampling (other random
draws, same distribution; XLA's default flags, load ~4): seeds 0 / 1 / 2 0.125 / 0.25 /
0.19 -> 1.00; learning rate 1e-12, seed 1: 0.25 -> 0.25.
The setting was chosen over calibration runs whose validation and test numbers were
seen (an earlier teacher that reversed the number instead of refusing learned on seeds
0 and 1 but not 2; a learning rate of 3e-3 collapsed the policy): this is a regression
test of the machinery, not a measurement of an effect.

Few compiled shapes (the test's cost was compilation: RL steps 1-16 each compiled new
sampler and update programs, 22 sampler and 6 update compiles in all): the sampler pads
every batch to at least 128 rows and every chunk to 64 tokens (SAMPLER_BUCKETS; the
batches go up to 512 rows, the contexts to 48 tokens), and one packed bin of 512 slots
holds a whole step's tree (train.pack_budget; at most 264 packed tokens were seen), so
5 sampler and 3 update programs compile (the update's row count still takes a few
powers of two). Seed 0, fresh compilation cache, side by side on the loaded 2-core
machine: 106.5 s CPU before, 77.5 s after; post-SFT test 0.125 -> 1.00 in both.
"""

from __future__ import annotations

import json
import pathlib
import sys

import numpy as np

from mtrl.data.gsm8k import MathTask
from mtrl.data.suite import SUITES
from mtrl.envs.math.prompts import MathTemplates
from tests.training.loop.learning_run import learning_base, run_trainer, with_overrides

SUITE = "rl_learns_say_number"
WRONG = 0.6  # share of SFT demonstrations that answer REFUSAL instead of the number
REFUSAL = "no"  # no number in it: the math environment reads no answer
MARGIN = 0.4  # test success after RL must exceed post-SFT test success by this
SEED = 0
NUMBERS = tuple(range(10, 100))
SIZES = {"train": 58, "validation": 16, "test": 16}
# The sampler's shape buckets (mtrl.sampling.BucketPolicy) for this run: few programs.
SAMPLER_BUCKETS = dict(min_batch=128, min_length=64, cache_multiple=128)


class SayNumberSuite:
    """Train / validation / test numbers from one seeded permutation (disjoint)."""

    task_type = MathTask  # played by the math environment

    def __init__(self, data, seed: int):
        order = np.random.default_rng([int(data.options.get("seed", seed)), 28]
                                      ).permutation(len(NUMBERS))
        chosen = [NUMBERS[int(i)] for i in order]
        self.split_numbers, start = {}, 0
        for split, size in SIZES.items():
            self.split_numbers[split] = chosen[start:start + size]
            start += size
        self.seed = int(seed)

    def tasks(self, split: str) -> list:
        return [MathTask(task_id=f"say/{split}/{n}", question=f"Say {n}.", answer=str(n))
                for n in self.split_numbers[split]]

    def templates(self, name: str) -> MathTemplates:
        del name
        return MathTemplates(first="{question}", try_again="Try again.",
                             last="{first} {response} {feedback}")

    def check_sft(self, sft, num_agents: int) -> None:
        if num_agents != 1:
            raise ValueError("config.env.num_agents: one agent")

    def demonstrations(self, env, num_agents: int, sft) -> list[list[tuple]]:
        """Each train task three times; a seeded WRONG share of them answered REFUSAL."""
        tasks = self.tasks("train") * 3
        wrong = set(np.random.default_rng([self.seed, 29]).permutation(len(tasks))
                    [:round(WRONG * len(tasks))].tolist())
        pairs = []
        for i, task in enumerate(tasks):
            _, prompts = env.reset(task)
            pairs.append((prompts[0], REFUSAL if i in wrong else task.answer))
        return [pairs]


if SUITE not in SUITES:
    SUITES.register(SUITE)(SayNumberSuite)


def learning_config(seed: int = SEED, **overrides):
    """The run: a 2-layer 64-wide byte model, 300 SFT updates, 40 RL steps of 32 tasks."""
    c = learning_base(seed, SUITE, SIZES)
    c.env.name = "math"
    c.env.num_agents = 1
    c.env.feedback_mode = "unary"
    c.env.history_mode = "last"
    c.rollout.num_turns = 2
    c.rollout.num_generations = 4
    c.rollout.max_new_tokens = 4
    c.rollout.max_context = 48
    c.sft = dict(c.sft.to_dict(), steps=300, batch_size=32, max_len=24, revision_fraction=0.0,
                 learning_rate=3e-3, schedule="constant", checkpoint_every=1000)
    c.train.steps = 40
    c.train.tasks_per_step = 32
    c.train.eval_interval = 20
    c.train.save_interval = 20
    c.train.pack_budget = 512  # one bin holds a step's whole tree: one bin count
    c.optim.learning_rate = 1e-3
    return with_overrides(c, overrides)


def run(workdir, seed: int = SEED, **overrides) -> dict:
    return run_trainer(learning_config(seed, **overrides), workdir, SAMPLER_BUCKETS)


def test_rl_learns_beyond_sft(tmp_path):
    result = run(tmp_path)
    before, after = result["post_sft_test_success"], result["test_success"]
    print(f"post-SFT test {before:.3f} -> after RL {after:.3f} (validation "
          f"{result['post_sft_success']:.3f} -> {result['final_best_success']:.3f})")
    assert after >= before + MARGIN, (before, after, result["final_best_success"])


if __name__ == "__main__":  # calibration: PYTHONPATH=. python tests/training/loop/test_rl_learns.py DIR SEED [k=v]
    out = run(pathlib.Path(sys.argv[1]), int(sys.argv[2]),
              **dict(kv.split("=", 1) for kv in sys.argv[3:]))
    keys = ("post_sft_success", "final_best_success", "best_step", "post_sft_test_success",
            "test_success", "minutes")
    print(json.dumps({k: out[k] for k in keys}))
