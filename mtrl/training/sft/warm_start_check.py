"""Has the warm start learned what RL needs? A check of each policy on held-out
demonstrations at the end of each SFT phase, before RL.

A demonstration row is reproduced when greedy decoding writes its completion exactly,
which (for a row laid out by sft_examples: prompt, completion, eos) is when every
trained token is the argmax of the model's prediction under teacher forcing:

    exact_e  = ∧_{i ≥ 1, loss_mask[e, i]}  argmax_v z_θ[e, i − 1, v] == tokens[e, i]
    fraction = (1 / n) Σ_{e < n} exact_e          (n = min(limit, E): the first rows)

with z_θ the logits at the position before token i (ties: the first maximum, as
greedy decoding takes it). The rows are built exactly like SFT's own from the
validation tasks (the suite's `validation_demonstrations`), so their values are ones
no train row holds: a policy that copies the number its prompt or feedback states
reproduces them, a table of train answers does not.

The check measures the row kind of the agent's first phase (sft_data.first_phase_kinds)
after that phase, and again after the mixed phase, which can undo a copy the first
phase taught (a fresh optimizer on all rows), except where the mixed phase teaches
that kind's resubmission on purpose: a weak teacher's revisions, after which a good
warm start's greedy revisions are the resubmission and score near 0
(tools/sft_copy_check.py measures after SFT).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Protocol, runtime_checkable

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from mtrl.training.sft.sft import SFTExamples

KNOBS = ("sft.first_phase_steps", "sft.check_extra_steps", "sft.check_rounds",
         "sft.learning_rate")


class WarmStartCheckFailed(RuntimeError):
    """The warm start did not pass its check; str() is the one line that says why."""


@runtime_checkable
class ValidationDemonstrations(Protocol):
    """A suite capability: its SFT rows built the same way from the validation tasks
    ([agent] -> (prompt, completion)); nothing trains on them."""

    def validation_demonstrations(self, env, num_agents: int, sft) -> list[list[tuple]]: ...


def heldout_demonstrations(suite, env, num_agents: int, sft, check_only: bool = False
                           ) -> list[list[tuple]] | None:
    """The suite's validation demonstrations; one line when it builds none (check_only:
    that check alone, None)."""
    if not isinstance(suite, ValidationDemonstrations):
        raise ValueError(f"config.sft.check_min_exact: the {type(suite).__name__} suite builds "
                         "no demonstrations from its validation tasks to check the warm "
                         "start on; set it 0")
    return None if check_only else suite.validation_demonstrations(env, num_agents, sft)


@functools.partial(jax.jit, static_argnums=0)
def _exact_rows(graphdef, params, frozen, tokens, token_mask, loss_mask):
    state = params if frozen is None else nnx.merge_state(frozen, params)
    model = nnx.merge(graphdef, state)
    hidden, _ = model.hidden_states(tokens, token_mask=token_mask)
    predicted = jnp.argmax(model.logits(hidden)[:, :-1], axis=-1)
    right = (predicted == tokens[:, 1:]) | ~loss_mask[:, 1:]
    return right.all(axis=1)


def exact_rows(graphdef: nnx.GraphDef, params: nnx.State, examples: SFTExamples, *,
               frozen: nnx.State | None = None, chunk: int = 16) -> np.ndarray:
    """[E] bool: exact_e of the module docstring for every row of `examples` ([E, L]
    arrays). frozen: LoRA's base under the adapters `params` (None: params are the
    whole model). Rows go through the model `chunk` at a time (the last chunk padded
    with copies of its first row, dropped): one compiled shape, logits [chunk, L, V]."""
    tokens, token_mask, loss_mask = examples.tokens, examples.token_mask, examples.loss_mask
    if tokens.ndim != 2 or token_mask.shape != tokens.shape or loss_mask.shape != tokens.shape:
        raise ValueError(f"examples need [E, L] tokens, token_mask and loss_mask, got "
                         f"{tokens.shape}, {token_mask.shape}, {loss_mask.shape}")
    if chunk < 1:
        raise ValueError(f"chunk must be >= 1, got {chunk}")
    out = []
    for start in range(0, len(tokens), chunk):
        rows = np.arange(start, min(start + chunk, len(tokens)))
        padded = np.resize(rows, chunk)
        exact = _exact_rows(graphdef, params, frozen, jnp.asarray(tokens[padded]),
                            jnp.asarray(token_mask[padded], bool),
                            jnp.asarray(loss_mask[padded], bool))
        out.append(np.asarray(exact)[:rows.size])
    return np.concatenate(out) if out else np.zeros(0, bool)


def exact_fraction(graphdef: nnx.GraphDef, params: nnx.State, examples: SFTExamples,
                   limit: int | None = None, *, frozen: nnx.State | None = None
                   ) -> tuple[float, int]:
    """(fraction, n): the share of the first n = min(limit, E) rows that greedy decoding
    reproduces (module docstring; limit None: every row)."""
    n = len(examples) if limit is None else min(int(limit), len(examples))
    if n < 1:
        raise ValueError("no rows to check")
    first = SFTExamples(examples.tokens[:n], examples.token_mask[:n], examples.loss_mask[:n])
    return float(exact_rows(graphdef, params, first, frozen=frozen).mean()), n


@dataclasses.dataclass(frozen=True)
class CheckResult:
    """One check of agent `agent` at the end of SFT phase `phase` (0: first, 1: mixed),
    after `updates` SFT updates in all (round r of `rounds` continuations of the phase
    so far; each continuation adds `extra_steps` updates)."""

    agent: int
    kind: str  # the first phase's row kind
    exact: float  # the measured fraction
    rows: int
    minimum: float  # sft.check_min_exact
    phase: int
    updates: int
    round: int
    rounds: int
    extra_steps: int

    @property
    def passed(self) -> bool:
        return self.exact >= self.minimum

    @property
    def continues(self) -> bool:
        """Failed, with a continuation left: the first phase goes on."""
        return not self.passed and self.round < self.rounds

    def metrics(self) -> dict[str, float]:
        """The SFT log's line (tag sft_check/agent<a>, step `updates`)."""
        return {"exact": self.exact, "rows": float(self.rows), "min_exact": self.minimum,
                "phase": float(self.phase), "round": float(self.round),
                "passed": float(self.passed)}

    @property
    def _when(self) -> str:
        return f"after {self.updates} SFT updates ({('first', 'mixed')[self.phase]} phase)"

    def line(self) -> str:
        """What the run prints after the check."""
        head = (f"SFT check of agent {self.agent}: greedy decoding reproduces {self.exact:.3f} "
                f"of {self.rows} held-out {self.kind!r} demonstrations {self._when} "
                f"(sft.check_min_exact {self.minimum:g})")
        if self.passed:
            return f"{head}: passed"
        if self.continues:
            return (f"{head}: the phase goes on for {self.extra_steps} updates "
                    f"(continuation {self.round + 1} of {self.rounds})")
        return f"{head}: failed"

    def failure(self) -> str:
        """The one line a run that fails its check stops with."""
        return (f"SFT warm start failed its check: agent {self.agent}'s greedy decoding "
                f"reproduces {self.exact:.3f} of {self.rows} held-out {self.kind!r} "
                f"demonstrations {self._when} "
                f"({self.round} continuation(s)), below sft.check_min_exact={self.minimum:g}: "
                "it has not learned to copy the values its prompts state, which RL needs; "
                f"in a new --workdir, train longer or otherwise ({', '.join(KNOBS)})")
