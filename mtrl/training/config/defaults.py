"""The embedded default config: every field of a run with its default value.

Config files in experiments/configs/ start from `base_config()` and override what
differs, some through blocks they share (loaded with files.module_from_file); a
field that is not here does not exist (`--config.<section>.<field>` can only set
one that is). Importing this module imports no jax.
"""

from __future__ import annotations

import ml_collections
from ml_collections.config_dict import placeholder


def base_config() -> ml_collections.ConfigDict:
    c = ml_collections.ConfigDict()
    c.seed = 0
    c.model = dict(preset="tiny", hf_checkpoint="", dtype="float32", overrides={})
    c.tokenizer = "byte"  # "byte", or a local Hugging Face tokenizer directory
    # Per-agent system prompts for chat templates (training/run/chat.py; () : the template's).
    c.chat = dict(system_prompts=())
    # A task suite (mtrl.data.suite): train, validation (eval_split: chooses the best
    # checkpoint) and test ("" : none; evaluated once at the end) splits.
    c.data = dict(name="intfn", path="", train_split="train", eval_split="heldout",
                  test_split="", num_train=2000, num_eval=100, num_test=100, options={})
    # env.name: a builder in envs/registry.py; env.options: that environment's
    # own extras (the code environment's fields are the env.* below).
    c.env = dict(name="code", options={}, num_agents=2, feedback_mode="level_feedback", sandbox_slice=1,
                 history_mode="full", reward="level", templates="tiny",
                 # Point values of the code rewards (envs/code/rewards.py CodeRewardConfig
                 # fields, e.g. {"main_defined": 0.2}); {} keeps the defaults.
                 reward_points={},
                 feedback_style="compact", workers=0,
                 wall_s_per_test=2.0, expert="", expert_options={},
                 # A program passing every test ends its episode (no later turn); False:
                 # CoMLRL's fixed horizon, a solved branch keeps revising (envs/code/env.py).
                 end_on_success=False)
    c.rollout = dict(num_turns=2, num_generations=4, joint_mode="align",
                     termination_threshold=placeholder(float), discount=1.0, max_new_tokens=48,
                     max_context=288, temperature=1.0, top_p=1.0, top_k=0,
                     max_nodes_per_turn=4096, agent_params="separate",
                     env_groups=1)
    # credit / loss: fields of training/advantages/estimators.py CreditConfig and config/loss.py build_objective
    # (docs/methods.md); eps_* unset means the chosen loss's own default.
    c.credit = dict(estimator="magrpo", baseline="mean", credit="sum", normalize_std=False,
                    turn_coef=1.0, lambda_on="turn", igpo_gain="prob",
                    igpo_normalization="joint", gigpo_omega=1.0, ufo_gamma=0.9,
                    ufo_penalty=0.5)
    # aggregation unset: the policy loss's own (its paper's, losses.PolicyLoss).
    c.loss = dict(policy_loss="reinforce", aggregation=placeholder(str),
                  kl_estimator="k3", kl_coef=0.0, eps_low=placeholder(float),
                  eps_high=placeholder(float), dual_clip=0.0, refuel_eta=1.0, kl_in="loss")
    c.filters = dict(overlong_cache=0, void_turns=False)  # training/advantages/penalties.py
    # training/grow/curriculum.py: TCOD turn schedule and the learnable-band task sampler.
    c.curriculum = dict(tcod="", steps_per_stage=10, learnable_band=False, band_low=0.1,
                        band_high=0.9, band_window=16, band_min_attempts=1)
    # reward: "env" (the environment's rewards) or "recipe" (training/score/recipe.py).
    c.reward = dict(recipe="env", success_reward=1.0, failure_reward=-1.0, step_penalty=0.01,
                    invalid_tool_penalty=0.05, progress_coef=0.0, on_dominance="raise")
    c.optim = dict(learning_rate=1e-4, warmup_steps=5, schedule="constant",
                   weight_decay=0.0, max_grad_norm=1.0)
    c.train = dict(steps=300, tasks_per_step=3, ppo_epochs=1, minibatches=1,
                   eval_interval=20, save_interval=20, keep_best=2, eval_samples=0,
                   num_transcripts=2, eval_turns=0, drop_zero_advantage=False, export_best=True,
                   restore="latest", budget_minutes=0.0, init_from="", packing="tree",
                   remat="none", pack_budget=0, off_policy=0, wandb_project="")
    c.sft = dict(enabled=True, steps=400, batch_size=32, learning_rate=2e-3,
                 schedule="cosine", adam_b2=0.95, fraction=1.0, revision_fraction=0.1,
                 first_guess="", resubmit_fraction=0.0, first_phase="first_turn",
                 first_phase_steps=0, max_len=256, checkpoint_every=50)
    # LoRA (mtrl/models/lora.py): rank 0 trains every weight; rank r >= 1 trains
    # adapters of scale alpha / r on `targets` ("all" | "attention" | "mlp" or
    # comma-separated projections, e.g. "q_proj,v_proj") over the frozen base, which is
    # also the KL reference; SFT and RL both train the adapters.
    c.lora = dict(rank=0, alpha=16.0, targets="all")
    # The device mesh (mtrl/parallel): "auto" = every device on data, or "d,f,t" over
    # the data, fsdp and tensor axes (docs: BUILD.md, "Scale-out").
    c.mesh = dict(shape="auto")
    return c
