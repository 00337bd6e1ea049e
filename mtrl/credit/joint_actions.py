"""Joint actions of N agents with G completions each, and per-agent credit.

At a tree node every agent samples G completions; the environment scores joint
actions (one completion per agent). Two pairings (docs/design.md section 2; MAGRPO /
CoMLRL, Liu et al. 2025, "LLM Collaboration with Multi-Agent Reinforcement Learning"):

  align   J = G: joint action j pairs completion j of every agent.
  cross   J = G^N, the Cartesian product in row-major order: joint j ↔ (g_1, …, g_N)
          with agent 1 the most significant digit, j = Σ_a g_a · G^(N−a).

`joint_action_index(mode, N, G)` is the [J, N] map "completion of agent a in joint
action j". Per-agent credit goes the other way: agent a's completion g collects the
values of the joint actions that contain it, summed (CoMLRL's choice) or averaged.
In `align` each completion sits in exactly one joint action, so both give the value
of joint g. The index map is a NumPy constant (it depends only on static ints), so
it can be used on the host by the rollout and baked into jitted code alike.
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from mtrl.config.fields import check_choice
from mtrl.credit.group import as_float
from mtrl.registry import Registry

Array = jax.Array

JOINT_ACTION_MODES: Registry[Callable[[int, int], np.ndarray]] = Registry("joint-action mode")
CREDIT_REDUCTIONS = ("sum", "mean")


def _check_counts(num_agents: int, num_generations: int) -> None:
    if not isinstance(num_agents, int) or num_agents < 1:
        raise ValueError(f"num_agents must be a positive int, got {num_agents!r}")
    if not isinstance(num_generations, int) or num_generations < 1:
        raise ValueError(f"num_generations must be a positive int, got {num_generations!r}")


@JOINT_ACTION_MODES.register("align")
def align_index(num_agents: int, num_generations: int) -> np.ndarray:
    """[G, N]: joint action j takes completion j of every agent."""
    return np.repeat(np.arange(num_generations, dtype=np.int32)[:, None], num_agents, axis=1)


@JOINT_ACTION_MODES.register("cross")
def cross_index(num_agents: int, num_generations: int) -> np.ndarray:
    """[G^N, N]: row j holds the base-G digits of j, agent 1 most significant."""
    joint = np.arange(num_generations ** num_agents, dtype=np.int64)
    powers = num_generations ** np.arange(num_agents - 1, -1, -1, dtype=np.int64)
    return ((joint[:, None] // powers[None, :]) % num_generations).astype(np.int32)


def joint_action_index(mode: str, num_agents: int, num_generations: int) -> np.ndarray:
    """int32 [J, N]: the completion index of agent a in joint action j (see module doc)."""
    _check_counts(num_agents, num_generations)
    return JOINT_ACTION_MODES.get(mode)(num_agents, num_generations)


def num_joint_actions(mode: str, num_agents: int, num_generations: int) -> int:
    """J: G for `align`, G^N for `cross`."""
    return int(joint_action_index(mode, num_agents, num_generations).shape[0])


def per_agent_credit(joint_values, mode: str, num_agents: int, num_generations: int,
                     reduce: str = "sum") -> Array:
    """[..., J] values of joint actions → [..., N, G] credit per agent completion.

    credit[..., a, g] = Σ_{j : index[j, a] = g} v[..., j]  (reduce="sum", CoMLRL)
                      or that sum / #{j : index[j, a] = g}  (reduce="mean")
    In `cross` the count is G^(N−1); in `align` it is 1 and credit[..., a, g] = v[..., g].
    """
    check_choice("reduce", reduce, CREDIT_REDUCTIONS)
    index = joint_action_index(mode, num_agents, num_generations)
    joint_values = as_float(joint_values)
    if joint_values.ndim < 1 or joint_values.shape[-1] != index.shape[0]:
        raise ValueError(f"joint_values must end in J={index.shape[0]} joint actions "
                         f"({mode}, N={num_agents}, G={num_generations}), got shape "
                         f"{joint_values.shape}")
    # [J, N, G] membership: which joint actions contain agent a's completion g.
    membership = index[:, :, None] == np.arange(num_generations)[None, None, :]
    # HIGHEST: a 0/1 contraction must stay exact on accelerators that default to TF32.
    credit = jnp.einsum("...j,jag->...ag", joint_values,
                        jnp.asarray(membership, joint_values.dtype),
                        precision=jax.lax.Precision.HIGHEST)
    if reduce == "mean":
        credit = credit / jnp.asarray(membership.sum(axis=0), joint_values.dtype)
    return credit
