"""The RL train state: parameters, optimizer state and reference parameters of N agents.

Two layouts (`agent_params` in the experiment config):

  separate  every leaf of params / opt_state / ref_params carries a leading agent axis
            of size N (the agents' trees stacked with jnp.stack); the train step vmaps
            over it, so each agent has its own weights and its own AdamW moments.
  shared    one copy of each, used by every agent (one gradient per step).

Full fine-tuning: params are the model's whole state; ref_params is a frozen copy of the
initial parameters for the KL-to-reference term, or None when no KL is used (no second
copy of the weights is held).

LoRA (`lora` set, mtrl/models/lora.py): params are the adapters only (so the optimizer
state holds moments for them alone) and ref_params is the frozen base they sit on:

    policy    = base + adapters       (agent_policy: the adapted model's state)
    reference = base alone            (agent_reference: the adapters zeroed, B·0 = 0)

so the KL reference costs no second copy of the weights. `reference` says whether the
reference's log-probabilities are computed (the KL term or its metric). A checkpoint
holds `checkpointed()`, the state without the base, which the run rebuilds from its
model and checks against the base named in the checkpoint (checkpoints/base_record.py).

Ownership: the train step donates the state's buffers except ref_params, which it only
reads. `init_train_state` therefore copies the trained inputs (they stay usable, e.g.
by a sampler) but not a LoRA base, and the trees returned by `agent_params` must be
re-read after every train step (in shared mode they are the state's own buffers, which
the next step donates).
"""

from __future__ import annotations

from typing import Any, Sequence

import flax.struct
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from mtrl.models.adapters import merged_state, with_adapters
from mtrl.models.lora import LoRAConfig


@flax.struct.dataclass
class TrainState:
    """Device state of the RL update (a pytree; num_agents and shared are static)."""

    step: jax.Array  # [] int32: optimizer updates applied so far (skipped steps excluded)
    params: nnx.State  # separate: [N, ...] per leaf; shared: the model's shapes
    opt_state: optax.OptState  # separate: [N, ...] per leaf; shared: one optimizer state
    # Full fine-tuning: laid out like params, None when no reference is kept. LoRA: the
    # frozen base (separate: [N, ...] per leaf), which is also the reference.
    ref_params: nnx.State | None
    num_agents: int = flax.struct.field(pytree_node=False)
    shared: bool = flax.struct.field(pytree_node=False)
    lora: LoRAConfig | None = flax.struct.field(pytree_node=False, default=None)
    reference: bool = flax.struct.field(pytree_node=False, default=False)  # KL to it computed

    def checkpointed(self) -> "TrainState":
        """What a checkpoint holds: the state without a LoRA base (rebuilt on restore)."""
        return self.replace(ref_params=None) if self.lora is not None else self

    def on_base(self, base: nnx.State) -> "TrainState":
        """A restored checkpointed() LoRA state with its base put back."""
        if self.lora is None:
            raise ValueError("on_base: the state has no adapters (full fine-tuning)")
        return self.replace(ref_params=base)


def _same_values(a: Any, b: Any) -> bool:
    if jax.tree.structure(a) != jax.tree.structure(b):
        return False
    return all(np.array_equal(np.asarray(x), np.asarray(y))
               for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))


def init_train_state(params_per_agent: Sequence[nnx.State], optimizer: optax.GradientTransformation,
                     *, shared: bool, keep_reference: bool, lora: LoRAConfig | None = None,
                     base: nnx.State | None = None) -> TrainState:
    """A TrainState at step 0 for N = len(params_per_agent) agents.

    Args:
      params_per_agent: N parameter states (nnx.split(model)[1]; LoRA: the adapters,
        mtrl.models.adapters) of one structure. In shared mode they must all hold the
        same values (e.g. `[params] * N`); the first is used.
      optimizer: the transformation the train step applies (make_optimizer).
      shared: one parameter copy for all agents instead of N stacked copies.
      keep_reference: compute the KL reference's log-probabilities (set it when the
        objective's KL coefficient is > 0); full fine-tuning keeps a frozen copy of the
        parameters for it, LoRA uses the base.
      lora: the adapters' config when params are adapters (None: full fine-tuning).
      base: LoRA only: the frozen base laid out like the state (base_layout).

    The trained inputs are copied, never donated: they remain valid. The base is held
    as it is (the step never donates it).
    """
    if (lora is None) != (base is None):
        raise ValueError("LoRA needs both `lora` and `base`; full fine-tuning neither")
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
    if lora is not None:
        ref_params = base
        leading = {x.shape[0] if x.ndim else None for x in jax.tree.leaves(base)}
        if not shared and leading != {num_agents}:
            raise ValueError(f"a separate agents' base is stacked on a leading axis of "
                             f"{num_agents}, got leading sizes {sorted(map(str, leading))}")
    else:
        ref_params = jax.tree.map(jnp.copy, params) if keep_reference else None
    return TrainState(step=jnp.zeros((), jnp.int32), params=params, opt_state=opt_state,
                      ref_params=ref_params, num_agents=num_agents, shared=bool(shared),
                      lora=lora, reference=bool(keep_reference))


def base_layout(bases: Sequence[nnx.State], shared: bool) -> nnx.State:
    """A LoRA base laid out like a TrainState: shared, the one state as it is (not
    copied); separate, the agents' states stacked on a leading axis."""
    bases = list(bases)
    if not bases:
        raise ValueError("need at least one base state")
    structure = jax.tree.structure(bases[0])
    if any(jax.tree.structure(b) != structure for b in bases[1:]):
        raise ValueError("the agents' base states differ in structure")
    if shared:
        if any(b is not bases[0] and not _same_values(b, bases[0]) for b in bases[1:]):
            raise ValueError("shared parameters: the agents' base values differ")
        return bases[0]
    return jax.tree.map(lambda *xs: jnp.stack(xs), *bases)


def agent_params(state: TrainState, agent: int) -> nnx.State:
    """Agent `agent`'s trained parameters (LoRA: its adapters) without the agent axis.

    Separate: a fresh slice of the stacked leaves. Shared: the state's own parameter
    buffers (donated by the next train step: call again after each step).
    """
    if not 0 <= agent < state.num_agents:
        raise ValueError(f"agent must be in [0, {state.num_agents}), got {agent}")
    if state.shared:
        return state.params
    return jax.tree.map(lambda x: x[agent], state.params)


def _agent_slice(state: TrainState, tree: Any, agent: int) -> Any:
    if not 0 <= agent < state.num_agents:
        raise ValueError(f"agent must be in [0, {state.num_agents}), got {agent}")
    return tree if state.shared else jax.tree.map(lambda x: x[agent], tree)


def policy_params(lora: LoRAConfig | None, params: Any, ref_params: Any) -> nnx.State:
    """The policy's state from one agent's trained params and ref_params: the params
    themselves (full fine-tuning) or the base with the adapters (LoRA)."""
    return params if lora is None else with_adapters(ref_params, params)


def reference_params(lora: LoRAConfig | None, params: Any, ref_params: Any) -> nnx.State:
    """The KL reference's state, in the policy's layout: the frozen copy (full
    fine-tuning) or the base with zero adapters (LoRA: exactly the base's function)."""
    if lora is None:
        return ref_params
    return with_adapters(ref_params, jax.tree.map(jnp.zeros_like, params))


def agent_policy(state: TrainState, agent: int) -> nnx.State:
    """Agent `agent`'s policy for the sampler and scoring, in the policy's graph
    (LoRA: the adapted model's, base and adapters unmerged: what the update trains)."""
    return policy_params(state.lora, agent_params(state, agent),
                         None if state.lora is None else _agent_slice(state, state.ref_params,
                                                                      agent))


def agent_reference(state: TrainState, agent: int) -> nnx.State:
    """Agent `agent`'s KL reference in the policy's graph (reference_params)."""
    if state.ref_params is None:
        raise ValueError("the state holds no reference parameters (keep_reference=False)")
    return reference_params(state.lora, agent_params(state, agent),
                            _agent_slice(state, state.ref_params, agent))


def agent_merged(state: TrainState, agent: int) -> nnx.State:
    """Agent `agent`'s policy in the base model's graph: LoRA's W + s·A·B merged
    (new arrays: a Hugging Face export), full fine-tuning's params."""
    if state.lora is None:
        return agent_params(state, agent)
    return merged_state(_agent_slice(state, state.ref_params, agent),
                        agent_params(state, agent), state.lora)
