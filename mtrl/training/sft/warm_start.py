"""The SFT warm start: each policy's supervised fine-tuning on its suite's
demonstrations, resumable from its own checkpoints, or the weights of another run
(`train.init_from`). The trainer makes one WarmStarter; everything it reads is one of
its fields. Under LoRA the policies' parameters are their adapters: SFT trains them over
the frozen base (`frozen`), and its checkpoints, like train.init_from's source, hold
adapters and name their base (checkpoints/base_record.py).
"""

from __future__ import annotations

import pathlib
import dataclasses
import time
from typing import Any

from mtrl.rollout.generator import per_agent_formats
from mtrl.training.checkpoints.base_record import on_checked_base
from mtrl.training.checkpoints.checkpointing import CheckpointKeeper
from mtrl.models.lora import LoRAConfig
from mtrl.training.logging import Progress
from mtrl.training.policy.optim import OptimConfig, make_optimizer
from mtrl.training.run.run_config import read_config
from mtrl.training.sft.agent_sft import AgentSFT
from mtrl.training.sft.sft import SFTConfig, sft_examples
from mtrl.training.sft.sft_checkpoint import SFTCheckpoints
from mtrl.training.sft.sft_data import rows_of_kind
from mtrl.data.demonstrations import per_agent
from mtrl.training.sft.warm_start_check import (CheckResult, exact_fraction,
                                                heldout_demonstrations)
from mtrl.training.run.build import Components
from mtrl.training.run.sections import SFTSection
from mtrl.training.run.keys import RunKeys
from mtrl.training.policy.train_state import agent_params, init_train_state


@dataclasses.dataclass
class WarmStarter:
    c: Components
    sft: SFTSection
    seed: int
    init_from: str  # train.init_from: another run's workdir ("" : SFT here)
    workdir: pathlib.Path
    graphdef: Any
    optimizer: Any  # the RL optimizer: the layout of an init_from checkpoint's state
    keys: RunKeys
    num_agents: int
    shared: bool  # one policy for every agent
    first_phase: tuple  # per agent: the row kind of SFT's first phase
    main: bool = True  # this process writes checkpoints and says what it does
    show_progress: bool = True
    seconds_before: float = 0.0  # SFT time of earlier invocations (resumed SFT)
    base: Any = None  # LoRA: the frozen base laid out like the train state (None: full)
    base_record: dict | None = None  # LoRA: the base's name and digest (base_record.py)
    remat: str = "none"  # train.remat: the layers' rematerialisation, SFT's as the update's
    lora: LoRAConfig | None = None  # LoRA: the adapters' config (None: full fine-tuning)

    def __post_init__(self):
        s = self.sft
        if s.enabled and s.checks and not self.init_from:  # one line before anything runs
            heldout_demonstrations(self.c.suite, None, self.num_agents, s, check_only=True)

    def run(self, log) -> list:
        """SFT of each policy on its role's demonstrations (or the loaded weights).

        With sft.first_phase_steps = K > 0, each policy first trains K updates on one
        kind of its demonstrations alone (sft.first_phase, per agent: "first_turn" or
        "revisions"), then sft.steps - K on all of them, each phase with a fresh
        optimizer: a copy one kind teaches (the example's value from the prompt, the
        coefficient from the feedback) is learned before rows whose loss is mostly an
        irreducible guess join and drown its gradient.

        With sft.check_min_exact > 0 each phase ends with a check on held-out
        demonstrations of the first phase's kind (warm_start_check.py; after the mixed
        phase only where it does not teach that kind's resubmission): greedy decoding
        must reproduce that share of them, or the phase goes on for
        sft.check_extra_steps updates and is checked again, up to sft.check_rounds
        times; then WarmStartCheckFailed stops the run with one line. A warm start that
        cannot copy the values its prompts state leaves RL groups with no signal; this
        stops it before RL.

        Every sft.checkpoint_every updates the position is checkpointed
        (sft_checkpoint.py); a killed run resumes there exactly."""
        params = self.c.initial_params()
        s = self.sft
        self.seconds_before = 0.0
        if self.init_from:
            return self.params_from(self.init_from)
        if not s.enabled:
            return params
        pairs = self.c.suite.demonstrations(self.c.env, self.num_agents, s)
        # The check's rows: built like `pairs` from the validation tasks, with no
        # resubmissions (the check reads rows that change the answer: all of them).
        heldout = (heldout_demonstrations(self.c.suite, self.c.env, self.num_agents,
                                          dataclasses.replace(s, resubmit_fraction=0.0))
                   if s.checks else None)
        checkpoints = SFTCheckpoints(self.workdir / "sft_checkpoints",
                                     self.workdir / "sft.jsonl", self.base_record)
        template = make_optimizer(self.sft_config(max(1, s.steps)).optim).init(params[0])
        resumed, seconds_before = checkpoints.restore(params, template)
        self.seconds_before = seconds_before
        if resumed is not None:
            params = list(resumed.params)
            if self.main:
                print(f"resuming SFT of agent {resumed.agent} from phase {resumed.phase} "
                      f"update {resumed.update}", flush=True)
        started = time.perf_counter()
        try:
            for a in range(len(params)):
                if resumed is not None and a < resumed.agent:
                    continue  # trained before the restart
                params[a] = self._warm_start_agent(a, params, pairs, log, checkpoints,
                                                   resumed if resumed and resumed.agent == a
                                                   else None,
                                                   lambda: seconds_before + time.perf_counter()
                                                   - started, heldout)
        finally:
            checkpoints.close()
        return params

    def params_from(self, workdir: str) -> list:
        """Every policy's parameters at the latest checkpoint of the run in `workdir`
        (train.init_from: e.g. one SFT warm start shared by the arms of a comparison)."""
        source = read_config(workdir) or {}
        keep_reference = float(source.get("loss", {}).get("kl_coef", 0.0)) > 0
        check_same_adapters(source, self.lora, workdir)
        params = self.c.initial_params()
        template = init_train_state(params * self.num_agents if self.shared else params,
                                    self.optimizer, shared=self.shared,
                                    keep_reference=keep_reference, lora=self.lora,
                                    base=self.base)
        keeper = CheckpointKeeper(pathlib.Path(workdir) / "checkpoints", keep_best=1)
        try:
            restored = keeper.restore("latest", target={"train": template.checkpointed()})
            state = on_checked_base(restored.state["train"], restored.extra, self.base,
                                    self.base_record, keeper.step_directory(restored.step))
        except (FileNotFoundError, ValueError, KeyError) as e:
            raise ValueError(f"config.train.init_from: no compatible checkpoint in {workdir} "
                             f"({type(e).__name__}: {' '.join(str(e).split())[:200]})") from None
        finally:
            keeper.close()
        return [agent_params(state, a) for a in range(1 if self.shared else self.num_agents)]

    def _warm_start_agent(self, a: int, params: list, pairs, log, checkpoints,
                          resumed, elapsed, heldout=None) -> Any:
        """Policy a's SFT: the first phase, then the mixed phase, each checked on
        `heldout` (the validation demonstrations; None: no check) and continued while
        its check fails. Returns its parameters; WarmStartCheckFailed when a phase's
        last check fails."""
        # LoRA: SFT trains the adapters over this policy's frozen base.
        frozen = None if self.c.adapters is None else self.c.base_states()[a]

        def mine(lists):
            return [x for agent_list in lists for x in agent_list] if self.shared else lists[a]
        kind = self.first_phase[a]
        fmt = per_agent_formats(self.c.turn_format, self.num_agents)[a]
        check = None if heldout is None else self._check_examples(mine(heldout), kind, fmt, a)
        # SFT is minutes of the default run: show it like the RL steps (a phase's
        # continuations are not shown: the check's line says they run).
        with Progress(self.sft.steps, enabled=self.show_progress,
                      description=f"sft agent{a}") as progress:
            return AgentSFT(self, a, params, mine(pairs), log, checkpoints, elapsed, frozen,
                            progress, check, kind, fmt).run(resumed)

    def agent_updates(self) -> int:
        """The most SFT updates of one policy (its checkpoints' step stride): sft.steps,
        plus every continuation of both phases when the warm start is checked."""
        s = self.sft
        return s.steps + (2 * s.check_rounds * s.check_extra_steps if s.checks else 0)

    def checked_after_mixing(self, a: int, kind: str) -> bool:
        """Whether the mixed phase keeps teaching agent a's first-phase kind as it is:
        not for revisions when the weak teacher resubmits some (then a good policy's
        greedy revisions become resubmissions)."""
        resubmit = per_agent(self.sft.resubmit_fraction, self.num_agents, "resubmit_fraction")
        return kind != "revisions" or (max(resubmit) if self.shared else resubmit[a]) == 0

    def _check_examples(self, heldout: list, kind: str, fmt, a: int):
        """The rows the check reads: the first sft.check_rows held-out rows of `kind`."""
        rows = rows_of_kind(heldout, kind)[:self.sft.check_rows]
        if not rows:
            raise ValueError(f"config.sft.check_min_exact: agent {a} has no held-out {kind!r} "
                             "demonstrations to check (see sft.revision_fraction)")
        return sft_examples(self.c.tokenizer, rows, fmt, self.sft.max_len)

    def check_policy(self, a, p, frozen, examples, kind, phase, updates, r, log) -> CheckResult:
        """Checks policy a at the end of `phase`, after `updates` SFT updates in all (r
        continuations so far), logs the result (sft.jsonl: tag sft_check/agent<a>)
        and says it."""
        s = self.sft
        exact, n = exact_fraction(self.graphdef, p, examples, frozen=frozen)
        result = CheckResult(agent=a, kind=kind, exact=exact, rows=n, minimum=s.check_min_exact,
                             phase=phase, updates=updates, round=r, rounds=s.check_rounds,
                             extra_steps=s.check_extra_steps)
        log(f"sft_check/agent{a}", updates, result.metrics())
        if self.main:
            print(result.line(), flush=True)
        return result

    def sft_config(self, steps: int) -> SFTConfig:
        s = self.sft
        return SFTConfig(optim=OptimConfig(learning_rate=s.learning_rate,
                                           warmup_steps=max(1, min(20, steps // 10)),
                                           schedule=s.schedule, total_steps=steps,
                                           max_grad_norm=1.0, b2=s.adam_b2),
                         batch_size=s.batch_size, steps=steps, max_len=s.max_len,
                         seed=self.seed, log_every=min(25, steps), remat=self.remat)


def check_same_adapters(source: dict, lora: LoRAConfig | None, workdir: str) -> None:
    """One line unless the run in `workdir` (its config.json record `source`) trained
    what this run trains: the whole model, or adapters of the same rank on the same
    projections (train.init_from restores its parameters as this run's)."""
    theirs = LoRAConfig(**source.get("lora", {}))
    mine = lora if lora is not None else LoRAConfig()
    if (theirs.rank, theirs.targets) != (mine.rank, mine.targets):
        def what(c):
            return (f"adapters of rank {c.rank} on {','.join(c.targets)}" if c.enabled
                    else "the whole model (lora.rank=0)")
        raise ValueError(f"config.train.init_from: the run in {workdir} trained {what(theirs)}; "
                         f"this run trains {what(mine)}")
