"""tools/hf_reproduce.py plays an exported model's greedy episodes with transformers on
any one-agent text environment the config names (here the guess game): each turn's
feedback is the environment's own observation for the decoded answer, a task ends at
its right answer or after T turns, and success by turn counts the solved turns."""

import json
import sys

import pytest
from flax import nnx

from mtrl.models import PRESETS, Transformer, save_hf_checkpoint
from mtrl.training.config import base_config
from tests.tokenizers.chatml import build_chatml_tokenizer
from tools import hf_reproduce


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    path = tmp_path_factory.mktemp("hf_reproduce")
    config = PRESETS.get("tiny").replace(vocab_size=512, num_layers=1)
    save_hf_checkpoint(Transformer(config, rngs=nnx.Rngs(0)), path)
    build_chatml_tokenizer().save_pretrained(path)
    return path


def guess_config(path):
    c = base_config()
    c.model.preset = ""
    c.model.hf_checkpoint = str(path)
    c.data.name = "guess"
    c.data.eval_split, c.data.test_split = "validation", "test"
    c.data.num_train, c.data.num_eval, c.data.num_test = 8, 4, 4
    c.data.options = {"lows": (0, 99), "widths": (8, 32), "seed": 0}
    c.env.name = "guess"
    c.env.num_agents = 1
    c.rollout.num_turns = 3
    c.rollout.max_new_tokens = 6
    c.sft.enabled = False
    return c


def test_plays_the_config_environment_turn_by_turn(checkpoint):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    suite, env = hf_reproduce.suite_and_env(guess_config(checkpoint))
    tasks = suite.tasks("test")[:3]
    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    model = AutoModelForCausalLM.from_pretrained(checkpoint, dtype=torch.float32).eval()
    solved_at, transcripts = hf_reproduce.play(model, tokenizer, env, tasks, None, 3, 6)
    assert len(solved_at) == len(transcripts) == 3
    for task, solved, turns in zip(tasks, solved_at, transcripts):
        # an episode ends at its right answer, else after T = 3 turns
        assert len(turns) == (solved if solved else 3)
        state = env.reset(task)[0]
        for t, turn in enumerate(turns, start=1):
            (result,) = env.step([state], [(turn["answer"],)], t)
            assert turn["feedback"] == result.observations[0]  # the environment's own words
            state = result.state


def test_refuses_a_config_of_several_agents(checkpoint):
    c = guess_config(checkpoint)
    c.env.name, c.data.name, c.env.num_agents = "code", "intfn", 2
    c.tokenizer = "byte"
    with pytest.raises(SystemExit, match="one agent's episodes"):
        hf_reproduce.suite_and_env(c)
