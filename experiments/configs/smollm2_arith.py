"""SmolLM2-135M-Instruct, one agent, two-digit addition over T = 2 turns with the
"too high / too low" verifier as the second turn's feedback: GRPO with PPO
clipping and a small KL to the reference, after a short SFT warm start on train
questions (the base model is below the 10-60% band: the study
experiments/smollm2_heldout_sums/).

    python -m tools.get_smollm2 --out models/smollm2-135m-instruct
    python -m mtrl.train --config=experiments/configs/smollm2_arith.py

Suite `arith` (mtrl/data/arith_suite.py), kind add2: "What is 47 + 38?", a, b in
10-99. Splits own operand sets {a, b} (either order), dealt by data.options.seed:
test 128 tasks (once, at the end, for the checkpoint validation chose), validation 64
(chooses it), train the other 3,903; no test question occurs in training, and every
turn-2 observation repeats its own task's question
(tests/data/test_arith_suite.py renders them). The environment is the math one:
last number in the reply, exact match, the episode ends at the first right answer;
a wrong one is told "<answer> is too high." / "too low." and the question again.
Sized for this 2-core CPU: 8 RL steps of 4 tasks x G = 4 x T = 2, 32 new tokens.
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
    c.chat.system_prompts = ("You are a calculator. Reply with the number only.",)
    c.data.name = "arith"
    c.data.train_split = "train"
    c.data.eval_split = "validation"
    c.data.test_split = "test"
    c.data.num_train = 5000
    c.data.num_eval = 64
    c.data.num_test = 128
    c.data.options = {"kind": "add2", "seed": 0}
    c.env.name = "math"
    c.env.templates = "default"
    c.env.feedback_mode = "direction"
    c.env.history_mode = "full"
    c.rollout.num_turns = 2
    c.rollout.num_generations = 4
    c.rollout.max_new_tokens = 32
    c.rollout.max_context = 256
    # A short SFT warm start on train questions -> their sums (first turn only, no
    # revision: what the second turn does with the feedback is left to RL). The base
    # model answers 2-digit sums in prose, right 5-12% of the time (BENCHMARKS.md).
    # One SFT checkpoint, at the end: saving one mid-way (orbax) lifted the process to
    # 8.2 GB and the shared machine's OOM killer stopped it.
    c.sft = dict(c.sft.to_dict(), enabled=True, steps=32, batch_size=16,
                 learning_rate=5e-5, max_len=64, revision_fraction=0.0,
                 checkpoint_every=32)
    # RL: 8 steps of 4 tasks (what this shared 2-core machine allowed per seed), a
    # learning rate twice the other SmolLM2 configs' (few steps).
    c.optim.learning_rate = 2e-5
    c.train.tasks_per_step = 4
    c.train.steps = 8
    c.train.eval_interval = 4
    c.train.save_interval = 4
    c.train.eval_samples = 0
    c.train.remat = "full"  # memory: the shared machine OOM-killed a run at 8.2 GB
    return c
