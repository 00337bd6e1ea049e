"""Blocks of overrides that several experiment configs share: a config calls the blocks
it builds on, then states only what differs. Each block sets fields of the config `c`
in place.

Not a config (no get_config): it sits below experiments/configs so that every
experiments/configs/*.py stays one. Configs load it by path:

    blocks = module_from_file(pathlib.Path(__file__).parent / "common" / "blocks.py")
"""

import os


def shared_data(name: str) -> str:
    """A data set of the shared data folder: $MTRL_SHARED_DATA/<name> when that is
    set (as for the tests), else ../shared/data/<name> beside the checkout."""
    base = os.environ.get("MTRL_SHARED_DATA")
    return os.path.join(base, name) if base else f"../shared/data/{name}"


def gsm8k_data(c) -> None:
    """GSM8K (shared_data: ../shared/data/gsm8k): train = train[500:], validation = train[:500]
    (chooses the best checkpoint), test = test (evaluated once); questions of at most
    300 characters, so prompts fit the byte-level context."""
    c.data.name = "gsm8k"
    c.data.path = shared_data("gsm8k")
    c.data.train_split = "train[500:]"
    c.data.eval_split = "train[:500]"
    c.data.test_split = "test"
    c.data.num_train = 7000
    c.data.options = dict(max_question_chars=300)


def mbpp_data(c) -> None:
    """MBPP, sanitized (shared_data: ../shared/data/mbpp), standard splits by task id: train 601-974,
    validation 511-600 (chooses the best checkpoint), test 11-510 (evaluated once)."""
    c.data.name = "mbpp_sanitized"
    c.data.path = shared_data("mbpp")
    c.data.train_split = "train"
    c.data.eval_split = "validation"
    c.data.test_split = "test"


def small_cpu_run(c, *, sft_max_len: int) -> None:
    """The CPU-sized run of the environment configs (math.py, tool.py): the tiny
    byte-level model cut to 2 layers, one agent with the default templates, T = 3 turns
    of G = 4, 50 RL steps of 2 tasks (validation and a checkpoint every 25) after 200
    SFT updates of 16 rows (no revision rows), learning rate 1e-4, 200 test tasks."""
    c.model.overrides = dict(num_layers=2)
    c.data.num_test = 200
    c.env.num_agents = 1
    c.env.templates = "default"
    c.rollout.num_turns = 3
    c.rollout.num_generations = 4
    # A node whose every joint action solved the task stops expanding (its children
    # would all be played after the end and dropped from the loss).
    c.rollout.termination_threshold = 0.99
    c.train.steps = 50
    c.train.tasks_per_step = 2
    c.train.eval_interval = 25
    c.train.save_interval = 25
    c.sft = dict(c.sft.to_dict(), steps=200, batch_size=16, max_len=sft_max_len,
                 revision_fraction=0.0)
    c.optim.learning_rate = 1e-4


def real_model_cpu_run(c) -> None:
    """The CPU-sized run of the SmolLM2 configs (smollm2_gsm8k.py, smollm2_mbpp.py):
    G = 4, 30 RL steps of 2 tasks, validation (greedy success by turn and pass@2) and a
    checkpoint every 4 steps, tree packing and full remat (memory), learning rate 1e-5
    after 2 warmup steps (few CPU steps: 1e-6 would not move the policy). Dynamic
    sampling: a step whose groups all scored alike (on a thin band, often all failed)
    skips the CPU update (35-200 s for SmolLM2 here) instead of spending it on a zero
    policy gradient."""
    c.rollout.num_generations = 4
    c.optim.learning_rate = 1e-5
    c.optim.warmup_steps = 2
    c.train.steps = 30
    c.train.tasks_per_step = 2
    c.train.eval_interval = 4
    c.train.save_interval = 4
    c.train.eval_samples = 2
    c.train.packing = "tree"
    c.train.remat = "full"
    c.train.drop_zero_advantage = True


def real_model_gpu_run(c) -> None:
    """The GPU-sized run of the real-model code configs (humaneval_grpo.py,
    mbpp_grpo.py): G = 8, 512 new tokens in a 2048-token context, 200 RL steps of 4
    tasks, pass@4 beside greedy success at validation, learning rate 1e-6."""
    c.rollout.num_generations = 8
    c.rollout.max_new_tokens = 512
    c.rollout.max_context = 2048
    c.optim.learning_rate = 1e-6
    c.train.steps = 200
    c.train.tasks_per_step = 4
    c.train.eval_samples = 4


def hf_checkpoint_model(c, *, checkpoint: str, dtype: str) -> None:
    """Weights from a local Hugging Face checkpoint (a directory with config.json and
    safetensors) instead of a preset; `dtype` is the compute dtype."""
    c.model.preset = ""  # no preset: the weights come from hf_checkpoint
    c.model.hf_checkpoint = checkpoint
    c.model.dtype = dtype


def ppo_with_kl(c, *, kl_coef: float) -> None:
    """The loss of the GRPO-style configs: PPO clipping, averaged over each sequence's
    tokens, then over sequences, plus kl_coef times the KL to the reference model."""
    c.loss.policy_loss = "ppo"
    c.loss.aggregation = "seq-mean-token-mean"
    c.loss.kl_coef = kl_coef


def code_grpo(c, *, kl_coef: float) -> None:
    """One agent, multi-turn GRPO with PPO clipping on a code suite (the real-model
    configs): default templates, full feedback, reward = share of tests passed; a node
    whose joint actions pass more than 0.9 of the tests on average stops expanding;
    ppo_with_kl(kl_coef); no SFT warm start."""
    c.env.num_agents = 1
    c.env.templates = "default"
    c.env.feedback_style = "full"
    c.env.reward = "pass_rate"
    c.rollout.termination_threshold = 0.9
    c.credit.estimator = "grpo"
    ppo_with_kl(c, kl_coef=kl_coef)
    c.sft.enabled = False


def small_model_grpo(c, *, estimator: str = "grpo") -> None:
    """One agent, a group-relative estimator (GRPO, or `estimator`: smollm2_gsm8k.py's
    UFO) and ppo_with_kl at kl_coef 0.01, for the SmolLM2 configs whose episode ends
    at the first right answer (smollm2_arith.py, smollm2_guess.py, smollm2_gsm8k.py):
    a node whose every answer was right stops expanding (its children would be played
    after the end of the episode and dropped from the loss)."""
    c.env.num_agents = 1
    c.rollout.termination_threshold = 0.99
    c.credit.estimator = estimator
    ppo_with_kl(c, kl_coef=0.01)
