"""The common contract of the policy losses and their registry.

Every registered policy loss has the signature

    fn(inputs: PolicyLossInputs, config) -> PolicyLossOutput

with [B, L] fields on both sides (B sequences of L token positions). A loss
returns *per-token* losses, never a scalar: the reduction to a scalar is a
separate, named choice (mtrl.losses.aggregation), so that loss and aggregation
are orthogonal. Each loss docstring says which aggregation reproduces its
paper's objective exactly.

Internally each token-level loss is written for one sequence ([L] arrays, the
`*_sequence_loss` functions) and vmapped over B; REFUEL is written for one pair
of sequences. The batch functions run under jax.jit and jax.vmap (an extra
leading axis, e.g. agents, is vmapped by the caller). Configs are hashable
frozen dataclasses: close over them or pass them as static arguments.

Conventions:
  * A position contributes to a loss, its gradient and its metrics only where
    `mask` is true. Inputs are replaced by zeros outside the mask *before* any
    arithmetic, so anything there (huge values, inf) changes nothing.
  * Log-ratios log π − log π_old are clipped to ±LOG_RATIO_LIMIT before exp:
    exp(20) ≈ 4.9e8 stays far from float32 overflow (exp(88.7)), and a token
    that far off-policy has its gradient zeroed by the clip instead of
    producing inf. Computation is in float32 even for bfloat16 log-probs.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping

import flax.struct
import jax
import jax.numpy as jnp

from mtrl.config.fields import check_bool as check_flag, check_int
from mtrl.config.options import OptionsDecl
from mtrl.losses.checks import check_bool, check_floating, check_integer, check_shapes
from mtrl.registry import Registry

# Bound on |log π − log π_old| before exponentiation (see module docstring).
LOG_RATIO_LIMIT = 20.0


@flax.struct.dataclass
class PolicyLossInputs:
    """What a policy loss reads, for B sequences of L positions."""

    logp: jax.Array  # [B, L] float: log π_θ(y_t | ·) of the sampled tokens; differentiated
    old_logp: jax.Array  # [B, L] float: log π_old(y_t | ·) recorded when sampling
    advantages: jax.Array  # [B, L] float: A_t, the sequence's (or turn's) advantage per token
    mask: jax.Array  # [B, L] bool: the policy tokens that are trained
    turn_ids: jax.Array | None = None  # [B, L] int: turn of each token, -1 off-policy (turn-ratio)


@flax.struct.dataclass
class PolicyLossOutput:
    """Per-token losses plus the per-token pieces of the metrics ([B, L] or [L])."""

    loss: jax.Array  # [..., L] float32: per-token loss, 0 outside `mask`
    mask: jax.Array  # [..., L] bool: positions the loss covers; aggregate with this mask
    ratio: jax.Array  # [..., L] float32: importance ratio in the objective (π/π_old for
    #                   REINFORCE and REFUEL, which use none), no gradient; 1 outside `mask`
    clipped_low: jax.Array  # [..., L] bool: the lower clip zeroes this token's gradient
    clipped_high: jax.Array  # [..., L] bool: the upper clip zeroes this token's gradient
    dual_clipped: jax.Array  # [..., L] bool: the dual clip (A < 0) zeroes it
    approx_kl: jax.Array  # [..., L] float32: (r − 1) − log r with r = π/π_old, no gradient


@dataclasses.dataclass(frozen=True, kw_only=True)
class PolicyLoss:
    """A registry entry: the batch loss function and the traits its consumers read.

    Every trait is required, so a new loss says each one where it is registered and
    no consumer keeps a list of loss names (CONTRIBUTING.md, "How to add a loss"):

      options           the loss's frozen config dataclass with its own defaults
                        (PolicyObjectiveConfig.loss_config); its fields are the
                        config.loss fields it owns (mtrl/config/options.py: one set
                        under another loss is refused), named in the config as
                        `config_names` says ({option field: config field}); the
                        `context` fields are filled from the run (turn-ratio's
                        num_turns = rollout.num_turns).
      aggregation       the AGGREGATIONS name of its paper's objective, used when
                        config.loss.aggregation is unset.
      advantage_linear  ℓ_t and ∇ℓ_t are 0 at any ratio wherever A_t = 0, so rows
                        whose advantage is 0 can be left out of the packed forward
                        (train_step.zero_advantage_is_exact).
      group_size        consecutive rows that form one unit of the loss (REFUEL: 2,
                        a pair of siblings); they are shuffled, filtered and split
                        into minibatches together (training/update/row_groups.py).
      needs_unscaled_returns  it regresses on return differences (REFUEL), so the
                        credit estimator's returns must be unscaled (the estimator's
                        own trait, training/advantages/registry.py).

    `clipped` is derived, not declared: whether its options hold PPO's clip settings
    (CLIP_SETTINGS); setting them under a loss whose options lack them is refused
    like any option the selected loss does not own.
    """

    fn: Callable[[PolicyLossInputs, Any], PolicyLossOutput]
    options: type
    aggregation: str
    advantage_linear: bool
    group_size: int
    needs_unscaled_returns: bool
    config_names: Mapping[str, str] = dataclasses.field(default_factory=dict)
    context: tuple[str, ...] = ()

    def __post_init__(self):
        if not dataclasses.is_dataclass(self.options):
            raise ValueError(f"PolicyLoss.options must be a config dataclass, got {self.options!r}")
        self.options_decl  # the names it maps are fields of its options
        check_flag("PolicyLoss.advantage_linear", self.advantage_linear)
        check_int("PolicyLoss.group_size", self.group_size, 1)
        check_flag("PolicyLoss.needs_unscaled_returns", self.needs_unscaled_returns)


    @property
    def options_decl(self) -> OptionsDecl:
        return OptionsDecl(self.options, dict(self.config_names), tuple(self.context))

    @property
    def clipped(self) -> bool:
        """Whether it takes PPO's clip settings: its options hold CLIP_SETTINGS."""
        return set(CLIP_SETTINGS) <= {f.name for f in dataclasses.fields(self.options)}


# The option fields of a loss with PPO's clip (eps_low, eps_high, dual_clip).
CLIP_SETTINGS = ("eps_low", "eps_high", "dual_clip")

# One module per loss, whose import registers it (mtrl/registry.py).
POLICY_LOSSES: Registry[PolicyLoss] = Registry("policy loss", modules=(
    "mtrl.losses.reinforce",
    "mtrl.losses.ppo",
    "mtrl.losses.gspo",
    "mtrl.losses.turn_ratio",
    "mtrl.losses.refuel",
))


def loss_options() -> dict[str, OptionsDecl]:
    """{loss: its options declaration}: the config.loss fields the losses own."""
    return {n: POLICY_LOSSES.get(n).options_decl for n in POLICY_LOSSES.names()}


def check_policy_inputs(inputs: PolicyLossInputs, needs_turn_ids: bool = False) -> tuple[int, int]:
    """Validates [B, L] inputs and returns (B, L)."""
    arrays = dict(logp=inputs.logp, old_logp=inputs.old_logp, advantages=inputs.advantages,
                  mask=inputs.mask)
    if needs_turn_ids:
        if inputs.turn_ids is None:
            raise ValueError("this loss needs PolicyLossInputs.turn_ids ([B, L] int)")
        arrays["turn_ids"] = inputs.turn_ids
    batch, length = check_shapes("[B, L]", **arrays)
    check_sequence_dtypes(inputs.logp, inputs.old_logp, inputs.advantages, inputs.mask)
    if needs_turn_ids:
        check_integer("turn_ids", inputs.turn_ids)
    return batch, length


def check_sequence_dtypes(logp_t, old_logp_t, advantage_t, mask_t) -> None:
    check_floating("logp", logp_t)
    check_floating("old_logp", old_logp_t)
    check_floating("advantages", advantage_t)
    check_bool("mask", mask_t)


def masked_float32(x_t: jax.Array, mask_t: jax.Array) -> jax.Array:
    """x in float32 with zeros outside the mask (before any arithmetic touches it)."""
    return jnp.where(mask_t, x_t.astype(jnp.float32), 0.0)


def safe_log_ratio(logp_t: jax.Array, old_logp_t: jax.Array, mask_t: jax.Array) -> jax.Array:
    """clip(log π − log π_old, ±LOG_RATIO_LIMIT) on valid tokens, 0 elsewhere (float32)."""
    log_ratio = masked_float32(logp_t, mask_t) - masked_float32(old_logp_t, mask_t)
    return jnp.clip(log_ratio, -LOG_RATIO_LIMIT, LOG_RATIO_LIMIT)


def ratio_diagnostics(log_ratio_t: jax.Array, mask_t: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(ratio, approx_kl) per token, without gradient.

    ratio = exp(log r); approx_kl = (r − 1) − log r, the k3 estimator of
    KL(π_old ‖ π) from tokens sampled by π_old (Schulman, "Approximating KL
    divergence", 2020): non-negative, unbiased, low variance. Both are neutral
    (1 and 0) outside the mask.
    """
    log_ratio = jax.lax.stop_gradient(jnp.where(mask_t, log_ratio_t, 0.0))
    ratio = jnp.exp(log_ratio)
    approx_kl = jnp.where(mask_t, (ratio - 1.0) - log_ratio, 0.0)
    return ratio, approx_kl


def unclipped_output(loss_t: jax.Array, mask_t: jax.Array, log_ratio_t: jax.Array) -> PolicyLossOutput:
    """Output of a loss that has no clipping (REINFORCE, REFUEL): all clip flags false."""
    ratio, approx_kl = ratio_diagnostics(log_ratio_t, mask_t)
    no_clip = jnp.zeros(jnp.shape(mask_t), jnp.bool_)
    return PolicyLossOutput(loss=jnp.where(mask_t, loss_t, 0.0), mask=mask_t, ratio=ratio,
                            clipped_low=no_clip, clipped_high=no_clip, dual_clipped=no_clip,
                            approx_kl=approx_kl)
