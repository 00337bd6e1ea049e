"""Random policy-loss batches shared by the tests of mtrl.losses."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from mtrl.losses import PolicyLossInputs, PPOClipConfig, TurnRatioConfig

NUM_TURNS = 3


def make_inputs(seed: int, batch: int = 4, length: int = 7, num_turns: int = NUM_TURNS,
                spread: float = 0.3) -> tuple[PolicyLossInputs, jnp.ndarray]:
    """A [B, L] batch with ragged masks, per-turn advantages and turn ids; plus ref log-probs.

    Row 0 always keeps at least two valid tokens; the last row is fully masked
    (a padding row) when batch > 2.
    """
    rng = np.random.default_rng(seed)
    logp = -rng.uniform(0.1, 3.0, (batch, length))
    old_logp = logp + rng.normal(0.0, spread, (batch, length))
    ref_logp = logp + rng.normal(0.0, spread, (batch, length))
    mask = rng.random((batch, length)) < 0.7
    mask[0, :2] = True
    if batch > 2:
        mask[-1] = False
    # Turns are contiguous runs of positions; environment tokens are -1.
    turn_ids = np.minimum(np.arange(length) * num_turns // length, num_turns - 1)
    turn_ids = np.where(mask, turn_ids[None, :], -1)
    advantages = rng.normal(0.0, 1.0, (batch, num_turns))[np.arange(batch)[:, None],
                                                          np.maximum(turn_ids, 0)]
    inputs = PolicyLossInputs(
        logp=jnp.asarray(logp, jnp.float32), old_logp=jnp.asarray(old_logp, jnp.float32),
        advantages=jnp.asarray(advantages, jnp.float32), mask=jnp.asarray(mask),
        turn_ids=jnp.asarray(turn_ids, jnp.int32))
    return inputs, jnp.asarray(ref_logp, jnp.float32)


def default_config(name: str):
    """A config of the registered loss `name` whose clip ranges are active on make_inputs data."""
    if name == "turn-ratio":
        return TurnRatioConfig(num_turns=NUM_TURNS, eps_low=0.1, eps_high=0.15, dual_clip=2.0)
    if name == "ppo":
        return PPOClipConfig(eps_low=0.1, eps_high=0.15, dual_clip=2.0)
    return None


@pytest.fixture
def random_inputs():
    return make_inputs


@pytest.fixture
def loss_config():
    return default_config
