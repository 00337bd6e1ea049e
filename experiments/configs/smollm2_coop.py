"""SmolLM2-135M-Instruct as two cooperating agents on MBPP (sanitized): a helper writes
`aux`, the main agent writes the entry point and may call it; MAGRPO over T = 2 turns
with level_feedback, each agent with its own system prompt, on the learnable band.

    python -m tools.select_learnable_tasks --config=experiments/configs/smollm2_coop.py \
        --samples=4 --out=models/smollm2_coop_learnable.json
    python -m mtrl.train --config=experiments/configs/smollm2_coop.py

Splits as in smollm2_mbpp.py. GSM8K with "try again" feedback: smollm2_gsm8k.py.
"""

import pathlib

from mtrl.training.config import module_from_file


def get_config():
    c = module_from_file(pathlib.Path(__file__).with_name("smollm2_mbpp.py")).get_config()
    c.chat.system_prompts = (
        "You are agent 1, the helper. Write only the helper function `aux` in one "
        "```python code block.",
        "You are agent 2, the main agent. Write only the requested function in one "
        "```python code block; you may call `aux`.")
    c.data.options = {"train_ids_file": "models/smollm2_coop_learnable.json"}
    c.env.num_agents = 2
    c.env.reward = "level"
    c.rollout.termination_threshold = 3.5
    c.rollout.agent_params = "shared"  # one 135M policy for both roles (memory)
    c.credit.estimator = "magrpo"
    return c
