"""Tool-integrated reasoning (SimpleTIR-style) with the tiny model and the byte
tokenizer: the agent writes a ```python block, the sandbox runs it and the output
(truncated, with a note) is the next observation; a final answer in \\boxed{} ends
the episode; at most rollout.num_turns tool turns.

Suites: GSM8K (default: compute, then answer \\boxed{n}) or MBPP (write and test the
function with the tool, then submit it with \\boxed{submit}):

    python -m mtrl.train --config=experiments/configs/tool.py --workdir=/tmp/mtrl-tool
    python -m mtrl.train --config=experiments/configs/tool.py:mbpp --workdir=/tmp/mtrl-tool-mbpp

Reward: the recipe (reward.recipe=recipe: outcome ±1, −0.01 per turn, −0.05 per
invalid tool call, dominance checked at build); SimpleTIR's void-turn filter
(filters.void_turns) drops turns with neither code nor an answer, and what follows
them. Any estimator is a flag: --config.credit.estimator=ufo | igpo (GSM8K) | grpo ...
A ~1M-parameter byte model does not solve these tasks: this configuration exercises
the environment and the methods end to end; real-model results come in their own issue.
"""

from mtrl.training.config import base_config


def get_config(suite: str = "gsm8k"):
    c = base_config()
    c.model.overrides = dict(num_layers=2)
    if suite == "gsm8k":
        c.data.name = "gsm8k"
        c.data.path = "../shared/data/gsm8k"
        c.data.train_split = "train[500:]"
        c.data.eval_split = "train[:500]"
        c.data.test_split = "test"
        c.data.num_train = 7000
        c.data.options = dict(max_question_chars=300)
    elif suite == "mbpp":
        c.data.name = "mbpp_sanitized"
        c.data.path = "../shared/data/mbpp"
        c.data.train_split = "train"
        c.data.eval_split = "validation"
        c.data.test_split = "test"
    else:
        raise ValueError(f"--config=experiments/configs/tool.py:SUITE: unknown suite "
                         f"{suite!r}; valid: gsm8k, mbpp")
    c.data.num_eval = 40
    c.data.num_test = 200
    c.env.name = "tool"
    c.env.num_agents = 1
    c.env.templates = "default"
    c.env.workers = 2
    c.env.wall_s_per_test = 2.0
    c.env.options = dict(max_output_chars=200)
    c.rollout.num_turns = 3
    c.rollout.num_generations = 4
    # A node whose every joint action solved the task stops expanding (its children
    # would all be played after the end and dropped from the loss).
    c.rollout.termination_threshold = 0.99
    c.rollout.max_new_tokens = 128
    # Prompt <= ~530 bytes + 3 turns of 128 + 2 tool outputs of <= ~230: 1,374.
    c.rollout.max_context = 1536
    c.credit.estimator = "grpo"
    c.reward.recipe = "recipe"
    c.filters.void_turns = True
    c.train.steps = 50
    c.train.tasks_per_step = 2
    c.train.eval_interval = 25
    c.train.save_interval = 25
    # GSM8K's demonstrations end in \boxed{n} (an answer here); the MBPP suite's are
    # bare code blocks (tool calls, never a submission), so MBPP starts without SFT.
    c.sft = dict(c.sft.to_dict(), steps=200, batch_size=16, max_len=1024,
                 revision_fraction=0.0, enabled=suite == "gsm8k")
    c.optim.learning_rate = 1e-4
    return c
