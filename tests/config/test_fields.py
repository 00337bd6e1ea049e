"""build_all: every independent field error at once, and none that only the fallback to
a refused field's default caused."""

import dataclasses

from mtrl.config import build_all


@dataclasses.dataclass(frozen=True)
class Schedule:
    steps: int = 4
    warmup_steps: int = 0
    rate: float = 1.0

    def __post_init__(self):
        if self.steps < 1:
            raise ValueError(f"steps must be >= 1, got {self.steps}")
        if self.rate <= 0:
            raise ValueError(f"rate must be > 0, got {self.rate}")
        if not self.warmup_steps < self.steps:
            raise ValueError(f"warmup_steps must lie in [0, steps={self.steps}), "
                             f"got {self.warmup_steps}")


def test_independent_errors_are_all_reported():
    built, lines = build_all(Schedule, "sched", steps=0, rate=-1.0)
    assert built is None
    assert lines == ["config.sched.steps: must be >= 1, got 0",
                     "config.sched.rate: must be > 0, got -1.0"]


def test_an_error_caused_by_a_refused_fields_default_is_not_reported():
    # steps=-1 is refused and falls back to 4, which warmup_steps=6 then exceeds: the
    # user asked for steps=-1, not 4, so only the first line is theirs.
    built, lines = build_all(Schedule, "sched", steps=-1, warmup_steps=6)
    assert built is None
    assert lines == ["config.sched.steps: must be >= 1, got -1"]


def test_a_cross_field_error_on_its_own_is_reported():
    built, lines = build_all(Schedule, "sched", steps=5, warmup_steps=6)
    assert built is None and len(lines) == 1 and "warmup_steps" in lines[0]
    assert build_all(Schedule, "sched", steps=5, warmup_steps=2) == (Schedule(5, 2), [])
