"""SmolLM2-135M-Instruct, one agent, guessing a hidden integer over T = 6 turns: each
wrong guess hears "<g> is too low." / "too high." (never the number), so success
within six turns takes a search that reads the verdicts. GRPO with PPO clipping and a
small KL to the reference, after a short SFT warm start on a binary-search teacher.

    python -m tools.get_smollm2 --out models/smollm2-135m-instruct
    python -m mtrl.train --config=experiments/configs/smollm2_guess.py
    # LoRA instead of every weight: --config.lora.rank=16 --config.lora.alpha=32

Suite `guess` (mtrl/data/guess_suite.py): "Guess my secret integer. It is greater
than 16 and less than 41.", lower bounds 0-99, 8-32 candidates (binary search needs
at most ⌈log2(33)⌉ = 6 guesses, so T = 6 leaves no slack for a searcher and little
hope for a guesser). Validation (64 tasks, chooses the checkpoint) and test (128,
once, at the end) own held-out lower bounds and held-out secrets: no held-out prompt
or observation occurs in training and no held-out answer is a train secret
(tests/data/test_guess_suite.py renders them). The environment is `guess`
(mtrl/envs/guess/): last number in the reply, reward 1 at the right guess, the
episode ends there; the verdict and the question again after a wrong one; the
evaluation's feedback gain compares turn t+1 after the verdict with turn t+1 after
"Try again.".

Sized for a CPU: G = 2 (the tree holds 2^t samples at turn t: at most 126 per task,
252 rows a step of 2 tasks; a branch ends at its right guess), 8 new tokens a turn
(a guess is one number). T = 6 makes the step heavier than the two-turn configs':
the one-step smoke run of this config on the tiny byte model spent 6 minutes on its
RL step on a shared 2-core CPU.
The SFT mix (every first turn, a quarter of the tasks' later turns) and the RL
settings are starting values, not tuned.
"""

import pathlib

from mtrl.training.config import base_config, module_from_file

blocks = module_from_file(pathlib.Path(__file__).parent / "common" / "blocks.py")


def get_config():
    c = base_config()
    # checkpoint: tools/get_smollm2.py --out; bfloat16 is slower than float32 on CPU XLA.
    blocks.hf_checkpoint_model(c, checkpoint="models/smollm2-135m-instruct", dtype="float32")
    blocks.real_model_cpu_run(c)
    blocks.small_model_grpo(c)
    c.chat.system_prompts = ("You are playing a guessing game. Reply with one integer only.",)
    c.data.name = "guess"
    c.data.train_split = "train"
    c.data.eval_split = "validation"
    c.data.test_split = "test"
    c.data.num_train = 4000
    c.data.num_eval = 64
    c.data.num_test = 128
    c.data.options = {"lows": (0, 99), "widths": (8, 32), "seed": 0}
    c.env.name = "guess"
    c.rollout.num_turns = 6
    c.rollout.num_generations = 2
    c.rollout.max_new_tokens = 8
    # Six turns of ~30 tokens (the verdict repeats the question) after the system prompt.
    c.rollout.max_context = 512
    # The teacher: every task's first guess (the midpoint) and, for a quarter of the
    # tasks, the later turns (the midpoint of what the verdicts leave); the rest of the
    # search is left to RL.
    c.sft = dict(c.sft.to_dict(), enabled=True, steps=64, batch_size=16,
                 learning_rate=5e-5, max_len=384, fraction=1.0, revision_fraction=0.25,
                 checkpoint_every=64)
    c.optim.learning_rate = 2e-5
    c.train.eval_samples = 0
    return c
