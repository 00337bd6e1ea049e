"""A run's parts, built once from its config before any step: what the Trainer
(trainer.py) runs, as one frozen Run.

    run = build_run(config, workdir)   # every config-only check first (one line each)
    run.c                              # the built Components (models, tasks, env)
    run.stages.grow.grow(step, run.backend)

In order: the workdir and the resume check, the components, config.json, the model
and memory reports, the device plan, LoRA's base and its record, the sampler and its
backends, the optimizer and the jitted train step, the checkpoint keeper, the key
streams, the step tasks, the warm starter, train.off_policy's lock, the stages.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import threading
from typing import Any

from flax import nnx

from mtrl.models.adapters import lora_report
from mtrl.models.lora import LoRAConfig
from mtrl.parallel.distributed import is_main_process
from mtrl.parallel.from_config import plan_for
from mtrl.parallel.process_rollout import check_supported, local_sampler_plan
from mtrl.parallel.shardings import committed
from mtrl.rollout.backend import PolicyBackend
from mtrl.rollout.sampler_backend import SamplerBackend
from mtrl.sampling.buckets import BucketPolicy
from mtrl.sampling.sampler import Sampler
from mtrl.training.checkpoints.base_record import base_record
from mtrl.training.checkpoints.checkpointing import CheckpointKeeper
from mtrl.training.checkpoints.hf_export import model_report
from mtrl.training.config import RunConfig, parse
from mtrl.training.config.migrate import normalize
from mtrl.training.grow.async_rollout import OffPolicyRollouts, SerializedBackend
from mtrl.training.grow.curriculum import StepTasks
from mtrl.training.loop.stages import Stages, build_stages
from mtrl.training.policy.optim import make_optimizer, make_schedule
from mtrl.training.policy.train_state import base_layout
from mtrl.training.run.build import Components, build_components
from mtrl.training.run.keys import RunKeys
from mtrl.training.run.run_config import check_resumable, prepare_workdir, write_config
from mtrl.training.run.sections import SFTSection, TrainConfig
from mtrl.training.sft.sft_data import first_phase_kinds
from mtrl.training.sft.warm_start import WarmStarter
from mtrl.training.update.memory import check_step_memory, packed_step_guard
from mtrl.training.update.train_step import make_train_step


@dataclasses.dataclass(frozen=True)
class Run:
    """What the loop needs of a run, built once (its objects may hold state of their
    own: the keeper's checkpoints, the sampler's compiled shapes, the band)."""

    workdir: pathlib.Path
    run_config: RunConfig
    config_record: dict  # config.json's content (the provenance hashes it)
    main: bool  # this process logs and writes (several processes: process 0)
    show_progress: bool
    c: Components  # the built objects: tokenizer, models, tasks, environment
    plan: Any  # the device mesh's sharding plan (config.mesh); None on one device
    graphdef: nnx.GraphDef  # the policy's graph (LoRA: the adapted model's)
    lora: LoRAConfig | None  # LoRA on: the adapters' config; None: full fine-tuning
    base: Any  # LoRA: the frozen base laid out as the train state holds it
    base_record: dict | None  # LoRA: the base's name and digest (base_record.py)
    sampler: Sampler
    sampling: Any  # the rollouts' SamplingConfig
    backend: PolicyBackend  # sampled: the rollouts (and train.eval_samples)
    eval_backend: PolicyBackend  # greedy: the evaluations
    optimizer: Any  # one optax transform, per agent
    step_fn: Any  # the jitted train step (update/train_step.py)
    keeper: CheckpointKeeper
    keys: RunKeys
    step_tasks: StepTasks
    starter: WarmStarter
    stages: Stages
    ahead: OffPolicyRollouts | None  # train.off_policy: the next tree, grown in a thread

    @property
    def train_config(self) -> TrainConfig:
        return self.run_config.train

    @property
    def sft(self) -> SFTSection:
        return self.run_config.sft

    @property
    def num_agents(self) -> int:
        return self.run_config.num_agents

    @property
    def shared(self) -> bool:
        """One policy for all agents (rollout.agent_params = "shared")."""
        return self.run_config.rollout.agent_params == "shared"

    @property
    def scores_answers(self) -> bool:
        """IGPO on an environment that reports the truth: its answers are scored."""
        return self.stages.score.answers is not None


def build_run(config, workdir: str | os.PathLike, *, show_progress: bool = True,
              sampler_buckets: BucketPolicy = BucketPolicy()) -> Run:
    """config: a RunConfig (training/config), or a raw ml_collections config parsed here;
    every config-only check has run (one-line errors) before any work.
    sampler_buckets: the sampler's shape rounding (what it compiles, not what it
    samples: sampling/buckets.py); `--smoke` passes coarse ones (config/smoke.py)."""
    workdir = prepare_workdir(workdir)  # one line if it cannot be written
    run: RunConfig = parse(config)
    train = run.train
    # Several processes: each rolls out a share, process 0 logs (process_rollout.py).
    main = is_main_process()
    # Before any work: one line if it differs (an older layout's record migrated).
    check_resumable(workdir, run.record, normalize=normalize)
    c = build_components(run)
    config_record = write_config(workdir, run.record) if main else run.record
    model = c.models[0].config
    print(model_report(c.models[0], c.from_hf), flush=True)  # dtypes in effect
    # The train step's memory estimate; one line and no run if it cannot fit.
    print(check_step_memory(run.rollout, train, model), flush=True)
    num_agents = run.num_agents
    first_phase = first_phase_kinds(run.sft.first_phase, num_agents)
    c.suite.check_sft(run.sft, num_agents)
    shared = run.rollout.agent_params == "shared"
    # The policy's graph (LoRA: the adapted model's; the export's is the base's).
    graphdef = c.policy_graphdef(run.lora)
    plan = plan_for(run.mesh, model)  # the device mesh: None on a single device
    lora = run.lora if run.lora.enabled else None
    # LoRA: the frozen base laid out as the train state holds it (also the KL
    # reference and, with the adapters, the sampler's policy: one copy), and its
    # name and digest, which every checkpoint carries (base_record.py).
    base, record = None, None
    if lora is not None:
        layout = base_layout(c.base_states(), shared)
        base = committed(layout) if plan is None else plan.shard_tree(layout)
        record = base_record(c.base_states(), f"hf:{c.from_hf}" if c.from_hf
                             else f"preset:{run.model.preset}")
        print(lora_report(lora, c.adapters[0], model), flush=True)
    states = c.initial_policies()
    # The sampler runs on this process's devices (its own tasks), the step on all.
    sampler = Sampler(nnx.merge(graphdef, states[0]), buckets=sampler_buckets,
                      shardings=local_sampler_plan(plan, model))
    tok = c.tokenizer
    sampling = run.rollout.sampling_config(stop_token_ids=(tok.eos_id,), pad_id=tok.pad_id)
    backend = SamplerBackend(sampler, states, sampling)
    eval_backend = SamplerBackend(sampler, states, dataclasses.replace(sampling, greedy=True))
    optimizer = make_optimizer(run.optim)
    step_fn = make_train_step(
        graphdef, run.loss.objective, optimizer, num_agents=num_agents, shared=shared,
        learning_rate_fn=make_schedule(run.optim), packing=train.packing, remat=train.remat,
        min_budget=train.pack_budget, shardings=plan,
        memory_guard=packed_step_guard(train, model, num_agents),
        bin_buckets=train.bin_buckets, layout_growth=train.layout_growth)
    keeper = CheckpointKeeper(workdir / "checkpoints", keep_best=train.keep_best)
    keys = RunKeys.from_seed(run.seed)
    step_tasks = StepTasks(c.train_tasks, train.tasks_per_step, run.seed, run.curriculum)
    starter = WarmStarter(c, run.sft, run.seed, train.init_from, workdir, graphdef, optimizer,
                          keys, num_agents, shared, first_phase,
                          main=main, show_progress=show_progress, base=base,
                          base_record=record, remat=train.remat, lora=lora)
    # train.off_policy: the next tree grows in a thread; backends take turns on the sampler.
    lock = threading.Lock() if train.off_policy else None
    if lock is not None:
        backend, eval_backend = (SerializedBackend(b, lock) for b in (backend, eval_backend))
    stages = build_stages(run, c, graphdef=graphdef, step_fn=step_fn, keys=keys,
                          step_tasks=step_tasks, backends=(backend, eval_backend))
    check_supported(band=step_tasks.band is not None, reward_kl=run.loss.reward_kl is not None,
                    answer_scores=stages.score.answers is not None)
    ahead = None if lock is None else OffPolicyRollouts(
        stages.grow.grow, lambda params: SerializedBackend(
            SamplerBackend(sampler, params, sampling), lock))
    return Run(workdir=workdir, run_config=run, config_record=config_record, main=main,
               show_progress=show_progress, c=c, plan=plan, graphdef=graphdef, lora=lora,
               base=base, base_record=record, sampler=sampler, sampling=sampling,
               backend=backend, eval_backend=eval_backend, optimizer=optimizer,
               step_fn=step_fn, keeper=keeper, keys=keys, step_tasks=step_tasks,
               starter=starter, stages=stages, ahead=ahead)
