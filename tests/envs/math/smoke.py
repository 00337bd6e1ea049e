"""A minimal, fast configuration of an environment's experiment config (one RL step
on a one-layer model), shared by the math and tool smoke tests and the benchmark."""

import json
import os
import pathlib

from mtrl.training.config import module_from_file

ROOT = pathlib.Path(__file__).resolve().parents[3]
DATA = pathlib.Path(os.environ.get("MTRL_SHARED_DATA", ROOT.parent / "shared" / "data"))


def load_config(name: str, *args):
    return module_from_file(ROOT / "experiments" / "configs" / f"{name}.py").get_config(*args)


def minimal(name: str, steps: int = 1):
    """The experiment config `name` shrunk to seconds: tiny shapes, few tasks, no SFT."""
    c = load_config(name)
    c.model.overrides = dict(num_layers=1, hidden_size=32, intermediate_size=64, num_heads=2,
                             num_kv_heads=1, head_dim=16)
    c.data.path = str(DATA / ("mbpp" if "mbpp" in c.data.name else "gsm8k"))
    c.data.num_train = 8
    c.data.num_eval = 2
    c.data.num_test = 2
    if c.data.name == "gsm8k":
        c.data.options = dict(max_question_chars=110)
    c.rollout.num_generations = 2
    c.rollout.num_turns = 2
    c.rollout.max_new_tokens = 8
    # The tool prompt is ~200 bytes longer than the math prompt.
    c.rollout.max_context = 512 if c.env.name == "tool" else 256
    c.data.test_split = ""  # one evaluation fewer: the smoke test stays fast
    if c.env.name == "tool":  # the math environment runs no sandbox
        c.env.workers = 1
    c.train.steps = steps
    c.train.tasks_per_step = 2
    c.train.eval_interval = steps
    c.train.save_interval = steps
    c.train.num_transcripts = 1
    c.sft.enabled = False
    return c


def step_records(workdir, step: int = 1) -> list[dict]:
    """The trained step's lines of the run's metrics.jsonl (those with a reward)."""
    lines = (pathlib.Path(workdir) / "metrics.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r.get("step") == step and "reward_mean" in r]
