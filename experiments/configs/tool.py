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

import pathlib

from mtrl.training.config import base_config, module_from_file

blocks = module_from_file(pathlib.Path(__file__).parent / "common" / "blocks.py")


def get_config(suite: str = "gsm8k"):
    c = base_config()
    # GSM8K's demonstrations end in \boxed{n} (an answer here); the MBPP suite's are
    # bare code blocks (tool calls, never a submission), so MBPP starts without SFT.
    blocks.small_cpu_run(c, sft_max_len=1024)
    c.sft.enabled = suite == "gsm8k"
    if suite == "gsm8k":
        blocks.gsm8k_data(c)
    elif suite == "mbpp":
        blocks.mbpp_data(c)
    else:
        raise ValueError(f"--config=experiments/configs/tool.py:SUITE: unknown suite "
                         f"{suite!r}; valid: gsm8k, mbpp")
    c.data.num_eval = 40
    c.env.name = "tool"
    c.env.workers = 2
    c.env.wall_s_per_test = 2.0
    c.env.max_output_chars = 200
    c.rollout.max_new_tokens = 128
    # Prompt <= ~530 bytes + 3 turns of 128 + 2 tool outputs of <= ~230: 1,374.
    c.rollout.max_context = 1536
    c.credit.estimator = "grpo"
    c.reward.recipe = "recipe"
    c.filters.void_turns = True
    return c
