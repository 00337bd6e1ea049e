"""The jitted RL update: log-probabilities, loss, gradient, optimizer, NaN guard.

One step on a minibatch of rows of every agent ([N, B, L]):

    logp[a, b, i] = log π_θa(tokens[a, b, i] | tokens[a, b, :i])     (one full forward)
    J_a(θa)       = policy_objective(logp, old_logprobs, advantages, loss_mask; ref logp)
    separate:     θa ← opt(∇θa J_a)                  vmapped: one optimizer state per agent
    shared:       θ  ← opt(∇θ (1/N) Σ_a J_a)         one gradient, one optimizer state

MAGRPO's exact update is objective PolicyObjectiveConfig(loss="reinforce",
aggregation="seq-mean-token-sum") with KL coefficient 0 and no reference: its gradient is
−mean_b A_b Σ_t ∇log π(y_bt) over the rows with at least one loss token.

LoRA (TrainState.lora): params are the adapters and ref_params the frozen base, so the
gradient, the clipping norm and the optimizer see the adapters alone while the forward
runs base + adapters (log π_θ) and, for the KL term, the base alone (log π_ref);
ref_params is read by the jitted step, never donated or differentiated.

NaN guard: the step applies the update only when every agent's loss and gradient norm
are finite; otherwise it returns the parameters and optimizer state unchanged (all
agents, bit for bit, and `step` is not advanced) and flags it in the metrics
(`finite` = 0, `nonfinite_loss`, `nonfinite_grad`). `check_finite` (step_metrics.py)
turns the flags into a FloatingPointError on the host. A gradient is non-finite when its
global norm is, i.e. when any element is inf or NaN (or the sum of squares overflows
float32).

Metrics (scalars): per agent with the suffix `/agent{a}` and reduced over agents
without it: `loss` and the objective's metrics (policy_loss, clip fractions, ratio
stats, approx_kl, kl when a reference is held, num_tokens), `grad_norm` (before
clipping), `nonfinite_loss`, `nonfinite_grad`, `finite`; plus `learning_rate` (the η of
this update) when a schedule is given. Reductions over agents: min for `*_min`, max for
`*_max` and the nonfinite flags, sum for `num_tokens`, mean otherwise; the unsuffixed
`finite` is 1 exactly when the update was applied. Shared mode has one gradient, so
`grad_norm` and `nonfinite_grad` come without per-agent entries.

Rollout turns are 1-based (0 off the completion); the losses' turn ids are 0-based with
−1 for untrained tokens, so turn_ids = turn_index − 1 on the loss mask (for "turn-ratio"
set TurnRatioConfig.num_turns to the rollout's number of turns).

Beside it: the minibatch (minibatch.py), the log-probabilities (logprobs.py), the
metric reductions and check_finite (step_metrics.py), PPO's epoch loop (ppo_epochs.py).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from mtrl.config.fields import check_int
from mtrl.losses import POLICY_LOSSES, PolicyLossInputs, PolicyObjectiveConfig, policy_objective
from mtrl.models.lora import LoRAConfig
from mtrl.models.remat import check_remat
from mtrl.sampling.tracing import TraceCounter
from mtrl.training.update.agent_map import map_agents, uses_cudnn
from mtrl.training.update.buckets import resolve_layout
from mtrl.training.policy.logprobs import predicted_mask, sequence_logprobs
from mtrl.training.update.minibatch import PolicyMinibatch, host_rows, pad_minibatch_rows
from mtrl.training.update.packing import (PackedRows, check_mode, pack_rows, packed_logprobs,
                                          pad_packed, pad_rows, reusable_layout)
from mtrl.training.update.step_metrics import flatten_metrics
from mtrl.training.policy.train_state import TrainState, policy_params, reference_params



def _agent_objective(graphdef, objective, params, ref_params, rows: PolicyMinibatch,
                     packed: PackedRows | None = None, remat: str = "none",
                     lora: LoRAConfig | None = None, reference: bool = False):
    """(J_a, metrics) for one agent's rows ([B, L] fields); with `packed` (that agent's
    packed layout of the same rows) the log-probabilities come from the packed forward
    and are laid back out as [B, L], so the loss sees the same rows either way. The
    gradient is taken with respect to `params` (LoRA: the adapters; the base in
    ref_params is read, never differentiated); the reference's log-probs are computed
    when `reference` (train_state.py: policy_params, reference_params)."""
    if packed is None:
        def row_logprobs(p):
            return sequence_logprobs(graphdef, p, rows.tokens, rows.token_mask, remat=remat)
        predicted = predicted_mask(rows.token_mask)
    else:
        # Rows left out of the packing (zero advantage, exact objectives only) keep their
        # place in the loss at ratio 1: log π := log π_old, a constant.
        def row_logprobs(p):
            model = nnx.merge(graphdef, p)
            logp = packed_logprobs(model, packed, remat=remat)
            return jnp.where(packed.predicted, logp, jax.lax.stop_gradient(rows.old_logprobs))
        predicted = predicted_mask(rows.token_mask)
    logp = row_logprobs(policy_params(lora, params, ref_params))
    ref_logp = None
    if reference:
        ref_logp = jax.lax.stop_gradient(row_logprobs(reference_params(lora, params,
                                                                       ref_params)))
    mask = rows.loss_mask & predicted
    inputs = PolicyLossInputs(
        logp=logp, old_logp=rows.old_logprobs, advantages=rows.advantages, mask=mask,
        # Losses index turns from 0 and mark untrained tokens -1; rollouts count from 1.
        turn_ids=jnp.where(mask, rows.turn_index - 1, -1))
    return policy_objective(inputs, objective, ref_logp)


def _select(keep_new: jax.Array, new: Any, old: Any) -> Any:
    return jax.tree.map(lambda n, o: jnp.where(keep_new, n, o), new, old)


class TrainStep:
    """`step(state, minibatch) -> (state, metrics)`, jitted with the state donated.

    Built by make_train_step. With packing "rows" or "tree" the call first packs the
    minibatch's rows on the host (packing.py) and the jitted step runs the packed
    forward; `last_packing` holds that packing's token counts. `num_compiles` counts
    traces (= compilations): one per distinct (rows, bins, budget) layout run.

    No compile after warm-up: the bin count is rounded up to the ladder `bin_buckets`
    (buckets.py; empty bins are padding), and a packing that fits a layout already
    compiled (more rows, bins and budget) within `layout_growth` times its slots is
    padded into it instead, so a run meets a few layouts only. `padded_slots` counts the
    slots the reuse added (the ladder's own padding shows as slots > packed tokens in
    last_packing). "auto" / growth 0 are the backend's choice (buckets.resolve_layout).
    `layouts()` and `restore_layouts()` carry the layouts met into a resumed run, which
    then pads as this one does.
    """

    def __init__(self, fn: Callable, *, num_agents: int, shared: bool, packing: str = "none",
                 min_budget: int = 0, skip_zero_advantage: bool = False, shardings: Any = None,
                 memory_guard: Callable[[int, int], None] | None = None,
                 bin_buckets="auto", layout_growth: float = 0.0):
        self.num_agents, self.shared = num_agents, shared
        self.memory_guard = memory_guard  # memory.packed_step_guard: (bins, slots) -> None
        self.packing, self.min_budget = packing, min_budget
        self.skip_zero_advantage = skip_zero_advantage
        self.traces = TraceCounter()
        self.shardings = shardings  # a mtrl.parallel.ShardingPlan, or None: one device
        self._fn = self.traces.wrap("train_step", _reading_ref_params(fn))
        self._jitted = jax.jit(self._fn, donate_argnums=0)
        self._sharded: dict[Any, Callable] = {}
        self.last_packing: dict[str, float] = {}
        # Packed layouts compiled so far, per rows shape, and the slots padding added.
        self._packed_layouts: dict[tuple, set[tuple[int, int, int]]] = {}
        self.bin_buckets, self.layout_growth = resolve_layout(bin_buckets, layout_growth,
                                                              jax.default_backend())
        self.padded_slots = 0

    def _program(self, state: TrainState) -> Callable:
        """The jitted step; with shardings, its outputs keep the state's layout (params
        and moments per the rules, metrics replicated), so a step never gathers them."""
        if self.shardings is None:
            return self._jitted
        trained = state.replace(ref_params=None)
        structure = jax.tree.structure(trained)
        if structure not in self._sharded:
            out = (self.shardings.tree_shardings(trained), self.shardings.replicated)
            self._sharded[structure] = jax.jit(self._fn, donate_argnums=0, out_shardings=out)
        return self._sharded[structure]

    def __call__(self, state: TrainState, minibatch: PolicyMinibatch
                 ) -> tuple[TrainState, dict[str, jax.Array]]:
        program = self._program(state)
        if self.packing == "none":
            if self.shardings is not None:
                minibatch = self.shardings.shard_batch(minibatch)
            return _with_ref_params(program, state, minibatch, None)
        minibatch.validate(self.num_agents)
        host = host_rows(minibatch)
        skip = None
        if self.skip_zero_advantage:
            skip = ~np.any(host.loss_mask & (host.advantages != 0), axis=2)
        packed = pack_rows(host.tokens, host.token_mask, host.loss_mask,
                           self.packing, self.min_budget, skip, self.bin_buckets)
        unpadded = packed
        minibatch, packed = self._layout(minibatch, packed)
        # From host arrays: the minibatch may hold other processes' rows by now. Padding
        # adds empty rows and bins, so tokens count as before it and slots as after.
        n, p, s = packed.tokens.shape
        self.last_packing = {**packing_counts(unpadded, host.token_mask),
                             "slots": float(n * p * s), "bins": float(p), "budget": float(s)}
        if self.shardings is not None:
            minibatch, packed = self.shardings.shard_batch((minibatch, packed))
        return _with_ref_params(program, state, minibatch, packed)

    def lower(self, state: TrainState, minibatch: PolicyMinibatch,
              packed: PackedRows | None = None):
        """The one-device program lowered for these (possibly abstract) arguments, e.g.
        for XLA's memory analysis (`.compile().memory_analysis()`)."""
        return self._jitted.lower(state.replace(ref_params=None), state.ref_params, minibatch,
                                  packed)

    def _layout(self, minibatch: PolicyMinibatch, packed: PackedRows
                ) -> tuple[PolicyMinibatch, PackedRows]:
        """The (rows, bins, budget) layout the step runs in: an already compiled one of
        the same agents and row length when it costs at most layout_growth times the
        packing's slots, else the packing's own (checked by the memory guard). The row
        count is left as it comes (the rollout's shape, or a power of two after the
        zero-advantage filter), so it still divides a data-parallel mesh; a reused
        layout's rows came from an earlier minibatch. Padding adds empty rows, bins and
        slots: the
        same loss and gradients (`python -m bench.layout_reuse` measures the trade)."""
        n, rows, length = jnp.shape(minibatch.tokens)
        shape = (rows, *packed.tokens.shape[1:])
        compiled = self._packed_layouts.setdefault((n, length), set())
        # A compiled layout passed the memory guard when it was first met.
        reuse = reusable_layout(shape, compiled, self.layout_growth)
        if reuse is None:
            if self.memory_guard is not None:  # one line instead of running out of memory
                self.memory_guard(*shape[1:])
            compiled.add(shape)
            reuse = shape
        self.padded_slots += n * (reuse[1] * reuse[2] - shape[1] * shape[2])
        packed = pad_rows(pad_packed(packed, reuse[1], reuse[2]), reuse[0])
        return pad_minibatch_rows(minibatch, reuse[0]), packed

    @property
    def num_compiles(self) -> int:
        return self.traces.total

    def freeze_layouts(self) -> None:
        """From now on a packed minibatch runs in the smallest compiled layout that
        holds it, whatever its slots (no growth limit)."""
        self.layout_growth = math.inf

    def layouts(self) -> list[list[int]]:
        """The packed layouts met (compiled, or restored), as JSON data: one
        [agents, row length, rows, bins, budget] per layout, sorted."""
        return sorted([*key, *layout] for key, layouts in self._packed_layouts.items()
                      for layout in layouts)

    def restore_layouts(self, layouts: list[list[int]]) -> None:
        """The layouts of `layouts()` in place of this step's: a minibatch then runs in
        the layout it would have run in where they were met (each compiles on first
        use). The growth limit is unchanged (freeze_layouts)."""
        self._packed_layouts = {}
        for agents, length, *layout in layouts:
            self._packed_layouts.setdefault((int(agents), int(length)), set()).add(
                tuple(int(n) for n in layout))


def _reading_ref_params(fn: Callable) -> Callable:
    """fn(state, ...) as program(state without ref_params, ref_params, ...): the first
    argument is donated, ref_params only read (a LoRA base is the model's own weights,
    which the sampler and the next step still use), and not returned."""
    def program(trained: TrainState, ref_params, minibatch, packed):
        new_state, metrics = fn(trained.replace(ref_params=ref_params), minibatch, packed)
        return new_state.replace(ref_params=None), metrics
    return program


def _with_ref_params(program: Callable, state: TrainState, minibatch, packed):
    new_state, metrics = program(state.replace(ref_params=None), state.ref_params, minibatch,
                                 packed)
    return new_state.replace(ref_params=state.ref_params), metrics


def make_train_step(graphdef: nnx.GraphDef, objective: PolicyObjectiveConfig,
                    optimizer: optax.GradientTransformation, *, num_agents: int, shared: bool,
                    learning_rate_fn: optax.Schedule | None = None, packing: str = "none",
                    remat: str = "none", min_budget: int = 0, shardings: Any = None,
                    memory_guard: Callable[[int, int], None] | None = None,
                    bin_buckets="auto", layout_growth: float = 0.0) -> TrainStep:
    """The jitted update of the module docstring.

    Args:
      graphdef: the policy's graph (nnx.split(model)[0]; LoRA: the adapted model's,
        mtrl.models.adapters.adapted_graphdef).
      objective: loss, aggregation and KL term (a KL coefficient > 0 needs a state
        built with keep_reference=True).
      optimizer: applied per agent (separate) or once (shared), e.g. make_optimizer.
      num_agents: N, the leading axis of every minibatch field.
      shared: the state's layout (TrainState.shared).
      learning_rate_fn: the optimizer's schedule (make_schedule), to report η.
      packing: "none" (the padded rows), "rows" (rows packed into bins) or "tree"
        (each bin a trie of its rows: shared prefixes once), see packing.py; the
        log-probabilities, loss and gradients are those of the padded rows.
      remat: per-layer activation rematerialisation, "none" | "full" | "dots".
      min_budget: the smallest bin size in tokens for packed modes (a larger bin lets a
        tree share more prefixes, at a quadratic attention cost).
      shardings: a mtrl.parallel.ShardingPlan (state laid out by plan.shard_tree):
        rows split over data/fsdp, outputs keep the state's layout; None: one device.
      memory_guard: called with a packed minibatch's (bins, slots) before its update
        (memory.packed_step_guard: raises when it cannot fit); None: no check.
      bin_buckets: packed modes round the bin count up to this ladder
        ("auto", "none", "pow2" or a ratio such as "1.5"; buckets.py, train.bin_buckets).
      layout_growth: packed modes run a minibatch in an already compiled layout with at
        most this many times its slots instead of compiling its own (0: the backend's;
        TrainStep, train.layout_growth).

    Packed modes leave out of the forward the rows whose advantage is 0 on every loss
    token when that is exact (zero_advantage_is_exact): such a row's loss term and
    gradient are 0 at any ratio, so it stays in the loss at ratio 1 (its normalisation
    unchanged) without being computed. Only the ratio metrics see the difference.
    """
    check_mode(packing)
    check_remat(remat)
    if not isinstance(objective, PolicyObjectiveConfig):
        raise ValueError(f"objective must be a PolicyObjectiveConfig, "
                         f"got {type(objective).__name__}")
    check_int("num_agents", num_agents, 1)

    def step(state: TrainState, minibatch: PolicyMinibatch, packed: PackedRows | None):
        minibatch.validate(num_agents)
        if state.num_agents != num_agents or state.shared != shared:
            raise ValueError(f"state has num_agents={state.num_agents}, shared={state.shared}; "
                             f"the step was built for {num_agents}, {shared}")
        if objective.kl.coef > 0 and not (state.reference and state.ref_params is not None):
            raise ValueError("the objective has a KL term but the state holds no reference "
                             "parameters (init_train_state(..., keep_reference=True))")

        def objective_fn(params, ref_params, rows, packed):
            return _agent_objective(graphdef, objective, params, ref_params, rows, packed,
                                    remat, state.lora, state.reference)

        # cuDNN attention cannot be vmapped over agents with tree masks (agent_map.py).
        def first_agent(tree):
            return tree if shared or tree is None else jax.tree.map(lambda x: x[0], tree)

        sequential = uses_cudnn(graphdef, policy_params(state.lora, first_agent(state.params),
                                                        first_agent(state.ref_params)))
        if shared:
            def mean_objective(params):
                losses, metrics = map_agents(objective_fn, (None, None, 0, 0), params,
                                             state.ref_params, minibatch, packed,
                                             sequential=sequential)
                return jnp.mean(losses), (losses, metrics)

            (_, (losses, metrics)), grads = jax.value_and_grad(mean_objective, has_aux=True)(
                state.params)
            grad_norm = optax.global_norm(grads)
            updates, new_opt_state = optimizer.update(grads, state.opt_state, state.params)
            finite_grad = jnp.broadcast_to(jnp.isfinite(grad_norm), (num_agents,))
        else:
            grad_fn = jax.value_and_grad(objective_fn, has_aux=True)
            ref_axis = None if state.ref_params is None else 0
            (losses, metrics), grads = map_agents(grad_fn, (0, ref_axis, 0, 0), state.params,
                                                  state.ref_params, minibatch, packed,
                                                  sequential=sequential)
            grad_norm = jax.vmap(optax.global_norm)(grads)
            updates, new_opt_state = jax.vmap(optimizer.update)(grads, state.opt_state,
                                                                state.params)
            finite_grad = jnp.isfinite(grad_norm)
        new_params = optax.apply_updates(state.params, updates)

        finite_loss = jnp.isfinite(losses)
        apply = jnp.all(finite_loss) & jnp.all(finite_grad)
        new_state = state.replace(
            step=state.step + apply.astype(jnp.int32),
            params=_select(apply, new_params, state.params),
            opt_state=_select(apply, new_opt_state, state.opt_state))

        per_agent = dict(metrics, loss=losses,
                         nonfinite_loss=(~finite_loss).astype(jnp.float32),
                         nonfinite_grad=(~finite_grad).astype(jnp.float32),
                         finite=(finite_loss & finite_grad).astype(jnp.float32))
        if not shared:
            per_agent["grad_norm"] = grad_norm
        out = flatten_metrics(per_agent)
        out["finite"] = apply.astype(jnp.float32)
        if shared:
            out["grad_norm"] = grad_norm
            for a in range(num_agents):  # one gradient: its flag is not an agent's
                del out[f"nonfinite_grad/agent{a}"]
        if learning_rate_fn is not None:
            out["learning_rate"] = jnp.asarray(learning_rate_fn(state.step), jnp.float32)
        return new_state, out

    return TrainStep(step, num_agents=num_agents, shared=shared, packing=packing,
                     min_budget=min_budget, shardings=shardings, memory_guard=memory_guard,
                     skip_zero_advantage=zero_advantage_is_exact(objective),
                     bin_buckets=bin_buckets, layout_growth=layout_growth)


def zero_advantage_is_exact(objective: PolicyObjectiveConfig) -> bool:
    """True when rows with A = 0 add nothing to the loss or its gradient: a loss
    registered advantage_linear (its term and gradient A·f(ratio) vanish at A = 0) and
    no KL term (a KL penalty reaches every row)."""
    return POLICY_LOSSES.get(objective.loss).advantage_linear and objective.kl.coef == 0


def packing_counts(packed: PackedRows, token_mask: Any) -> dict[str, float]:
    """Tokens of the rows taking part, packed nodes, computed slots (bins × budget)."""
    n, p, s = packed.tokens.shape
    taking_part = np.asarray(packed.predicted).any(axis=2, keepdims=True)
    return {"row_tokens": float(np.sum(np.asarray(token_mask) & taking_part)),
            "packed_tokens": float(np.sum(np.asarray(packed.token_mask))),
            "slots": float(n * p * s), "bins": float(p), "budget": float(s)}
