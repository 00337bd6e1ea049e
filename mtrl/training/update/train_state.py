"""The RL train state: parameters, optimizer state and reference parameters of N agents.

Two layouts (`agent_params` in the experiment config):

  separate  every leaf of params / opt_state / ref_params carries a leading agent axis
            of size N (the agents' trees stacked with jnp.stack); the train step vmaps
            over it, so each agent has its own weights and its own AdamW moments.
  shared    one copy of each, used by every agent (one gradient per step).

ref_params is a frozen copy of the initial parameters for the KL-to-reference term, or
None when no KL is used (no second copy of the weights is held).

Ownership: the train step donates the state's buffers. `init_train_state` therefore
copies its inputs (they stay usable, e.g. by a sampler), and the trees returned by
`agent_params` must be re-read after every train step (in shared mode they are the
state's own buffers, which the next step donates).
"""

from __future__ import annotations

from typing import Any, Sequence

import flax.struct
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx


@flax.struct.dataclass
class TrainState:
    """Device state of the RL update (a pytree; num_agents and shared are static)."""

    step: jax.Array  # [] int32: optimizer updates applied so far (skipped steps excluded)
    params: nnx.State  # separate: [N, ...] per leaf; shared: the model's shapes
    opt_state: optax.OptState  # separate: [N, ...] per leaf; shared: one optimizer state
    ref_params: nnx.State | None  # laid out like params; None when no reference is kept
    num_agents: int = flax.struct.field(pytree_node=False)
    shared: bool = flax.struct.field(pytree_node=False)


def _same_values(a: Any, b: Any) -> bool:
    if jax.tree.structure(a) != jax.tree.structure(b):
        return False
    return all(np.array_equal(np.asarray(x), np.asarray(y))
               for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))


def init_train_state(params_per_agent: Sequence[nnx.State], optimizer: optax.GradientTransformation,
                     *, shared: bool, keep_reference: bool) -> TrainState:
    """A TrainState at step 0 for N = len(params_per_agent) agents.

    Args:
      params_per_agent: N parameter states (nnx.split(model)[1]) of one structure. In
        shared mode they must all hold the same values (e.g. `[params] * N`); the
        first is used.
      optimizer: the transformation the train step applies (make_optimizer).
      shared: one parameter copy for all agents instead of N stacked copies.
      keep_reference: keep a frozen copy of the parameters for the KL term (set it
        when the objective's KL coefficient is > 0).

    The inputs are copied, never donated: they remain valid.
    """
    params_per_agent = list(params_per_agent)
    if not params_per_agent:
        raise ValueError("params_per_agent must hold at least one agent's parameters")
    structure = jax.tree.structure(params_per_agent[0])
    for a, params in enumerate(params_per_agent[1:], start=1):
        if jax.tree.structure(params) != structure:
            raise ValueError(f"agent {a}'s parameters differ in structure from agent 0's")
        shapes = [(x.shape, x.dtype) for x in jax.tree.leaves(params)]
        if shapes != [(x.shape, x.dtype) for x in jax.tree.leaves(params_per_agent[0])]:
            raise ValueError(f"agent {a}'s parameter shapes/dtypes differ from agent 0's")
    num_agents = len(params_per_agent)
    if shared:
        first = params_per_agent[0]
        for a, params in enumerate(params_per_agent[1:], start=1):
            if params is not first and not _same_values(params, first):
                raise ValueError(f"shared parameters: agent {a}'s initial values differ from "
                                 "agent 0's; pass the same state for every agent")
        params = jax.tree.map(jnp.copy, first)
        opt_state = optimizer.init(params)
    else:
        params = jax.tree.map(lambda *xs: jnp.stack(xs), *params_per_agent)
        opt_states = [optimizer.init(p) for p in params_per_agent]
        opt_state = jax.tree.map(lambda *xs: jnp.stack(xs), *opt_states)
    ref_params = jax.tree.map(jnp.copy, params) if keep_reference else None
    return TrainState(step=jnp.zeros((), jnp.int32), params=params, opt_state=opt_state,
                      ref_params=ref_params, num_agents=num_agents, shared=bool(shared))


def agent_params(state: TrainState, agent: int) -> nnx.State:
    """Agent `agent`'s parameters with the model's own shapes (for the sampler).

    Separate: a fresh slice of the stacked leaves. Shared: the state's own parameter
    buffers (donated by the next train step: call again after each step).
    """
    if not 0 <= agent < state.num_agents:
        raise ValueError(f"agent must be in [0, {state.num_agents}), got {agent}")
    if state.shared:
        return state.params
    return jax.tree.map(lambda x: x[agent], state.params)
