"""One policy's SFT inside the warm start (warm_start.py): its first phase, then the mixed
phase, each trained by run_sft, checkpointed after every update that
sft.checkpoint_every (or a stop request) asks for, and continued while its check fails.

    AgentSFT(starter, a, params, pairs, log, checkpoints, elapsed, frozen, progress,
             check, kind, fmt).run(resumed) -> policy a's parameters

A phase's continuation goes on with the phase's optimizer state and batch order (its
schedule stretched to the new length), so a restart anywhere, mid-check included,
retraces the uninterrupted run.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

from mtrl.training.run.interrupts import stop_point, stop_requested
from mtrl.training.sft.sft import run_sft, sft_examples
from mtrl.training.sft.sft_data import rows_of_kind
from mtrl.training.sft.warm_start_check import WarmStartCheckFailed


@dataclasses.dataclass
class AgentSFT:
    starter: Any  # the WarmStarter: config, keys, graphdef, the check and its SFTConfig
    a: int  # the policy
    params: list  # every policy's parameters (the others' go into each checkpoint)
    pairs: list  # policy a's demonstrations: (prompt, completion) rows
    log: Callable  # log(tag, update, metrics): sft.jsonl and the metric sinks
    checkpoints: Any  # SFTCheckpoints
    elapsed: Callable[[], float]  # the warm start's seconds so far, earlier invocations too
    frozen: Any  # LoRA: policy a's frozen base; None: the whole model trains
    progress: Any  # the progress bar of policy a's planned sft.steps
    check: Any  # the check's held-out examples (None: unchecked)
    kind: str  # the first phase's row kind
    fmt: Any  # policy a's turn format

    def run(self, resumed) -> Any:
        """The first phase, checked on its kind; then the mixed phase, checked again
        unless it teaches that kind's resubmission (revisions with a weak teacher).
        `resumed`: policy a's restored SFT position (None: from the start)."""
        s, starter = self.starter.sft, self.starter
        first, p = s.first_phase_steps, self.params[self.a]

        def restored(phase):
            return resumed.progress() if resumed is not None and resumed.phase == phase \
                else None
        length = first
        if resumed is not None and resumed.phase > 0:
            length = first if resumed.earlier is None else resumed.earlier
        elif first:
            p, length = self.checked_phase(0, first, self.kind, 0, restored(0), self.check,
                                           0, first, p)
        mixed_check = self.check if starter.checked_after_mixing(self.a, self.kind) else None
        p, _ = self.checked_phase(1, s.steps - first, None, length, restored(1), mixed_check,
                                  first, s.steps, p)
        return p

    def checked_phase(self, phase, planned, rows_kind, done, at, check, shown, cap, p):
        """Trains `phase` to `planned` updates, then, while `check` (None: none) fails,
        r times check_extra_steps more (`at`: the restored position in this phase;
        `done`: the updates of earlier phases; `p`: the parameters it starts from).
        Returns (params, the phase's length)."""
        s = self.starter.sft
        length, r, last, trained = planned, 0, None, p
        while True:
            if check is not None and at is not None and at.update > length:
                r, length = r + 1, length + s.check_extra_steps  # failed before
                continue
            start, at = at or last, None
            if start is not None and start.update == length:
                trained, last = start.params, start  # restarted at the phase's end
            else:
                trained, last = self.train(phase, length, rows_kind, done, start, shown, cap,
                                           p)
            if check is None:
                return trained, length
            result = self.starter.check_policy(self.a, trained, self.frozen, check,
                                               self.kind, phase, done + length, r, self.log)
            if result.passed:
                return trained, length
            if not result.continues:
                raise WarmStartCheckFailed(result.failure())
            r, length = r + 1, length + s.check_extra_steps

    def train(self, phase, steps, kind, done, resume, shown, cap, p):
        """run_sft of `phase` to `steps` updates on the rows of `kind` (None: all), from
        `resume` (an SFTProgress) or `p`. Returns (params, the last SFTProgress)."""
        s, a = self.starter.sft, self.a
        chosen = rows_of_kind(self.pairs, kind)
        if not chosen:
            raise ValueError(f"config.sft.first_phase: agent {a} has no {kind!r} "
                             "demonstrations (see sft.revision_fraction)")
        examples = sft_examples(self.starter.c.tokenizer, chosen, self.fmt, s.max_len)
        last = []

        def log_and_show(i, m):
            self.log(f"sft/agent{a}", done + i, m)
            if shown + i <= cap:
                self.progress.update(shown + i, loss=m["loss"])

        def save(state):
            # Called after every update: a stop request (Ctrl-C) saves here.
            last[:] = [state]
            stopping = stop_requested()
            if state.update % s.checkpoint_every and state.update != steps and not stopping:
                return
            if self.starter.main:  # every process trains the same SFT; one saves it
                everyone = [*self.params[:a], state.params, *self.params[a + 1:]]
                self.checkpoints.save(a * self.starter.agent_updates() + done + state.update,
                                      a, phase, everyone, state, self.elapsed(), earlier=done)
            if stopping:
                self.checkpoints.close()  # the save is on disk before the exit
                stop_point(f"SFT update {done + state.update} of agent {a}")
        trained = run_sft(self.starter.graphdef, resume.params if resume else p, examples,
                          self.starter.sft_config(steps), self.starter.keys.sft(a, phase),
                          log_fn=log_and_show, resume=resume, on_progress=save,
                          progress_every=1, frozen=self.frozen)
        return trained, last[0]
