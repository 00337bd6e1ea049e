"""A run that has stopped training says so: after STALL_STEPS RL steps in a row whose
update was skipped, one line naming the likely cause, instead of a run that goes on to
its last step and reports success as if it had trained.

An update is skipped when no group is informative (every sample of each group got the
same reward, so every advantage is 0) or no row keeps a trainable token. Many in a row
almost always mean the warm start never reaches the reward (or always does): the policy
after SFT is outside the learnable band, and RL has nothing to learn from."""

from __future__ import annotations

import dataclasses

STALL_STEPS = 10  # consecutive skipped updates before the line (once per stretch)


@dataclasses.dataclass
class StallWatch:
    """Counts consecutive skipped updates; `observe` returns the line to print when a
    stretch first reaches `limit` steps (None otherwise)."""

    limit: int = STALL_STEPS
    streak: int = 0

    def __post_init__(self):
        if self.limit < 1:
            raise ValueError(f"StallWatch.limit must be >= 1, got {self.limit}")

    def observe(self, step: int, skipped: str | None, post_sft_success: float | None
                ) -> str | None:
        """skipped: the update's reason for skipping ("update skipped: ...") or None."""
        self.streak = self.streak + 1 if skipped else 0
        if self.streak != self.limit:
            return None
        start = step - self.limit + 1
        reason = skipped.removeprefix("update skipped: ")
        band = ("" if post_sft_success is None
                else f" (validation success after the warm start: {post_sft_success:.2f})")
        return (f"RL has not trained since step {start}: {self.limit} updates in a row "
                f"skipped ({reason}). Every sample of each group got the same reward, so "
                f"the warm start is likely outside the learnable band{band}: check what "
                "SFT taught (more sft.steps, tools.sft_copy_check) or the task band "
                "(curriculum.learnable_band)")
