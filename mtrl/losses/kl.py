"""KL estimators against a reference policy: k1, k2, k3.

For a token y_t sampled from π, let log r = log π_ref(y_t) − log π(y_t), i.e.
r = π_ref/π. Estimators of KL(π ‖ π_ref) from that one sample (Schulman,
"Approximating KL divergence", 2020):

    k1 = −log r                    unbiased, high variance, can be negative
    k2 = ½ (log r)²                biased (low for small KL), low variance, ≥ 0
    k3 = r − log r − 1             unbiased, low variance, ≥ 0

Worked check: π = 0.5, π_ref = 0.25 → k1 = 0.693147, k2 = 0.240227, k3 = 0.193147.

Which divergence an estimator optimises depends on where it goes (KL_PLACEMENTS;
docs/methods.md has the table). In the loss (β·k_t per token, GRPO's place, Shao
et al. 2024) the sample y is not differentiated, so the expected gradient is
E_π[∇k]: k1 gives E_π[∇log π] = 0, k2 gives ∇KL(π‖π_ref), k3 gives
∇KL(π_ref‖π). In the reward (R ← R − β·Σ_t k_t, then the policy gradient;
Ziegler et al. 2019) the gradient is E_π[k·∇log π]: k1 gives ∇KL(π‖π_ref), while
k2 and k3 give differences of gradients that are no divergence's (near π_ref
they nearly cancel, far from it they push away). `check_kl_placement` refuses
the three that regularise nothing.

Numerics: log r is clipped to ±LOG_RATIO_LIMIT (20) before exp, so k3 cannot
overflow in float32; the clip also applies to k1 and k2 so the three
estimators see the same log-ratio, and a token beyond the clip gets no
gradient. Computation is in float32.

All estimators take arrays of any one shape (the per-token [L] arrays of a
sequence, or [B, L]) and are elementwise, hence jit- and vmap-safe.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import jax
import jax.numpy as jnp

from mtrl.config.fields import check_choice
from mtrl.losses.checks import check_bool, check_floating, check_shapes
from mtrl.losses.interface import LOG_RATIO_LIMIT
from mtrl.losses.masked import masked_mean, masked_sum
from mtrl.registry import Registry

KLEstimatorFn = Callable[[jax.Array, jax.Array], jax.Array]
KL_ESTIMATORS: Registry[KLEstimatorFn] = Registry("KL estimator")

SEQUENCE_REDUCTIONS = ("sum", "mean")


def _log_ratio(logp: jax.Array, ref_logp: jax.Array) -> jax.Array:
    """clip(log π_ref − log π, ±LOG_RATIO_LIMIT) in float32, after shape checks."""
    if jnp.shape(logp) != jnp.shape(ref_logp):
        raise ValueError(f"logp has shape {jnp.shape(logp)} but ref_logp has shape "
                         f"{jnp.shape(ref_logp)}; they must match")
    check_floating("logp", logp)
    check_floating("ref_logp", ref_logp)
    log_r = jnp.asarray(ref_logp, jnp.float32) - jnp.asarray(logp, jnp.float32)
    return jnp.clip(log_r, -LOG_RATIO_LIMIT, LOG_RATIO_LIMIT)


@KL_ESTIMATORS.register("k1")
def kl_k1(logp: jax.Array, ref_logp: jax.Array) -> jax.Array:
    """k1 = −log r = log π − log π_ref per token."""
    return -_log_ratio(logp, ref_logp)


@KL_ESTIMATORS.register("k2")
def kl_k2(logp: jax.Array, ref_logp: jax.Array) -> jax.Array:
    """k2 = ½ (log r)² per token."""
    return 0.5 * jnp.square(_log_ratio(logp, ref_logp))


@KL_ESTIMATORS.register("k3")
def kl_k3(logp: jax.Array, ref_logp: jax.Array) -> jax.Array:
    """k3 = r − log r − 1 per token, r = π_ref/π."""
    log_r = _log_ratio(logp, ref_logp)
    # expm1 keeps precision when r ≈ 1, where k3 ≈ ½(log r)² is tiny.
    return jnp.expm1(log_r) - log_r


def masked_kl(logp: jax.Array, ref_logp: jax.Array, mask: jax.Array, estimator: str = "k3") -> jax.Array:
    """Per-token KL estimate where mask is true, exactly 0 (and no gradient) elsewhere.

    Inputs outside the mask are zeroed before the estimator runs, so whatever
    sits there (environment tokens, padding, inf) cannot reach the result.
    """
    if not jnp.shape(logp) == jnp.shape(ref_logp) == jnp.shape(mask):
        raise ValueError(f"logp {jnp.shape(logp)}, ref_logp {jnp.shape(ref_logp)} and mask "
                         f"{jnp.shape(mask)} must have one shape")
    check_bool("mask", mask)
    fn = KL_ESTIMATORS.get(estimator)
    safe_logp = jnp.where(mask, jnp.asarray(logp, jnp.float32), 0.0)
    safe_ref = jnp.where(mask, jnp.asarray(ref_logp, jnp.float32), 0.0)
    return jnp.where(mask, fn(safe_logp, safe_ref), 0.0)


def sequence_kl(logp_t: jax.Array, ref_logp_t: jax.Array, mask_t: jax.Array, *,
                estimator: str = "k1", reduction: str = "sum") -> jax.Array:
    """One sequence's KL estimate: Σ_t (or mean_t) of k(logp_t, ref_logp_t) over valid tokens.

    This is the per-sequence quantity for a reward penalty r ← r − β·KL
    (Ziegler et al. 2019; Ouyang et al. 2022 use the k1 sum). Takes [L]
    arrays; vmap over sequences. `reduction="mean"` divides by max(n_valid, 1).
    """
    check_shapes("[L]", logp_t=logp_t, ref_logp_t=ref_logp_t, mask_t=mask_t)
    check_choice("reduction", reduction, SEQUENCE_REDUCTIONS)
    kl_t = masked_kl(logp_t, ref_logp_t, mask_t, estimator)
    if reduction == "sum":
        return masked_sum(kl_t, mask_t)
    return masked_mean(kl_t, mask_t)


# (estimator, place) -> (the expected gradient a descent step follows, per unit β, on
# on-policy samples; whether that regularises towards π_ref). Checked exactly on a
# categorical in tests/losses/test_kl_placement.py.
KL_PLACEMENTS = {
    ("k1", "loss"): ("0", False),
    ("k2", "loss"): ("grad KL(pi||ref)", True),
    ("k3", "loss"): ("grad KL(ref||pi)", True),
    ("k1", "reward"): ("grad KL(pi||ref)", True),
    ("k2", "reward"): ("grad E_pi[k2] - grad KL(pi||ref)", False),
    ("k3", "reward"): ("grad KL(pi||ref) - grad KL(ref||pi)", False),
}
# Where loss.kl_coef's penalty may go (config.loss.kl_in), from the table above.
KL_PLACES = tuple(sorted({place for _, place in KL_PLACEMENTS}))
_PLACE_FIX = {"loss": "use k3 (KL(ref||pi)) or k2 (KL(pi||ref)) in the loss, or k1 in the reward",
              "reward": "use k1 in the reward (KL(pi||ref)), or k2 / k3 in the loss"}


def check_kl_placement(estimator: str, place: str, coef: float) -> None:
    """One-line ValueError when a KL term with coef > 0 would regularise nothing.

    place: "loss" (β·k per token in the loss) or "reward" (β·Σ k off the return).
    With coef 0 nothing is optimised (the KL is only reported), so anything goes.
    """
    if (estimator, place) not in KL_PLACEMENTS:
        raise ValueError(f"no KL placement ({estimator!r}, {place!r}); valid: "
                         f"{sorted(KL_PLACEMENTS)}")
    gradient, regularises = KL_PLACEMENTS[(estimator, place)]
    if coef > 0 and not regularises:
        raise ValueError(f"{estimator!r} in the {place} regularises nothing (its expected "
                         f"gradient is {gradient}); {_PLACE_FIX[place]}")


@dataclasses.dataclass(frozen=True)
class KLPenaltyConfig:
    """A KL term β·k(π, π_ref) added per token to the policy loss (before aggregation).

    estimator: a name in KL_ESTIMATORS ("k3" is GRPO's choice).
    coef: β ≥ 0; 0 disables the term (the KL is still reported when a
      reference is given).
    """

    estimator: str = "k3"
    coef: float = 0.0

    def __post_init__(self):
        check_choice("KLPenaltyConfig.estimator", self.estimator, KL_ESTIMATORS)
        if not self.coef >= 0.0:
            raise ValueError(f"KLPenaltyConfig.coef must be >= 0, got {self.coef}")
