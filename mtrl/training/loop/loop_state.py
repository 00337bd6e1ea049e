"""The loop's own state, one typed value passed from step to step beside the train state.

    LoopState(step, run_seconds, sft_minutes, post_sft, band, config, code_at_start,
              warm_start, lora_base, compiled)
    state.extra()              -> the checkpoint's `extra` dict (JSON data)
    LoopState.from_extra(d)    <- a restored checkpoint's

A checkpoint stores it as its `extra` with the keys it always had (`step`,
`run_seconds`, `sft_minutes`, `config`, `post_sft_success` and `post_sft_<metric>`,
`band` when the learnable band is on, the provenance's `code_at_start` and
`warm_start`, LoRA's `lora_base`: checkpoints/base_record.py EXTRA_KEY) and
`compiled_shapes`, the shapes the sampler and the update have compiled
(compiled_shapes.py), so checkpoints written before this type restore unchanged (one
without `compiled_shapes` resumes padding as it did before it).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from mtrl.training.checkpoints.base_record import EXTRA_KEY

POST_SFT = "post_sft_"
CODE_AT_START, WARM_START = "code_at_start", "warm_start"
COMPILED = "compiled_shapes"


@dataclasses.dataclass(frozen=True)
class LoopState:
    step: int  # the last RL step done (0: the warm start)
    run_seconds: float  # the whole run's time at that step, across invocations
    sft_minutes: float  # the warm start's time
    post_sft: Mapping[str, float]  # "post_sft_success" and "post_sft_<metric>" numbers
    band: dict | None = None  # the band sampler's state (grow/curriculum.py); None: off
    config: dict | None = None  # the run's config record (config.json)
    # Provenance (run/provenance.py): the code at the run's start and its warm start.
    code_at_start: dict | None = None
    warm_start: dict | None = None
    lora_base: dict | None = None  # LoRA: the base the adapters belong to (base_record.py)
    # The sampler's shapes and the update's layouts met so far (compiled_shapes.py);
    # None: not recorded (a checkpoint from before the record, or several processes).
    compiled: dict | None = None

    def extra(self) -> dict[str, Any]:
        """The checkpoint's extra (module docstring)."""
        out: dict[str, Any] = {"step": self.step, "sft_minutes": self.sft_minutes,
                               "run_seconds": self.run_seconds, **self.post_sft}
        if self.config is not None:
            out["config"] = self.config
        if self.band is not None:
            out["band"] = self.band
        for key, value in ((CODE_AT_START, self.code_at_start), (WARM_START, self.warm_start),
                           (EXTRA_KEY, self.lora_base), (COMPILED, self.compiled)):
            if value is not None:
                out[key] = value
        return out

    @classmethod
    def from_extra(cls, extra: Mapping[str, Any]) -> "LoopState":
        return cls(step=int(extra["step"]), run_seconds=float(extra.get("run_seconds", 0.0)),
                   sft_minutes=float(extra.get("sft_minutes", 0.0)),
                   post_sft={k: v for k, v in extra.items() if k.startswith(POST_SFT)},
                   band=extra.get("band"), config=extra.get("config"),
                   code_at_start=extra.get(CODE_AT_START), warm_start=extra.get(WARM_START),
                   lora_base=extra.get(EXTRA_KEY), compiled=extra.get(COMPILED))

    def after(self, step: int, run_seconds: float, band: dict | None) -> "LoopState":
        """This state once RL step `step` is done."""
        return dataclasses.replace(self, step=step, run_seconds=run_seconds, band=band)

    def with_compiled(self, compiled: dict | None) -> "LoopState":
        """This state with the compiled shapes now (taken after a step's evaluation,
        whose sampler calls count)."""
        return dataclasses.replace(self, compiled=compiled)
