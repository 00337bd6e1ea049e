"""Supervised warm start: next-token cross-entropy on demonstration completions.

An example is a (prompt, completion) pair laid out exactly as a rollout presents it
(token-in/token-out: the prompt tokens SFT trains on are the ones RL samples after):

    tokens    = encode(turn_format.first(prompt)) + encode(completion) + [eos]
    loss_mask =      False ...                    True ...              True

and the loss over a batch is the token mean of the negative log-likelihood over the
loss-mask positions (completion and eos only; prompt and padding tokens condition the
prediction but are not predicted):

    L(θ) = − Σ_{b,i} m_bi · log π_θ(tokens[b, i] | tokens[b, :i]) / max(1, Σ_{b,i} m_bi)

The step has the NaN guard of the RL step (train_step.py): a non-finite loss or
gradient leaves the parameters and optimizer state unchanged and sets `finite` = 0.

LoRA: the trained params are the adapters and `frozen` the base they sit on (merged into
the adapted model's state for the forward, never differentiated nor donated), so θ
above is the adapters and the optimizer holds moments for them alone.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, Iterator, NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from mtrl.config.fields import check_int
from mtrl.losses import masked_count, masked_mean
from mtrl.models.remat import check_remat
from mtrl.rollout.history import history_ids
from mtrl.sampling.tracing import TraceCounter
from mtrl.training.policy.logprobs import predicted_mask, sequence_logprobs
from mtrl.training.policy.optim import OptimConfig, make_optimizer, make_schedule
from mtrl.training.update.step_metrics import check_finite
from mtrl.parallel.shardings import committed
from mtrl.data.demonstrations import Revision


@dataclasses.dataclass(frozen=True)
class SFTConfig:
    """Supervised warm start settings.

    optim: the optimizer (its total_steps, if cosine, counts SFT updates).
    batch_size: rows per update (a short last batch is filled with masked rows).
    steps / epochs: how long to train; give exactly one.
    max_len: L, the static row length of the examples.
    seed: root of the shuffling key when run_sft gets key=None.
    log_every: updates between calls of run_sft's log_fn.
    remat: per-layer activation rematerialisation of the forward ("none" | "dots" |
      "full", mtrl.models.remat): the same loss and gradients, less memory.
    """

    optim: OptimConfig = OptimConfig(learning_rate=1e-3)
    batch_size: int = 32
    steps: int | None = None
    epochs: int | None = None
    max_len: int = 192
    seed: int = 0
    log_every: int = 50
    remat: str = "none"

    def __post_init__(self):
        if not isinstance(self.optim, OptimConfig):
            raise ValueError(f"SFTConfig.optim must be an OptimConfig, got {self.optim!r}")
        for name in ("batch_size", "max_len", "log_every"):
            check_int(f"SFTConfig.{name}", getattr(self, name), 1)
        if self.max_len < 2:
            raise ValueError(f"SFTConfig.max_len must be >= 2, got {self.max_len}")
        if (self.steps is None) == (self.epochs is None):
            raise ValueError("SFTConfig needs exactly one of steps and epochs, got "
                             f"steps={self.steps!r}, epochs={self.epochs!r}")
        for name in ("steps", "epochs"):
            check_int(f"SFTConfig.{name}", getattr(self, name), 1, optional=True)
        check_int("SFTConfig.seed", self.seed)
        check_remat(self.remat)


@dataclasses.dataclass(frozen=True)
class SFTExamples:
    """Host arrays of E examples, each a row of L = max_len positions."""

    tokens: np.ndarray  # [E, L] int32 prompt + completion + eos, right-padded with pad_id
    token_mask: np.ndarray  # [E, L] bool real tokens
    loss_mask: np.ndarray  # [E, L] bool completion and eos tokens (trained)
    num_truncated: int = 0  # examples whose completion (or eos) was cut at max_len
    num_dropped: int = 0  # pairs left out: their prompt leaves no room for a completion token

    def __len__(self) -> int:
        return self.tokens.shape[0]


def prompt_token_ids(tokenizer, prompt: "str | Revision", turn_format) -> list[int]:
    """The token history an answer to `prompt` is sampled after (see Revision)."""
    if isinstance(prompt, str):
        return history_ids(tokenizer, turn_format, prompt)
    return history_ids(tokenizer, turn_format, prompt.prompt, prompt.exchanges, prompt.reset)


def sft_examples(tokenizer, pairs: Sequence[tuple["str | Revision", str]], turn_format,
                 max_len: int) -> SFTExamples:
    """Lays out (prompt, completion) pairs as in the module docstring; a prompt may be a
    Revision (a later turn), whose earlier completions are context, not trained.

    A row longer than max_len is cut at max_len: the completion's tail (and the eos) is
    dropped and the kept completion tokens are still trained (num_truncated counts
    them). A pair whose formatted prompt has max_len or more tokens is left out
    (num_dropped).
    """
    check_int("max_len", max_len, 2)
    rows, truncated, dropped = [], 0, 0
    for prompt, completion in pairs:
        prompt_ids = prompt_token_ids(tokenizer, prompt, turn_format)
        completion_ids = tokenizer.encode(completion) + [tokenizer.eos_id]
        if len(prompt_ids) >= max_len:
            dropped += 1
            continue
        if len(prompt_ids) + len(completion_ids) > max_len:
            truncated += 1
            completion_ids = completion_ids[: max_len - len(prompt_ids)]
        rows.append((prompt_ids, completion_ids))
    if not rows:
        raise ValueError(f"no example fits max_len = {max_len} ({dropped} prompts too long)")
    tokens = np.full((len(rows), max_len), tokenizer.pad_id, np.int32)
    token_mask = np.zeros((len(rows), max_len), bool)
    loss_mask = np.zeros((len(rows), max_len), bool)
    for e, (prompt_ids, completion_ids) in enumerate(rows):
        k, end = len(prompt_ids), len(prompt_ids) + len(completion_ids)
        tokens[e, :k], tokens[e, k:end] = prompt_ids, completion_ids
        token_mask[e, :end] = True
        loss_mask[e, k:end] = True
    return SFTExamples(tokens, token_mask, loss_mask, num_truncated=truncated,
                       num_dropped=dropped)


def masked_nll(logp: jax.Array, mask: jax.Array) -> jax.Array:
    """−Σ m·logp / max(1, Σ m): the token-mean negative log-likelihood ([B, L] inputs).
    Values outside the mask (even inf or NaN) reach neither the result nor its gradient."""
    if jnp.ndim(logp) != 2 or jnp.shape(mask) != jnp.shape(logp):
        raise ValueError(f"logp and mask must both be [B, L], got {jnp.shape(logp)} and "
                         f"{jnp.shape(mask)}")
    return -masked_mean(logp, mask)


def sft_loss(graphdef: nnx.GraphDef, params: nnx.State, tokens: jax.Array,
             token_mask: jax.Array, loss_mask: jax.Array, remat: str = "none"
             ) -> tuple[jax.Array, dict[str, jax.Array]]:
    """(L(θ), metrics) of the module docstring for [B, L] rows (the log-probabilities
    through the model's chunked head, ModelConfig.logits_chunk; layers rematerialised
    per `remat`)."""
    if jnp.ndim(tokens) != 2:
        raise ValueError(f"tokens must be [B, L], got shape {jnp.shape(tokens)}")
    for name, x in (("token_mask", token_mask), ("loss_mask", loss_mask)):
        if jnp.shape(x) != jnp.shape(tokens):
            raise ValueError(f"{name} shape {jnp.shape(x)} != tokens {jnp.shape(tokens)}")
    token_mask = token_mask.astype(bool)
    logp = sequence_logprobs(graphdef, params, tokens, token_mask, remat=remat)
    # A token without a real predecessor has no prediction to train.
    mask = loss_mask.astype(bool) & predicted_mask(token_mask)
    loss = masked_nll(logp, mask)
    return loss, {"loss": loss, "num_tokens": masked_count(mask)}


class SFTStep:
    """`step(params, opt_state, tokens, token_mask, loss_mask, frozen=None) -> (params,
    opt_state, metrics)`, jitted with params and opt_state donated (frozen, a LoRA
    base, only read); `num_compiles` counts traces."""

    def __init__(self, fn: Callable):
        self.traces = TraceCounter()
        self._jitted = jax.jit(self.traces.wrap("sft_step", fn), donate_argnums=(0, 1))

    def __call__(self, params, opt_state, tokens, token_mask, loss_mask, frozen=None):
        return self._jitted(params, opt_state, tokens, token_mask, loss_mask, frozen)

    @property
    def num_compiles(self) -> int:
        return self.traces.total


def make_sft_step(graphdef: nnx.GraphDef, optimizer: optax.GradientTransformation, *,
                  learning_rate_fn: optax.Schedule | None = None,
                  step_counter: Callable[[Any], jax.Array] | None = None,
                  remat: str = "none") -> SFTStep:
    """One supervised update with the NaN guard.

    Metrics: loss, num_tokens, grad_norm (before clipping), finite, nonfinite_loss,
    nonfinite_grad, and learning_rate = learning_rate_fn(count) when given, where count
    is the number of updates applied so far, read from the optimizer state by
    `step_counter` (default: optax's first `count` leaf, which adam keeps). remat: the
    forward's per-layer rematerialisation (SFTConfig.remat).
    """
    check_remat(remat)
    counter = step_counter or _optax_count

    def loss_of(params, frozen, tokens, token_mask, loss_mask):
        state = params if frozen is None else nnx.merge_state(frozen, params)
        return sft_loss(graphdef, state, tokens, token_mask, loss_mask, remat)

    def step(params, opt_state, tokens, token_mask, loss_mask, frozen):
        (loss, metrics), grads = jax.value_and_grad(loss_of, has_aux=True)(
            params, frozen, tokens, token_mask, loss_mask)
        grad_norm = optax.global_norm(grads)
        updates, new_opt_state = optimizer.update(grads, opt_state, params)
        new_params = optax.apply_updates(params, updates)
        finite_loss, finite_grad = jnp.isfinite(loss), jnp.isfinite(grad_norm)
        apply = finite_loss & finite_grad
        keep = lambda new, old: jax.tree.map(lambda n, o: jnp.where(apply, n, o), new, old)
        metrics = dict(metrics, grad_norm=grad_norm, finite=apply.astype(jnp.float32),
                       nonfinite_loss=(~finite_loss).astype(jnp.float32),
                       nonfinite_grad=(~finite_grad).astype(jnp.float32))
        if learning_rate_fn is not None:
            metrics["learning_rate"] = jnp.asarray(learning_rate_fn(counter(opt_state)),
                                                   jnp.float32)
        return keep(new_params, params), keep(new_opt_state, opt_state), metrics

    return SFTStep(step)


def _optax_count(opt_state: Any) -> jax.Array:
    counts = optax.tree_utils.tree_get_all_with_path(opt_state, "count")
    if not counts:
        raise ValueError("the optimizer state has no 'count'; pass step_counter")
    return counts[0][1]


def sft_batches(num_examples: int, config: SFTConfig, key: jax.Array,
                groups: np.ndarray | None = None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The update schedule of run_sft: (rows [batch_size] int, real [batch_size] bool)
    per update. Epoch e is a permutation drawn with fold_in(key, e), cut into batches;
    a short last batch is filled with repeated rows marked not real. config.steps
    updates in all (crossing epochs), or config.epochs full passes.

    groups: optional int per example (run_sft passes each row's length bucket). Each
    batch then holds one group's examples (the epoch's permutation cut group by group),
    and the batches of an epoch are visited in a seeded random order, so short rows
    are never padded to the longest row of the data set.
    """
    if groups is not None and np.shape(groups) != (num_examples,):
        raise ValueError(f"groups must have shape ({num_examples},), got {np.shape(groups)}")
    size = config.batch_size
    labels = np.zeros(num_examples, np.int64) if groups is None else np.asarray(groups)
    batches_per_epoch = sum(-(-int((labels == g).sum()) // size) for g in np.unique(labels))
    total = config.steps if config.steps is not None else config.epochs * batches_per_epoch
    done, epoch = 0, 0
    while done < total:
        order = np.asarray(jax.random.permutation(jax.random.fold_in(key, epoch), num_examples))
        batches = []
        for g in np.unique(labels):
            members = order[labels[order] == g]
            batches += [members[start:start + size] for start in range(0, len(members), size)]
        if len(np.unique(labels)) > 1:  # one group: the plain permutation's order
            visit = np.random.default_rng(
                np.asarray(jax.random.key_data(jax.random.fold_in(key, epoch)))).permutation(
                len(batches))
            batches = [batches[int(i)] for i in visit]
        for rows in batches:
            if done == total:
                return
            real = np.arange(size) < rows.size
            # Fill a short batch with copies of a real row, masked out: shapes stay static.
            yield np.resize(rows, size), real
            done += 1
        epoch += 1


def length_buckets(token_mask: np.ndarray, max_len: int, minimum: int = 64) -> np.ndarray:
    """Per row, the power of two >= its real length (at least `minimum`, at most
    max_len): the column count run_sft cuts that row's batch to."""
    lengths = np.asarray(token_mask).sum(axis=1)
    buckets = [min(max_len, 1 << (max(int(n), minimum) - 1).bit_length()) for n in lengths]
    return np.asarray(buckets, np.int64)


@functools.lru_cache(maxsize=8)
def _sft_step_for(graphdef: nnx.GraphDef, optim: OptimConfig, remat: str = "none"
                  ) -> tuple[optax.GradientTransformation, SFTStep]:
    """One optimizer and compiled step per (model graph, optimizer config, remat):
    warm-starting N agents of one architecture compiles once, not N times."""
    optimizer = make_optimizer(optim)
    return optimizer, make_sft_step(graphdef, optimizer, learning_rate_fn=make_schedule(optim),
                                    remat=remat)


class SFTProgress(NamedTuple):
    """Where run_sft stands after `update` updates: enough to continue exactly."""

    update: int
    params: Any
    opt_state: Any
    nonfinite_updates: jax.Array  # f32 scalar: skipped (non-finite) updates so far


def run_sft(graphdef: nnx.GraphDef, params: nnx.State, examples: SFTExamples, config: SFTConfig,
            key: jax.Array | None = None,
            log_fn: Callable[[int, dict[str, float]], None] | None = None, *,
            resume: SFTProgress | None = None,
            on_progress: Callable[[SFTProgress], None] | None = None,
            progress_every: int = 0, frozen: nnx.State | None = None) -> nnx.State:
    """Trains `params` on `examples` and returns the new parameters.

    frozen: LoRA's base (params are then its adapters and `graphdef` the adapted
    model's, mtrl.models.adapters), held fixed; None: params are the whole model.

    Shuffled minibatches (key None: jax.random.key(config.seed)); the inputs are copied
    first, so `params` stays valid. Every config.log_every updates and after the last,
    log_fn(update, host metrics of that update plus `nonfinite_updates`, the running
    count of skipped updates) is called; then a FloatingPointError is raised if any
    update so far had a non-finite loss or gradient (each such update was skipped, so
    the parameters are still finite).

    Exact resume: every `progress_every` updates (and after the last) on_progress gets
    an SFTProgress; run_sft(..., resume=that progress) with the same inputs skips the
    batches already trained (the schedule is a function of the key) and continues
    from its parameters and optimizer state, so it ends where an uninterrupted call
    ends, bit for bit on one machine.
    """
    if examples.tokens.shape[1] != config.max_len:
        raise ValueError(f"examples have L = {examples.tokens.shape[1]}, config.max_len is "
                         f"{config.max_len}")
    key = jax.random.key(config.seed) if key is None else key
    optimizer, step = _sft_step_for(graphdef, config.optim, config.remat)
    params = jax.tree.map(jnp.copy, params if resume is None else resume.params)
    opt_state = optimizer.init(params) if resume is None else resume.opt_state
    # Committed like a restored state, so a resumed run's step is the same program.
    params, opt_state, frozen = committed((params, opt_state, frozen))
    done = 0 if resume is None else int(resume.update)
    tokens, token_mask = jnp.asarray(examples.tokens), jnp.asarray(examples.token_mask)
    loss_mask = jnp.asarray(examples.loss_mask)
    metrics, update = None, 0
    # Counted on the device so that skipped updates between reports are not missed
    # without a host sync per update.
    nonfinite_updates = (jnp.zeros((), jnp.float32) if resume is None
                         else jnp.asarray(resume.nonfinite_updates, jnp.float32))
    # Rows are batched by length bucket and cut to it: one compiled step per bucket.
    buckets = length_buckets(examples.token_mask, config.max_len)
    total = sum(1 for _ in sft_batches(len(examples), config, key, buckets))
    for update, (rows, real) in enumerate(sft_batches(len(examples), config, key, buckets),
                                          start=1):
        if update <= done:
            continue  # trained before the resume point
        width = int(buckets[rows[0]])
        rows = jnp.asarray(rows)
        params, opt_state, metrics = step(
            params, opt_state, tokens[rows, :width], token_mask[rows, :width],
            loss_mask[rows, :width] & jnp.asarray(real)[:, None], frozen)
        nonfinite_updates = nonfinite_updates + (1.0 - metrics["finite"])
        if update % config.log_every == 0:
            _report(update, dict(metrics, nonfinite_updates=nonfinite_updates), log_fn)
        if on_progress is not None and (
                (progress_every and update % progress_every == 0) or update == total):
            on_progress(SFTProgress(update, params, opt_state, nonfinite_updates))
    if metrics is not None and update % config.log_every:
        _report(update, dict(metrics, nonfinite_updates=nonfinite_updates), log_fn)
    return params


def _report(update: int, metrics: dict[str, jax.Array], log_fn) -> None:
    host = {name: float(value) for name, value in jax.device_get(metrics).items()}
    if log_fn is not None:
        log_fn(update, host)
    check_finite(host)
    if host["nonfinite_updates"] > 0:
        raise FloatingPointError(
            f"SFT: {int(host['nonfinite_updates'])} of the first {update} updates had a "
            "non-finite loss or gradient and were skipped")
