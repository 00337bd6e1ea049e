"""The training loop: SFT warm start, then multi-turn multi-agent RL with held-out
evaluation and best-checkpoint selection (docs/design.md section 1).

Per step s (keys: named streams folded with s, keys.py, so a resumed run repeats an
uninterrupted one), the stages of `run`, top to bottom, each one package:
  grow        tasks[s·P : (s+1)·P] of a seeded per-epoch permutation of the train
              split (through the learnable band), rolled out as a tree (grow/);
  score       the reward recipe and IGPO's answer log-probs on the tree (score/);
  advantages  the tree and its rows as one StepRollout, its loss mask through the
              filters, per-token advantages of credit.estimator (advantages/);
  update      PPO epochs/minibatches of the jitted train step (one optimizer per
              agent) on the rows (train.drop_zero_advantage: informative groups only),
              packed by train.packing (update/);
  publish     the new parameters to the sampler (publish/);
  evaluate    every eval_interval steps: held-out evaluation (evaluate/);
  save        a checkpoint ranked by held-out success, and every save_interval steps
              the latest (checkpoints/).
Between stages the loop carries the train state and one LoopState (loop_state.py).
The end: the test splits for the chosen and the last checkpoint, the provenance, the
summary (finish.py, run_record.py). What the loop runs on is built once, before step 1,
by build_run (build_run.py).
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from typing import Any

from flax import nnx

from mtrl.parallel.process_rollout import local_params
from mtrl.parallel.shardings import committed
from mtrl.sampling.buckets import BucketPolicy
from mtrl.training.checkpoints.base_record import on_checked_base
from mtrl.training.checkpoints.checkpointing import abstract_like
from mtrl.training.checkpoints.hf_export import export_agents
from mtrl.training.checkpoints.run_record import read_run_seconds
from mtrl.training.evaluate.distributed_eval import evaluate_across_processes
from mtrl.training.evaluate.evaluation import evaluate
from mtrl.training.logging import Progress, write_transcripts
from mtrl.training.logging.traces import clear_traces_after, write_step_traces
from mtrl.training.loop.budget import Budget
from mtrl.training.loop.build_run import Run, build_run
from mtrl.training.loop.finish import finish_run
from mtrl.training.loop.compiled_shapes import compiled_shapes, freeze_step, restore_compiled
from mtrl.training.loop.loop_state import LoopState
from mtrl.training.loop.process_roles import open_metrics
from mtrl.training.loop.stall import StallWatch
from mtrl.training.loop.step_metrics import COMPILE_WARMUP_STEPS, step_metrics
from mtrl.training.policy.train_state import agent_merged, init_train_state
from mtrl.training.run.interrupts import stop_point, stop_requested
from mtrl.training.run.provenance import code_state, warm_start_record

# What a run does when its only RL checkpoints are corrupt: RL starts over, while SFT
# resumes from its own checkpoints where it has whole ones (it says so itself).
RL_NONE_LEFT = ("no earlier RL checkpoint is left, RL starts over from its warm start "
                "(SFT resumes from its own checkpoints, if any)")


class Trainer:
    """A run (its parts: build_run.py's Run, read as the trainer's own attributes:
    trainer.c, trainer.keeper, trainer.stages, ...) and its loop."""

    def __init__(self, config, workdir: str | os.PathLike, *, show_progress: bool = True,
                 sampler_buckets: BucketPolicy = BucketPolicy()):
        """config: a RunConfig, or a raw ml_collections config (build_run parses it and
        runs every config-only check before any work); sampler_buckets: the sampler's
        shape rounding (`--smoke` passes coarse ones)."""
        self.built: Run = build_run(config, workdir, show_progress=show_progress,
                                    sampler_buckets=sampler_buckets)

    def __getattr__(self, name: str) -> Any:
        built = self.__dict__.get("built")  # absent while __init__ builds it
        if built is None:
            raise AttributeError(name)
        return getattr(built, name)

    def init_state(self, params: list):
        """A step-0 TrainState; shared mode holds the one policy for all N agents
        (params: each policy's trained parameters; LoRA: adapters over self.base)."""
        per_agent = params * self.num_agents if self.shared else params
        state = init_train_state(per_agent, self.optimizer, shared=self.shared,
                                 keep_reference=self.run_config.loss.objective.kl.coef > 0
                                 or self.run_config.loss.reward_kl is not None,
                                 lora=self.lora, base=self.base)
        # A mesh lays it out per its rules; one device commits it as a restore would.
        return committed(state) if self.plan is None else self.plan.shard_tree(state)

    def policy_states(self, state) -> list:
        """Each policy in self.graphdef (LoRA: base + adapters, unmerged, as trained;
        the publish stage's)."""
        return self.stages.publish.policies(state)

    def _target(self) -> dict:
        """A restore's target (abstract: no memory): what a checkpoint holds of a
        train state, `checkpointed()` (LoRA: without the base, named in extra)."""
        return {"train": abstract_like(self.init_state(self.c.initial_params()).checkpointed())}

    def _with_base(self, restored) -> Any:
        """The restored train state (LoRA: its base checked and put back)."""
        return on_checked_base(restored.state["train"], restored.extra, self.base,
                               self.base_record, self.keeper.step_directory(restored.step))

    def set_policy(self, state) -> None:
        """The publish stage: the sampler's backends take `state`'s policies."""
        self.stages.publish.publish(state)

    def evaluate(self, step: int, split: str = "validation") -> dict[str, float]:
        """Greedy (and, with train.eval_samples, sampled) episodes of the current
        policy on the validation tasks (metrics "heldout_*": they choose the best
        checkpoint) or a test split ("test_*", or "<name>_*" for a suite's extra test
        split `name`: reported, never used to choose)."""
        cfg = self.train_config
        tasks, prefix = ((self.c.eval_tasks, "heldout") if split == "validation"
                         else (self.c.test_splits()[split], split))
        key = self.keys.eval(step) if split == "validation" else self.keys.test(step)
        t0 = time.perf_counter()
        rollout = self.run_config.rollout
        episode = (dataclasses.replace(rollout, num_turns=cfg.eval_turns)
                   if cfg.eval_turns else rollout)
        result = evaluate_across_processes(tasks, key, lambda tasks, key: evaluate(
            tasks, self.c.env, self.eval_backend, self.c.tokenizer, episode, key,
            sampled_backend=self.backend if cfg.eval_samples else None,
            num_samples=cfg.eval_samples, num_transcripts=cfg.num_transcripts,
            turn_format=self.c.turn_format, prefix=prefix,
            feedback_gain=cfg.eval_feedback_gain))
        if result.transcripts and self.main:
            write_transcripts(self.workdir, step, result.transcripts, split=prefix)
        if split != "validation":  # test.json holds no timing: a resumed test equals it
            return result.metrics
        # Where a run's time goes: evaluations are a share of it beside SFT and RL steps.
        return {**result.metrics, "time/heldout_eval_s": time.perf_counter() - t0}

    # -- the loop ----------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        """SFT (or a restore), then per RL step: grow -> score -> advantages -> update
        -> publish -> evaluate -> save (one package each); then the test."""
        cfg, stages = self.train_config, self.stages
        started = time.perf_counter()
        stop_point("start-up")
        state, loop, logger, restored = self._begin(started)
        start = loop.step
        if cfg.write_traces:  # an earlier attempt's later steps are played again
            clear_traces_after(self.workdir, start)
        # The run's step after which nothing compiles (compiled_shapes.py: a resume
        # keeps the uninterrupted run's).
        freeze_at = freeze_step(loop.compiled, start)
        self._stop_if_requested(state, loop)
        # train.steps = 0 (a warm start only) shows no RL progress bar.
        progress = Progress(max(1, cfg.steps), initial=min(start, max(1, cfg.steps)),
                            enabled=self.show_progress and cfg.steps > start and self.main)
        budget = Budget(cfg.budget_minutes, started)
        # The whole run's time across invocations (Ctrl-C and resume): in the LoopState.
        before_s = loop.run_seconds - (time.perf_counter() - started if not restored else 0.0)
        if restored:  # the time a finished run spent after its last checkpoint counts
            before_s = max(before_s, read_run_seconds(self.workdir, loop.step))
        step = start
        stall = StallWatch()  # a long stretch of skipped updates is said in one line
        for step in range(start + 1, cfg.steps + 1):
            t0 = time.perf_counter()
            compiled = (self.sampler.num_compiles, self.step_fn.num_compiles)
            tree, staleness = self._grow_step(step, state)                              # grow
            tree = stages.score.score(tree, self.policy_states(state))                  # score
            t1 = time.perf_counter()
            rolled_out, advantages = stages.advantages.advantages(tree, state, step)   # advantages
            state, update = stages.update.update(rolled_out, advantages, state, step)   # update
            stages.publish.publish(state)                                               # publish
            t2 = time.perf_counter()
            if cfg.write_traces:  # the step's episodes in OpenEnv's format
                write_step_traces(self.workdir, step, tree, self.step_tasks.chosen(step))
            metrics = step_metrics(
                step, tree, update, (t0, t1, t2), step_tasks=self.step_tasks,
                sampler_compiles=self.sampler.num_compiles, compiles_at_start=compiled,
                staleness=None if self.ahead is None else staleness)
            if step == freeze_at:  # then no compile (step_metrics.py)
                self.sampler.freeze()
                stages.update.freeze(state)
            loop = loop.after(step, before_s + time.perf_counter() - started,
                              self.step_tasks.band_state())
            loop = self._evaluate_and_save(state, loop, metrics, logger,
                                           freeze_at)                           # evaluate, save
            progress.update(step, step_time_s=metrics["step_time_s"],
                            heldout_success=metrics.get("heldout_success"),
                            reward=metrics.get("reward_mean") if update.metrics else None,
                            note=update.skipped)
            stalled = stall.observe(step, update.skipped,
                                    loop.post_sft.get("post_sft_success"))
            if stalled and self.main:
                print(stalled, flush=True)
            budget.check(step, cfg.steps)
            self._stop_if_requested(state, loop)
        progress.close()
        if self.ahead is not None:
            self.ahead.close()
        self.keeper.wait()
        state = tree = rolled_out = advantages = update = None  # finish_run restores its own
        result = finish_run(self, step, started, loop, budget, before_s, logger)
        logger.close()
        return result

    def _begin(self, started: float):
        """(state, LoopState, logger, restored?): the latest (or best) checkpoint per
        train.restore, else the warm start and its step-0 evaluation (validation, and
        the test splits reported beside the final test)."""
        cfg, c = self.train_config, self.c
        restored = None
        if cfg.restore in ("latest", "best") and self.keeper.latest_step() is not None:
            # The restore's target layout, abstract: a second state would hold another
            # copy of the parameters, the reference and the Adam moments.
            fresh = self._target()
            # A corrupt latest step is set aside and the previous whole one used.
            restored = (self.keeper.restore_newest_whole(fresh, none_left=RL_NONE_LEFT)
                        if cfg.restore == "latest"
                        else self.keeper.restore(cfg.restore, target=fresh))
            del fresh
        if restored is not None:
            state, loop = self._with_base(restored), LoopState.from_extra(restored.extra)
            # The shapes the run had compiled: it pads as if never stopped.
            restore_compiled(loop.compiled, self.sampler, self.stages.update, loop.step)
            if self.main:
                print(f"resuming from RL step {loop.step} "
                      f"({self.keeper.step_directory(restored.step)})", flush=True)
            self.step_tasks.restore_band(loop.band)
            logger = open_metrics(self.main, self.workdir, loop.step,
                                  self.train_config.wandb_project, self.config_record)
            self.set_policy(state)  # a restored step 0 already holds its evaluation
            return state, loop, logger, True
        # resume_step=-1: lines of an earlier attempt that left no RL checkpoint go
        logger = open_metrics(self.main, self.workdir, -1, self.train_config.wandb_project,
                              self.config_record)
        sft_log = self.workdir / "sft.jsonl"

        def log(tag, i, metrics):
            if not self.main:
                return
            with open(sft_log, "a") as f:
                f.write(json.dumps({"tag": tag, "step": i, **{k: float(v) for k, v in
                                                              metrics.items()}}) + "\n")
            logger.write_sft(tag, i, metrics)
        params = self.starter.run(log)  # SFT, or train.init_from's weights
        state = self.init_state(params)
        # SFT time includes what earlier invocations spent before its checkpoint.
        sft_s = self.starter.seconds_before + time.perf_counter() - started
        self.set_policy(state)
        metrics = self.evaluate(0)
        post_sft = {"post_sft_success": metrics["heldout_success"],
                    **{f"post_sft_{k}": v for k, v in metrics.items()
                       if not k.startswith("time/")}}
        for name in c.test_splits():  # reported beside the final test; chooses nothing
            test = self.evaluate(0, name)
            post_sft.update({f"post_sft_{k}": v for k, v in test.items()})
            logger.write_reported(0, test)
        # The run's seconds so far include the evaluations after SFT (the RL loop counts
        # on from here: without them a run's minutes left them out).
        begun_s = self.starter.seconds_before + time.perf_counter() - started
        loop = LoopState(step=0, run_seconds=begun_s, sft_minutes=sft_s / 60, post_sft=post_sft,
                         config=self.config_record, code_at_start=code_state(),
                         warm_start=warm_start_record(params, self.train_config.init_from),
                         lora_base=self.base_record)  # the base the adapters belong to
        loop = loop.with_compiled(compiled_shapes(self.sampler, self.stages.update,
                                                  COMPILE_WARMUP_STEPS))
        logger.write(0, metrics)
        logger.flush()
        self.keeper.save_eval(0, {"train": state.checkpointed()}, metrics, loop.extra())
        return state, loop, logger, False

    def _grow_step(self, step: int, state):
        """(tree, staleness): this step's tree, grown now with the current policy, or
        (train.off_policy) taken from the background rollout, which starts the next."""
        if self.ahead is None:
            return self.stages.grow.grow(step, self.backend), 0
        tree, staleness = self.ahead.take(step, self.policy_states(state))
        if step < self.train_config.steps:
            self.ahead.prefetch(step + 1, self.policy_states(state))
        return tree, staleness

    def _evaluate_and_save(self, state, loop: LoopState, metrics: dict, logger,
                           freeze_at: int) -> LoopState:
        """Validation every eval_interval steps and at the last (a ranked checkpoint);
        the latest checkpoint every save_interval steps and at the last. Returns `loop`
        with the shapes compiled so far, the evaluation's included."""
        cfg, step = self.train_config, loop.step
        last = step == cfg.steps
        evaluated = step % cfg.eval_interval == 0 or last
        if evaluated:
            metrics.update(self.evaluate(step))
        loop = loop.with_compiled(compiled_shapes(self.sampler, self.stages.update, freeze_at))
        extra = loop.extra()
        # Metrics reach disk before the step's checkpoint, so a resume from it never
        # lacks the step's line (later lines are dropped and recomputed).
        logger.write(step, metrics)
        logger.flush()
        if evaluated:
            self.keeper.save_eval(step, {"train": state.checkpointed()}, metrics, extra)
        if step % cfg.save_interval == 0 or last:
            self.keeper.save_latest(step, {"train": state.checkpointed()}, extra)
        return loop

    def _stop_if_requested(self, state, loop: LoopState) -> None:
        """After step loop.step (0: the warm start): on Ctrl-C or SIGTERM, save it
        (unless saved already) and raise Interrupted (interrupts.py)."""
        if stop_requested():
            self.keeper.save_latest(loop.step, {"train": state.checkpointed()}, loop.extra())
            self.keeper.wait()
            stop_point(f"RL step {loop.step}")

    def _restored(self, step: int):
        """Checkpoint `step`'s train state, restored into a fresh state's abstract layout
        (each is a whole copy of the parameters and moments); LoRA: on the base."""
        return self._with_base(self.keeper.restore(step, target=self._target()))

    def test(self, step: int, provenance: dict, file: str = "test.json") -> dict[str, float]:
        """The test splits, evaluated once for checkpoint `step` (the one validation
        chose; the last one into test_last.json); written to `file` with the run's
        provenance. Nothing reads it back to choose anything."""
        state = self._restored(step)
        self.set_policy(state)
        metrics = {}
        for name in self.c.test_splits():  # "test", then the suite's extra test splits
            metrics.update(self.evaluate(step, name))
        sizes = {f"{name}_num_tasks": len(tasks) for name, tasks in self.c.extra_tests.items()}
        if self.main:
            (self.workdir / file).write_text(json.dumps(
                {"step": step, "num_tasks": len(self.c.test_tasks), **sizes, **metrics,
                 "provenance": provenance}, indent=2))
        return metrics

    def export(self, step: int) -> str:
        """Writes the best step's parameters as Hugging Face checkpoints, one per agent
        (LoRA: the adapters merged into the base's weights, in the base's graph)."""
        state = self._restored(step)
        merged = [agent_merged(state, a) for a in range(1 if self.shared else self.num_agents)]
        return export_agents(nnx.graphdef(self.c.models[0]), local_params(merged),
                             self.c.tokenizer, self.workdir / "export", write=self.main)

    def close(self) -> None:
        if self.ahead is not None:
            self.ahead.close()
        self.keeper.close()
        self.c.close()
