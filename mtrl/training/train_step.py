"""The jitted RL update: log-probabilities, loss, gradient, optimizer, NaN guard.

One step on a minibatch of rows of every agent ([N, B, L]):

    logp[a, b, i] = log π_θa(tokens[a, b, i] | tokens[a, b, :i])     (one full forward)
    J_a(θa)       = policy_objective(logp, old_logprobs, advantages, loss_mask; ref logp)
    separate:     θa ← opt(∇θa J_a)                  vmapped: one optimizer state per agent
    shared:       θ  ← opt(∇θ (1/N) Σ_a J_a)         one gradient, one optimizer state

MAGRPO's exact update is objective PolicyObjectiveConfig(loss="reinforce",
aggregation="seq-mean-token-sum") with KL coefficient 0 and no reference: its gradient is
−mean_b A_b Σ_t ∇log π(y_bt) over the rows with at least one loss token.

NaN guard: the step applies the update only when every agent's loss and gradient norm
are finite; otherwise it returns the parameters and optimizer state unchanged (all
agents, bit for bit, and `step` is not advanced) and flags it in the metrics
(`finite` = 0, `nonfinite_loss`, `nonfinite_grad`). `check_finite` turns the flags into
a FloatingPointError on the host. A gradient is non-finite when its global norm is, i.e.
when any element is inf or NaN (or the sum of squares overflows float32).

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
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Mapping, Sequence

import flax.struct
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from mtrl.losses import PolicyLossInputs, PolicyObjectiveConfig, policy_objective
from mtrl.rollout.batch import RolloutBatch
from mtrl.models.remat import check_remat
from mtrl.sampling.tracing import TraceCounter
from mtrl.training.packing import PackedRows, check_mode, pack_rows, packed_logprobs
from mtrl.training.train_state import TrainState


@flax.struct.dataclass
class PolicyMinibatch:
    """Rows of every agent that one train step consumes (N agents, B rows, L positions)."""

    tokens: jax.Array  # [N, B, L] int32 history + completion, right-padded
    token_mask: jax.Array  # [N, B, L] bool real tokens
    loss_mask: jax.Array  # [N, B, L] bool tokens that are trained (sampled, not truncated)
    old_logprobs: jax.Array  # [N, B, L] f32 sampler log π_old(tokens[i] | tokens[:i])
    advantages: jax.Array  # [N, B, L] f32 per-token advantage A_t (0 off the loss mask)
    turn_index: jax.Array  # [N, B, L] int32 1-based turn of sampled tokens, 0 elsewhere

    def validate(self, num_agents: int | None = None) -> tuple[int, int, int]:
        """Checks ranks, shapes and dtypes; returns (N, B, L)."""
        fields = dict(tokens=self.tokens, token_mask=self.token_mask, loss_mask=self.loss_mask,
                      old_logprobs=self.old_logprobs, advantages=self.advantages,
                      turn_index=self.turn_index)
        shape = jnp.shape(self.tokens)
        if len(shape) != 3:
            raise ValueError(f"PolicyMinibatch.tokens must be [N, B, L], got shape {shape}")
        for name, x in fields.items():
            if jnp.shape(x) != shape:
                raise ValueError(f"PolicyMinibatch.{name} has shape {jnp.shape(x)}, "
                                 f"tokens has {shape}; all fields must be [N, B, L]")
        kinds = dict(tokens=jnp.integer, turn_index=jnp.integer, token_mask=jnp.bool_,
                     loss_mask=jnp.bool_, old_logprobs=jnp.floating, advantages=jnp.floating)
        for name, kind in kinds.items():
            if not jnp.issubdtype(fields[name].dtype, kind):
                raise ValueError(f"PolicyMinibatch.{name} must be {kind.__name__}, "
                                 f"got {fields[name].dtype}")
        if num_agents is not None and shape[0] != num_agents:
            raise ValueError(f"PolicyMinibatch has {shape[0]} agents, the step expects "
                             f"{num_agents}")
        return shape


def policy_minibatch(batch: RolloutBatch, advantages: jax.Array,
                     rows: Any = None) -> PolicyMinibatch:
    """The train-step fields of `batch` with `advantages` ([N, C, L], e.g.
    token_advantages(batch, ...)), restricted to `rows` (indices into C) when given."""
    if jnp.shape(advantages) != jnp.shape(batch.tokens):
        raise ValueError(f"advantages shape {jnp.shape(advantages)} != batch tokens "
                         f"{jnp.shape(batch.tokens)} ([N, C, L])")
    minibatch = PolicyMinibatch(
        tokens=batch.tokens, token_mask=batch.token_mask, loss_mask=batch.loss_mask,
        old_logprobs=batch.old_logprobs, advantages=jnp.asarray(advantages, jnp.float32),
        turn_index=batch.turn_index)
    return minibatch if rows is None else take_rows(minibatch, rows)


def take_rows(minibatch: PolicyMinibatch, rows: Any) -> PolicyMinibatch:
    """The given rows (indices along the B axis) of every field."""
    rows = jnp.asarray(rows, jnp.int32)
    if rows.ndim != 1:
        raise ValueError(f"rows must be a 1-d index array, got shape {rows.shape}")
    return jax.tree.map(lambda x: jnp.take(x, rows, axis=1), minibatch)


@functools.partial(jax.jit, static_argnums=0, static_argnames="remat")
def sequence_logprobs(graphdef: nnx.GraphDef, params: nnx.State, tokens: jax.Array,
                      token_mask: jax.Array, remat: str = "none") -> jax.Array:
    """[B, L] float32: log π(tokens[i] | tokens[:i]) at position i, from one full forward.

        logp[b, i] = z[b, i−1, tokens[b, i]] − logsumexp_v z[b, i−1, v]

    with z the float32 logits (temperature 1, no filters: the sampler's `logprobs`).
    The layout of RolloutBatch.old_logprobs. Entries are 0 where the token or its
    predecessor is padding (position 0 included): rows must hold their real tokens
    contiguously (right or left padding), as rollout rows do. Jitted (graphdef static),
    so eager calls compile once per shape; inside another jit it is inlined.
    """
    if jnp.ndim(tokens) != 2:
        raise ValueError(f"tokens must be [B, L], got shape {jnp.shape(tokens)}")
    if jnp.shape(token_mask) != jnp.shape(tokens):
        raise ValueError(f"token_mask shape {jnp.shape(token_mask)} != tokens {jnp.shape(tokens)}")
    if not jnp.issubdtype(tokens.dtype, jnp.integer):
        raise ValueError(f"tokens must be integers, got {tokens.dtype}")
    if tokens.shape[1] < 2:
        raise ValueError(f"need L >= 2 positions to predict a token, got L = {tokens.shape[1]}")
    token_mask = token_mask.astype(bool)
    logits = nnx.merge(graphdef, params)(tokens, token_mask=token_mask, remat=remat)[:, :-1]
    targets = tokens[:, 1:]
    picked = jnp.take_along_axis(logits, targets[..., None], axis=-1)[..., 0]
    # logsumexp instead of a full log_softmax: one [B, L, V] array fewer.
    logp = picked - jax.nn.logsumexp(logits, axis=-1)
    predicted = token_mask[:, 1:] & token_mask[:, :-1]
    logp = jnp.where(predicted, logp, 0.0)
    return jnp.pad(logp, ((0, 0), (1, 0)))


def predicted_mask(token_mask: jax.Array) -> jax.Array:
    """[B, L] bool: positions whose token and predecessor are real (sequence_logprobs
    defines a log-probability there)."""
    previous = jnp.pad(token_mask[:, :-1], ((0, 0), (1, 0)))
    return token_mask & previous


def _agent_objective(graphdef, objective, params, ref_params, rows: PolicyMinibatch,
                     packed: PackedRows | None = None, remat: str = "none"):
    """(J_a, metrics) for one agent's rows ([B, L] fields); with `packed` (that agent's
    packed layout of the same rows) the log-probabilities come from the packed forward
    and are laid back out as [B, L], so the loss sees the same rows either way."""
    if packed is None:
        def row_logprobs(p):
            return sequence_logprobs(graphdef, p, rows.tokens, rows.token_mask, remat=remat)
        predicted = predicted_mask(rows.token_mask)
    else:
        # Rows left out of the packing (zero advantage, exact objectives only) keep their
        # place in the loss at ratio 1: log π := log π_old, a constant.
        def row_logprobs(p):
            model = nnx.merge(graphdef, p)
            logp = packed_logprobs(functools.partial(model, remat=remat), packed)
            return jnp.where(packed.predicted, logp, jax.lax.stop_gradient(rows.old_logprobs))
        predicted = predicted_mask(rows.token_mask)
    logp = row_logprobs(params)
    ref_logp = None
    if ref_params is not None:
        ref_logp = jax.lax.stop_gradient(row_logprobs(ref_params))
    mask = rows.loss_mask & predicted
    inputs = PolicyLossInputs(
        logp=logp, old_logp=rows.old_logprobs, advantages=rows.advantages, mask=mask,
        # Losses index turns from 0 and mark untrained tokens -1; rollouts count from 1.
        turn_ids=jnp.where(mask, rows.turn_index - 1, -1))
    return policy_objective(inputs, objective, ref_logp)


def _select(keep_new: jax.Array, new: Any, old: Any) -> Any:
    return jax.tree.map(lambda n, o: jnp.where(keep_new, n, o), new, old)


def _reduce_over_agents(name: str, values: jax.Array) -> jax.Array:
    if name.endswith("_min"):
        return jnp.min(values)
    if name.endswith("_max") or name.startswith("nonfinite"):
        return jnp.max(values)
    if name == "num_tokens":
        return jnp.sum(values)
    return jnp.mean(values)


def _flatten_metrics(per_agent: Mapping[str, jax.Array]) -> dict[str, jax.Array]:
    out: dict[str, jax.Array] = {}
    for name, values in per_agent.items():
        out[name] = _reduce_over_agents(name, values)
        for a in range(values.shape[0]):
            out[f"{name}/agent{a}"] = values[a]
    return out


class TrainStep:
    """`step(state, minibatch) -> (state, metrics)`, jitted with the state donated.

    Built by make_train_step. With packing "rows" or "tree" the call first packs the
    minibatch's rows on the host (packing.py) and the jitted step runs the packed
    forward; `last_packing` holds that packing's token counts. `num_compiles` counts
    traces (= compilations): one per distinct (minibatch, packed bins) shape.
    """

    def __init__(self, fn: Callable, *, num_agents: int, shared: bool, packing: str = "none",
                 min_budget: int = 0, skip_zero_advantage: bool = False, shardings: Any = None):
        self.num_agents, self.shared = num_agents, shared
        self.packing, self.min_budget = packing, min_budget
        self.skip_zero_advantage = skip_zero_advantage
        self.traces = TraceCounter()
        self.shardings = shardings  # a mtrl.parallel.ShardingPlan, or None: one device
        self._fn = self.traces.wrap("train_step", fn)
        self._jitted = jax.jit(self._fn, donate_argnums=0)
        self._sharded: dict[Any, Callable] = {}
        self.last_packing: dict[str, float] = {}

    def _program(self, state: TrainState) -> Callable:
        """The jitted step; with shardings, its outputs keep the state's layout (params
        and moments per the rules, metrics replicated), so a step never gathers them."""
        if self.shardings is None:
            return self._jitted
        structure = jax.tree.structure(state)
        if structure not in self._sharded:
            out = (self.shardings.tree_shardings(state), self.shardings.replicated)
            self._sharded[structure] = jax.jit(self._fn, donate_argnums=0, out_shardings=out)
        return self._sharded[structure]

    def __call__(self, state: TrainState, minibatch: PolicyMinibatch
                 ) -> tuple[TrainState, dict[str, jax.Array]]:
        program = self._program(state)
        if self.packing == "none":
            if self.shardings is not None:
                minibatch = self.shardings.shard_batch(minibatch)
            return program(state, minibatch, None)
        minibatch.validate(self.num_agents)
        host = host_rows(minibatch)
        skip = None
        if self.skip_zero_advantage:
            skip = ~np.any(host.loss_mask & (host.advantages != 0), axis=2)
        packed = pack_rows(host.tokens, host.token_mask, host.loss_mask,
                           self.packing, self.min_budget, skip)
        self.last_packing = packing_counts(packed, host.token_mask)
        if self.shardings is not None:
            minibatch, packed = self.shardings.shard_batch((minibatch, packed))
        return program(state, minibatch, packed)

    @property
    def num_compiles(self) -> int:
        return self.traces.total


def make_train_step(graphdef: nnx.GraphDef, objective: PolicyObjectiveConfig,
                    optimizer: optax.GradientTransformation, *, num_agents: int, shared: bool,
                    learning_rate_fn: optax.Schedule | None = None, packing: str = "none",
                    remat: str = "none", min_budget: int = 0,
                    shardings: Any = None) -> TrainStep:
    """The jitted update of the module docstring.

    Args:
      graphdef: the model's graph (nnx.split(model)[0]).
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
    if isinstance(num_agents, bool) or not isinstance(num_agents, int) or num_agents < 1:
        raise ValueError(f"num_agents must be an int >= 1, got {num_agents!r}")

    def objective_fn(params, ref_params, rows, packed):
        return _agent_objective(graphdef, objective, params, ref_params, rows, packed, remat)

    def step(state: TrainState, minibatch: PolicyMinibatch, packed: PackedRows | None):
        minibatch.validate(num_agents)
        if state.num_agents != num_agents or state.shared != shared:
            raise ValueError(f"state has num_agents={state.num_agents}, shared={state.shared}; "
                             f"the step was built for {num_agents}, {shared}")
        if objective.kl.coef > 0 and state.ref_params is None:
            raise ValueError("the objective has a KL term but the state holds no reference "
                             "parameters (init_train_state(..., keep_reference=True))")
        if shared:
            def mean_objective(params):
                losses, metrics = jax.vmap(objective_fn, in_axes=(None, None, 0, 0))(
                    params, state.ref_params, minibatch, packed)
                return jnp.mean(losses), (losses, metrics)

            (_, (losses, metrics)), grads = jax.value_and_grad(mean_objective, has_aux=True)(
                state.params)
            grad_norm = optax.global_norm(grads)
            updates, new_opt_state = optimizer.update(grads, state.opt_state, state.params)
            finite_grad = jnp.broadcast_to(jnp.isfinite(grad_norm), (num_agents,))
        else:
            grad_fn = jax.value_and_grad(objective_fn, has_aux=True)
            (losses, metrics), grads = jax.vmap(grad_fn)(state.params, state.ref_params,
                                                         minibatch, packed)
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
        out = _flatten_metrics(per_agent)
        out["finite"] = apply.astype(jnp.float32)
        if shared:
            out["grad_norm"] = grad_norm
            for a in range(num_agents):  # one gradient: its flag is not an agent's
                del out[f"nonfinite_grad/agent{a}"]
        if learning_rate_fn is not None:
            out["learning_rate"] = jnp.asarray(learning_rate_fn(state.step), jnp.float32)
        return new_state, out

    return TrainStep(step, num_agents=num_agents, shared=shared, packing=packing,
                     min_budget=min_budget, shardings=shardings,
                     skip_zero_advantage=zero_advantage_is_exact(objective))


# Losses whose per-token term (and gradient) is A·f(ratio): zero whenever A = 0.
_ADVANTAGE_LINEAR_LOSSES = ("reinforce", "ppo", "gspo", "gspo-token")


def zero_advantage_is_exact(objective: PolicyObjectiveConfig) -> bool:
    """True when rows with A = 0 add nothing to the loss or its gradient: an
    advantage-linear loss and no KL term (a KL penalty reaches every row)."""
    return objective.loss in _ADVANTAGE_LINEAR_LOSSES and objective.kl.coef == 0


def host_rows(minibatch: PolicyMinibatch) -> PolicyMinibatch:
    """The minibatch as host numpy (the packer's input); a batch spread over several
    processes is gathered from all of them first."""
    if all(getattr(x, "is_fully_addressable", True) for x in jax.tree.leaves(minibatch)):
        return jax.tree.map(np.asarray, minibatch)
    from jax.experimental import multihost_utils
    return jax.tree.map(np.asarray, multihost_utils.process_allgather(minibatch, tiled=True))


def packing_counts(packed: PackedRows, token_mask: Any) -> dict[str, float]:
    """Tokens of the rows taking part, packed nodes, computed slots (bins × budget)."""
    n, p, s = packed.tokens.shape
    taking_part = np.asarray(packed.predicted).any(axis=2, keepdims=True)
    return {"row_tokens": float(np.sum(np.asarray(token_mask) & taking_part)),
            "packed_tokens": float(np.sum(np.asarray(packed.token_mask))),
            "slots": float(n * p * s), "bins": float(p), "budget": float(s)}


_CHECKED_PREFIXES = ("loss", "grad_norm")


def check_finite(metrics: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> None:
    """Raises FloatingPointError when a step's metrics flag a non-finite loss or gradient.

    Accepts one step's metrics or a list of them (ppo_update's). The message names the
    offending metrics (per agent where available, e.g. `loss/agent1 = inf`) and says
    that the update was skipped, so the parameters are still those before that step.
    """
    if not isinstance(metrics, Mapping):
        for index, step_metrics in enumerate(metrics):
            try:
                check_finite(step_metrics)
            except FloatingPointError as error:
                raise FloatingPointError(f"update {index} of this batch: {error}") from None
        return
    host = {name: float(np.asarray(value)) for name, value in metrics.items()
            if name == "finite" or name.startswith(_CHECKED_PREFIXES)}
    bad = {name: value for name, value in host.items()
           if name.startswith(_CHECKED_PREFIXES) and not np.isfinite(value)}
    if not bad and host.get("finite", 1.0) == 1.0:
        return
    per_agent = {name: value for name, value in bad.items() if "/agent" in name}
    named = per_agent or bad
    what = ", ".join(f"{name} = {value}" for name, value in sorted(named.items()))
    raise FloatingPointError(
        f"non-finite training step ({what or 'finite = 0'}); the update was skipped, "
        "parameters and optimizer state are unchanged")


def ppo_update(step_fn: TrainStep, state: TrainState, batch_arrays: PolicyMinibatch, *,
               epochs: int, minibatches: int, key: jax.Array, group_size: int = 1
               ) -> tuple[TrainState, list[dict[str, jax.Array]]]:
    """`epochs` passes over the rows of `batch_arrays` ([N, C, L]) in `minibatches` updates each.

    Epoch e permutes the contributing rows (any loss token in any agent) with
    fold_in(key, e) and deals them round-robin into `minibatches` index sets of C / M
    rows (M must divide C; rollout row counts are powers of two), padding rows filling
    the rest. Every minibatch therefore has the same static shape (the step compiles
    once) and the real rows are spread evenly; padding rows have an all-false loss mask,
    so they add nothing to any loss or gradient. A minibatch with no contributing row
    (fewer real rows than M) is skipped: a zero gradient would still move AdamW's
    moments and decay the weights.

    With epochs = minibatches = 1 and old log-probs from the current parameters, the
    first update is exactly on-policy (ratio 1).

    group_size > 1 (REFUEL's pairs, training/row_groups.py): rows (k·s .. k·s+s−1) form
    a group that is permuted and dealt as one unit, so it stays consecutive and whole
    in its minibatch; with 1 this is the row-wise shuffle above, bit for bit.

    The state passed in is donated (do not reuse it). Returns the final state and the
    device metrics of every update in order; call check_finite on them.
    """
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
        raise ValueError(f"epochs must be an int >= 1, got {epochs!r}")
    if isinstance(minibatches, bool) or not isinstance(minibatches, int) or minibatches < 1:
        raise ValueError(f"minibatches must be an int >= 1, got {minibatches!r}")
    if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size < 1:
        raise ValueError(f"group_size must be an int >= 1, got {group_size!r}")
    _, num_rows, _ = batch_arrays.validate(step_fn.num_agents)
    if num_rows % (minibatches * group_size):
        raise ValueError(f"{num_rows} rows do not split into {minibatches} equal minibatches "
                         f"of whole groups of {group_size}")
    contributing = np.asarray(jax.device_get(jnp.any(batch_arrays.loss_mask, axis=(0, 2))))
    group_contributes = contributing.reshape(-1, group_size).any(axis=1)
    real_groups = np.flatnonzero(group_contributes)
    padding_groups = np.flatnonzero(~group_contributes)
    all_metrics = []
    for epoch in range(epochs):
        order = np.asarray(jax.random.permutation(jax.random.fold_in(key, epoch),
                                                  real_groups.size))
        groups = np.concatenate([real_groups[order], padding_groups])
        for m in range(minibatches):
            chosen = groups[m::minibatches]
            selected = (chosen[:, None] * group_size + np.arange(group_size)).reshape(-1)
            if not contributing[selected].any():
                continue
            state, metrics = step_fn(state, take_rows(batch_arrays, selected))
            all_metrics.append(metrics)
    return state, all_metrics
