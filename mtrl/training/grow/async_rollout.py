"""One-step-off-policy rollouts (train.off_policy = 1).

On-policy, step k rolls out with θ_{k−1} and then updates to θ_k, so the device
alternates between generation and the update. Off-policy by one step, step k+1's
tree grows in a background thread from θ_{k−1} while step k's update runs:

    step k:   tree_k (made during step k−1, from θ_{k−2}) ─► update θ_{k−1} → θ_k
              tree_{k+1} ← rollout(θ_{k−1})   in the background, at the same time

The behaviour policy of tree_k is the sampler's: its log-probabilities are the
rollout batch's `old_logprobs`, i.e. π_old in every ratio loss (ppo, gspo,
turn-ratio), which corrects for the one-step lag through the importance ratio
π_θ/π_old. REINFORCE ignores π_old (its update is then one step stale, uncorrected;
its ratio metrics show the gap). The staleness of a tree (updates between the
parameters that sampled it and the ones it updates) is reported per step: 1 in
steady state, 0 for a tree made on demand (the first step, and the first after a
resume, which starts the lag again: a resumed run is not bit-identical here).

The background rollout shares the trainer's Sampler (one set of compiled programs):
every backend over it is a `SerializedBackend` holding one lock around each call, as
a call swaps the sampler's parameters and then runs it, so an evaluation in the main
thread waits for the background call in flight instead of swapping its weights. The
background rollout samples from copies of the parameters, because the next train step
donates the state's buffers.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import threading
from typing import Callable, Sequence

import jax
import jax.numpy as jnp

from mtrl.rollout.backend import PolicyBackend
from mtrl.rollout.tree import TreeRollout

OFF_POLICY_LAGS = (0, 1)


@dataclasses.dataclass
class _Pending:
    step: int  # the RL step the tree is for
    made_at: int  # the RL step during which it started (its params: before that update)
    future: concurrent.futures.Future


class OffPolicyRollouts:
    """take(step, params) -> (tree, staleness); prefetch(step + 1, params) before the
    update of `step` so the next tree grows while that update runs.

    grow(step, backend) rolls out step `step`'s tasks with `backend`; make_backend(params)
    is a backend over one parameter state per policy (never shared with the main
    thread's sampler).
    """

    def __init__(self, grow: Callable[[int, PolicyBackend], TreeRollout],
                 make_backend: Callable[[Sequence], PolicyBackend]):
        self._grow = grow
        self._make_backend = make_backend
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="mtrl-rollout")
        self._pending: _Pending | None = None

    def take(self, step: int, params: Sequence) -> tuple[TreeRollout, int]:
        """Step `step`'s tree and its staleness; made now, from `params`, when no
        background rollout was started for it."""
        pending, self._pending = self._pending, None
        if pending is not None and pending.step == step:
            return pending.future.result(), step - pending.made_at
        if pending is not None:
            pending.future.result()  # a tree for another step (never used): finish it
        return self._grow(step, self._make_backend(_copy(params))), 0

    def prefetch(self, step: int, params: Sequence) -> None:
        """Starts step `step`'s rollout from `params` (copied: the update donates them)."""
        if self._pending is not None:
            raise RuntimeError(f"a rollout for step {self._pending.step} is still pending")
        backend = self._make_backend(_copy(params))
        self._pending = _Pending(step=step, made_at=step - 1,
                                 future=self._executor.submit(self._grow, step, backend))

    def close(self) -> None:
        """Waits for a pending rollout (its errors are dropped) and stops the thread."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.future.exception()
        self._executor.shutdown(wait=True)


class SerializedBackend(PolicyBackend):
    """`inner` with each call under `lock`, shared by every backend over one sampler."""

    def __init__(self, inner: PolicyBackend, lock: threading.Lock):
        self.inner, self.lock = inner, lock

    def begin(self, agent, prompts):
        with self.lock:
            return self.inner.begin(agent, prompts)

    def generate(self, agent, contexts, num_samples, max_new_tokens, key):
        with self.lock:
            return self.inner.generate(agent, contexts, num_samples, max_new_tokens, key)

    def extend(self, agent, contexts, rows, new_tokens):
        with self.lock:
            return self.inner.extend(agent, contexts, rows, new_tokens)

    def set_states(self, states) -> None:
        self.inner.set_states(states)


def _copy(params: Sequence) -> list:
    return [jax.tree.map(jnp.copy, p) for p in params]
