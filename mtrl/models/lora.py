"""Low-rank adapters (LoRA; Hu et al. 2021, "LoRA: Low-Rank Adaptation of Large Language
Models") on the decoder's attention and MLP projections.

A targeted projection keeps its frozen kernel W [in, out] (and bias b) and adds a trained
low-rank update:

    y = x·W + b + s · (x·A)·B,     A [in, r],  B [r, out],  s = alpha / r

B starts at 0, so an adapted model starts as its base, bit for bit (x·A·0 adds exact
zeros); A starts uniform in ±1/√in (PEFT's default, kaiming-uniform with a = √5), so the
first gradient reaches B. The merged weights of the same function are W + s·A·B
(adapters.py `merged_state`: what the Hugging Face export writes).

The factors are `LoRAParam`s (a Param subclass), so `nnx.split(model, LoRAParam, ...)`
separates the trained adapters from the frozen base. They are stored in float32 whatever
the base's storage dtype: they are their own optimizer master copy (tiny next to the
base) and a bf16 factor would round small updates away; the product runs in the
projection's compute dtype. `ModelConfig.lora` chooses the targets (layers.py builds a
LoRALinear, lora_linear.py, for each); adapters.py builds an adapted model from a base one.
"""

from __future__ import annotations

import dataclasses
import math

from flax import nnx

# The projections an adapter can sit on (Hugging Face names, as in the parameter paths).
ATTENTION_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj")
MLP_TARGETS = ("gate_proj", "up_proj", "down_proj")
TARGETS = ATTENTION_TARGETS + MLP_TARGETS
TARGET_GROUPS = {"all": TARGETS, "attention": ATTENTION_TARGETS, "mlp": MLP_TARGETS}


def _target_names(targets) -> tuple[str, ...]:
    """A group name ("all" | "attention" | "mlp"), a comma-separated string of
    projections and groups, or a sequence of them -> projection names in TARGETS order."""
    items = targets.split(",") if isinstance(targets, str) else list(targets)
    names = set()
    for item in items:
        if not isinstance(item, str):
            raise ValueError(f"targets must be projection names, got {targets!r}")
        item = item.strip()
        if item in TARGET_GROUPS:
            names.update(TARGET_GROUPS[item])
        elif item in TARGETS:
            names.add(item)
        else:
            raise ValueError(f"targets: unknown {item!r}; valid: {sorted(TARGET_GROUPS)} "
                             f"or projections {list(TARGETS)}")
    if not names:
        raise ValueError(f"targets must name at least one projection, got {targets!r}")
    return tuple(t for t in TARGETS if t in names)


@dataclasses.dataclass(frozen=True)
class LoRAConfig:
    """Adapters of rank `rank` (0: none, full fine-tuning) with scale alpha / rank on the
    projections `targets` (a group "all" | "attention" | "mlp", comma-separated names,
    or a sequence; stored as a tuple of projection names). Hashable: part of the
    ModelConfig that jitted functions take as a static argument."""

    rank: int = 0
    alpha: float = 16.0
    targets: tuple[str, ...] | str = "all"

    def __post_init__(self):
        if isinstance(self.rank, bool) or not isinstance(self.rank, int) or self.rank < 0:
            raise ValueError(f"rank must be an int >= 0 (0: no adapters), got {self.rank!r}")
        if isinstance(self.alpha, bool) or not isinstance(self.alpha, (int, float)) or \
                not (math.isfinite(self.alpha) and self.alpha > 0):
            raise ValueError(f"alpha must be a finite number > 0, got {self.alpha!r}")
        object.__setattr__(self, "alpha", float(self.alpha))
        object.__setattr__(self, "targets", _target_names(self.targets))

    @property
    def enabled(self) -> bool:
        return self.rank > 0

    @property
    def scale(self) -> float:
        """s = alpha / rank, the factor of the low-rank product."""
        if not self.enabled:
            raise ValueError("LoRAConfig.scale: rank is 0 (no adapters)")
        return self.alpha / self.rank


class LoRAParam(nnx.Param):
    """A low-rank adapter factor (A or B): under LoRA the only trained parameters."""


def adapter_targets(config, name: str) -> bool:
    """Whether the projection `name` of a model with ModelConfig `config` carries an
    adapter."""
    lora = config.lora
    return lora is not None and lora.enabled and name in lora.targets
