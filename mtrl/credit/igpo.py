"""IGPO: information-gain turn rewards and discounted turn advantages.

IGPO (Wang et al. 2025, "Information Gain-based Policy Optimization: A Simple and
Effective Approach for Multi-Turn LLM Agents"). After each turn the policy scores the
ground-truth answer a = (a_1..a_L) given the history so far; the caller passes the
mean log-probability m_t = (1/L) Σ_j log π(a_j | q, o_≤t, a_<j) for t = 0..K, where
m_0 is scored on the prompt alone. Turn rewards:

  r_t = IG_t = p_t − p_{t−1}    with p_t = exp(m_t)    (gain="prob", the paper's)
  r_t = m_t − m_{t−1}                                   (gain="logprob")
  r_n = outcome                 for the final present turn n (e.g. F1 or 0/1)

Normalization within the group of G trajectories: "joint" z-scores every present
turn reward of the group together (the paper's); "separate" z-scores the
information-gain rewards and the outcome rewards as two groups. Both use the GRPO
convention (r − mean) / (std + ε) with `ddof` (default 1) and ε = 1e-6 added to the
std. The turn advantage is the discounted sum of normalized rewards from that turn on,
Ã_t = Σ_{k ≥ t} γ^(k−t) A_k (γ = 1 by default).
"""

from __future__ import annotations

from typing import Callable, Optional

import jax
import jax.numpy as jnp

from mtrl.config.fields import check_choice
from mtrl.credit.group import DEFAULT_GRPO_DDOF, DEFAULT_GRPO_EPSILON, as_float, grpo_advantages
from mtrl.credit.turn_level import discounted_returns
from mtrl.registry import Registry

Array = jax.Array

INFORMATION_GAINS: Registry[Callable[[Array], Array]] = Registry("information gain")
IGPO_NORMALIZATIONS = ("joint", "separate")


def _check_mean_logprob(mean_logprob) -> Array:
    """One trajectory's mean log-probs: float [K+1] with K >= 1 (index 0: before turn 1)."""
    mean_logprob = as_float(mean_logprob)
    if mean_logprob.ndim != 1 or mean_logprob.shape[0] < 2:
        raise ValueError(f"mean_logprob must have shape [K+1] with K >= 1 (index 0: before "
                         f"the first turn), got {mean_logprob.shape}; vmap over trajectories")
    return mean_logprob


@INFORMATION_GAINS.register("prob")
def probability_gain(mean_logprob: Array) -> Array:
    """IG_t = exp(m_t) − exp(m_{t−1}): [K+1] mean log-probs → [K] (IGPO, the paper's gain)."""
    p = jnp.exp(_check_mean_logprob(mean_logprob))
    return p[1:] - p[:-1]


@INFORMATION_GAINS.register("logprob")
def logprob_gain(mean_logprob: Array) -> Array:
    """m_t − m_{t−1}: [K+1] mean log-probs → [K] differences of mean log-probs."""
    mean_logprob = _check_mean_logprob(mean_logprob)
    return mean_logprob[1:] - mean_logprob[:-1]


def final_turn_mask(turn_mask) -> Array:
    """bool [K]: true only at the last present turn (all false if none is present)."""
    turn_mask = jnp.asarray(turn_mask).astype(bool)
    if turn_mask.ndim != 1:
        raise ValueError(f"turn_mask must have shape [K], got {turn_mask.shape}")
    index = jnp.arange(turn_mask.shape[0])
    last = jnp.max(jnp.where(turn_mask, index, -1))
    return index == last


def igpo_turn_rewards(truth_logprob, outcome, turn_mask: Optional[Array] = None, *,
                      gain: str = "prob") -> Array:
    """One trajectory's turn rewards [K] from truth_logprob [K+1] and a scalar outcome.

    Non-final present turns get the information gain, the final present turn gets
    `outcome`, absent turns get 0.
    """
    truth_logprob, outcome = as_float(truth_logprob), as_float(outcome)
    if truth_logprob.ndim != 1 or truth_logprob.shape[0] < 2:
        raise ValueError(f"truth_logprob must have shape [K+1] with K >= 1 (index 0: "
                         f"before the first turn), got {truth_logprob.shape}")
    if outcome.ndim != 0:
        raise ValueError(f"outcome must be a scalar per trajectory, got {outcome.shape}")
    num_turns = truth_logprob.shape[0] - 1
    mask = (jnp.ones(num_turns, bool) if turn_mask is None
            else jnp.asarray(turn_mask).astype(bool))
    if mask.shape != (num_turns,):
        raise ValueError(f"turn_mask must have shape [{num_turns}], got {mask.shape}")
    gains = INFORMATION_GAINS.get(gain)(truth_logprob)
    final = final_turn_mask(mask)
    return jnp.where(final, outcome, jnp.where(mask, gains, 0.0))


def igpo_advantages(truth_logprob, outcome, turn_mask: Optional[Array] = None, *,
                    gain: str = "prob", normalization: str = "joint", gamma=1.0,
                    ddof: int = DEFAULT_GRPO_DDOF,
                    epsilon: float = DEFAULT_GRPO_EPSILON) -> Array:
    """IGPO turn advantages of a group: [G, K+1], [G], [G, K] → [G, K] (0 on absent turns)."""
    check_choice("normalization", normalization, IGPO_NORMALIZATIONS)
    truth_logprob, outcome = as_float(truth_logprob), as_float(outcome)
    if truth_logprob.ndim != 2 or outcome.shape != truth_logprob.shape[:1]:
        raise ValueError(f"truth_logprob must be [G, K+1] and outcome [G], got "
                         f"{truth_logprob.shape} and {outcome.shape}")
    group, num_turns = truth_logprob.shape[0], truth_logprob.shape[1] - 1
    mask = (jnp.ones((group, num_turns), bool) if turn_mask is None
            else jnp.asarray(turn_mask).astype(bool))
    if mask.shape != (group, num_turns):
        raise ValueError(f"turn_mask must have shape [{group}, {num_turns}], got {mask.shape}")

    rewards = jax.vmap(lambda m, o, k: igpo_turn_rewards(m, o, k, gain=gain))(
        truth_logprob, outcome, mask)
    final = jax.vmap(final_turn_mask)(mask) & mask

    def normalize(within: Array) -> Array:
        flat = grpo_advantages(rewards.reshape(-1), within.reshape(-1), ddof=ddof,
                               epsilon=epsilon)
        return flat.reshape(rewards.shape)

    if normalization == "joint":
        normalized = normalize(mask)
    else:
        normalized = jnp.where(final, normalize(final), normalize(mask & ~final))
    return jax.vmap(lambda a, m: discounted_returns(a, m, gamma))(normalized, mask)
