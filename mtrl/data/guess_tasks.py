"""The `guess` suite's tasks and teacher: held-out bounds and held-out secrets per
split, and binary search as the demonstrated strategy.

A task shows two exclusive bounds low < high (candidates: the n = high − low − 1
integers between them, n in `widths`) and hides one of them. Held out, drawn once
from the suite's seed, one value per stratum of each sorted range
(`spread_choice`, as the integer-function family holds out its values):

  bounds   validation and test each own 10% of the lower bounds `lows` (test's drawn
           outside validation's); a train task's lower bound is neither;
  secrets  validation and test each own 10% of the integers a secret can be; a train
           task's secret is neither.

A held-out task has its split's lower bound and its split's secret, so its question
(and so every observation, which repeats it) occurs in no train task, and its answer
is a number no train task has as its secret.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from mtrl.data.synthetic.tasks import spread_choice
from mtrl.envs.guess.task import GuessTask

HELD_OUT_FRACTION = 0.1
HELD_OUT = ("validation", "test")
SPLIT_STREAMS = {"validation": 0, "test": 1, "train": 2}  # each split's own draw


@dataclasses.dataclass(frozen=True)
class GuessSpace:
    """Every task the options allow: lower bounds `lows` and candidate counts
    `widths` (inclusive (first, last) pairs); a secret lies between its bounds."""

    lows: tuple[int, int] = (0, 99)
    widths: tuple[int, int] = (8, 32)

    def __post_init__(self):
        for name, least in (("lows", None), ("widths", 1)):
            pair = getattr(self, name)
            if (not isinstance(pair, (tuple, list)) or len(pair) != 2
                    or not all(isinstance(v, int) and not isinstance(v, bool) for v in pair)
                    or pair[0] > pair[1] or (least is not None and pair[0] < least)):
                floor = f" of at least {least}" if least is not None else ""
                raise ValueError(f"config.data.options.{name}: two ints (first, last), "
                                 f"first <= last{floor}, got {pair!r}")
            object.__setattr__(self, name, tuple(pair))

    @property
    def low_values(self) -> tuple[int, ...]:
        return tuple(range(self.lows[0], self.lows[1] + 1))

    @property
    def secret_values(self) -> tuple[int, ...]:
        """Every integer some task may hide: above the least low, below the largest high."""
        return tuple(range(self.lows[0] + 1, self.lows[1] + self.widths[1] + 1))


def held_out(space: GuessSpace, seed: int) -> dict[str, tuple[frozenset, frozenset]]:
    """{split: (its lower bounds, its secrets)} for validation and test (module doc)."""
    out, taken_lows, taken_secrets = {}, frozenset(), frozenset()
    for index, split in enumerate(HELD_OUT):
        rng = np.random.default_rng([int(seed), 61, index])
        lows = frozenset(spread_choice(space.low_values, _count(space.low_values), rng,
                                       taken_lows))
        secrets = frozenset(spread_choice(space.secret_values, _count(space.secret_values),
                                          rng, taken_secrets))
        out[split] = (lows, secrets)
        taken_lows, taken_secrets = taken_lows | lows, taken_secrets | secrets
    return out


def _count(values: tuple[int, ...]) -> int:
    return max(1, math.ceil(HELD_OUT_FRACTION * len(values)))


def candidates(space: GuessSpace, lows, allowed) -> list[tuple[int, int, int]]:
    """Every (low, high, secret) with low in `lows` and a secret for which
    `allowed(secret)` holds, in sorted order."""
    out = []
    for low in sorted(lows):
        for n in range(space.widths[0], space.widths[1] + 1):
            high = low + n + 1
            out += [(low, high, s) for s in range(low + 1, high) if allowed(s)]
    return out


def make_splits(space: GuessSpace, seed: int, sizes: dict[str, int]
                ) -> dict[str, list[GuessTask]]:
    """{split: tasks}: `sizes[split]` tasks dealt at random (by `seed`) from the split's
    candidates; held-out splits exactly that many (one-line error if too few), train
    at most."""
    held = held_out(space, seed)
    every_low = frozenset().union(*(lows for lows, _ in held.values()))
    every_secret = frozenset().union(*(secrets for _, secrets in held.values()))
    pools = {split: candidates(space, lows, secrets.__contains__)
             for split, (lows, secrets) in held.items()}
    pools["train"] = candidates(space, set(space.low_values) - every_low,
                                lambda s: s not in every_secret)
    out = {}
    for split, pool in pools.items():
        if split != "train" and sizes[split] > len(pool):
            raise ValueError(f"config.data: {split} asks for {sizes[split]} tasks but the "
                             f"held-out bounds and secrets allow {len(pool)}")
        order = np.random.default_rng([int(seed), 67, SPLIT_STREAMS[split]]).permutation(
            len(pool))
        out[split] = [GuessTask(f"guess/{split}/{low}_{high}_{secret}", low, high, secret)
                      for low, high, secret in (pool[i] for i in order[:sizes[split]])]
    return out


def bisect_guesses(task: GuessTask) -> list[int]:
    """The teacher's guesses until it hits the secret: the midpoint ⌊(a + b)/2⌋ of the
    open interval (a, b) the verdicts leave, starting from (low, high). At most
    ⌈log2(n + 1)⌉ guesses for n candidates."""
    a, b, guesses = task.low, task.high, []
    while True:
        guess = (a + b) // 2
        guesses.append(guess)
        if guess == task.secret:
            return guesses
        a, b = (guess, b) if guess < task.secret else (a, guess)
