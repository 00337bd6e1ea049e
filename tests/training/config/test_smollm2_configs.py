"""The SmolLM2 configs (experiments/configs/smollm2_*.py) build (and the two-agent one
runs one training step) on a tiny
random checkpoint with a ChatML tokenizer beside it (as tests/training/config/test_configs.py
does for the others), with their per-agent system prompts and the learnable-band
task-id file; the files they need are written here."""

import json
import pathlib

import pytest
from flax import nnx

from mtrl.models import PRESETS, Transformer, save_hf_checkpoint
from mtrl.rollout import ChatTemplateFormat
from mtrl.training.config import module_from_file
from mtrl.training.loop.trainer import Trainer
from tests.tokenizers.chatml import build_chatml_tokenizer

ROOT = pathlib.Path(__file__).resolve().parents[3]
# The configs that train on a learnable-band task file (smollm2_arith and smollm2_guess
# generate their tasks and train on all of them: tested below and in
# test_smollm2_guess.py).
CONFIGS = sorted(p for p in (ROOT / "experiments" / "configs").glob("smollm2_*.py")
                 if p.stem not in ("smollm2_arith", "smollm2_guess"))
TINY = dict(num_layers=1, hidden_size=32, intermediate_size=64, num_heads=2, num_kv_heads=1,
            head_dim=16, vocab_size=512)
# Per config: the shared data folder and two ids of its train split.
DATA = {"mbpp": ("mbpp", ["mbpp_sanitized/602", "mbpp_sanitized/603"]),  # ids 601-974
        "gsm8k": ("gsm8k", ["gsm8k/train/600", "gsm8k/train/601"])}  # train[500:]


def data_of(path):
    return DATA["gsm8k" if "gsm8k" in path.stem else "mbpp"]


@pytest.fixture(scope="module")
def chat_checkpoint(tmp_path_factory):
    path = tmp_path_factory.mktemp("tiny_chat")
    save_hf_checkpoint(Transformer(PRESETS.get("tiny").replace(**TINY), rngs=nnx.Rngs(0)), path)
    build_chatml_tokenizer().save_pretrained(path)
    return str(path)


@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_smollm2_config_runs_one_step(path, tmp_path, chat_checkpoint, shared_data):
    c = module_from_file(path).get_config()
    assert c.data.options["train_ids_file"] and c.data.test_split and c.data.eval_split
    folder, train_ids = data_of(path)
    ids_file = tmp_path / "learnable.json"
    ids_file.write_text(json.dumps({"task_ids": train_ids, "pass_rates": {}, "samples": 4}))
    c.model.hf_checkpoint = chat_checkpoint
    c.data.path = str(shared_data / folder)
    c.data.options = {"train_ids_file": str(ids_file)}
    c.data.num_eval = c.data.num_test = 1
    c.train.steps, c.train.eval_interval, c.train.save_interval = 1, 1, 1
    c.train.eval_samples = 0
    c.rollout.num_generations = 2
    c.rollout.max_new_tokens = 8
    c.rollout.max_context = 1024  # the test tokenizer's BPE knows few merges
    if c.env.get("name", "code") == "code":  # the math environment runs no sandbox
        c.env.workers = 1
    trainer = Trainer(c, tmp_path / "run", show_progress=False)
    try:
        assert sorted(t.task_id for t in trainer.c.train_tasks) == train_ids
        formats = trainer.c.turn_format
        formats = formats if isinstance(formats, tuple) else (formats,)
        assert all(isinstance(f, ChatTemplateFormat) and f.strip_prefix == "<|im_end|>"
                   for f in formats)
        for fmt, system in zip(formats, c.chat.system_prompts):
            assert system in fmt.first("x")  # each agent's own system prompt
        if path.stem != "smollm2_coop":
            return  # one full step (the two-agent config) keeps this file fast
        result = trainer.run()
    finally:
        trainer.close()
    assert result["steps"] == 1 and result["test_success"] is not None
    exported = pathlib.Path(result["exported_hf"]) / "agent0"
    assert (exported / "tokenizer.json").exists() and (exported / "generation_config.json").exists()


def test_missing_task_id_file_is_a_one_line_error(tmp_path, chat_checkpoint, shared_data):
    c = module_from_file(CONFIGS[0]).get_config()
    c.model.hf_checkpoint = chat_checkpoint
    c.data.path = str(shared_data / "mbpp")
    c.data.options = {"train_ids_file": str(tmp_path / "none.json")}
    with pytest.raises(ValueError, match="train_ids_file: .* does not exist; make it with: "
                                         "python -m tools.select_learnable_tasks"):
        Trainer(c, tmp_path / "run", show_progress=False)


def test_arith_config_trains_one_turn_and_tests_two(tmp_path, chat_checkpoint):
    """smollm2_arith.py builds, and with rollout.num_turns=1 and train.eval_turns=2
    (the claim's single-turn arm) trains one turn and evaluates two, with the
    direction feedback between them."""
    c = module_from_file(ROOT / "experiments" / "configs" / "smollm2_arith.py").get_config()
    c.model.hf_checkpoint = chat_checkpoint
    c.data.num_eval = c.data.num_test = 2
    c.train.steps, c.train.eval_interval, c.train.save_interval = 1, 1, 1
    c.train.export_best = False
    c.rollout.num_turns, c.train.eval_turns = 1, 2
    c.rollout.num_generations = 2
    c.rollout.max_new_tokens = 4
    c.rollout.max_context = 1024  # the test tokenizer's BPE knows few merges
    c.sft.steps, c.sft.batch_size, c.sft.max_len = 2, 2, 512  # (ditto)
    trainer = Trainer(c, tmp_path / "run", show_progress=False)
    try:
        result = trainer.run()
    finally:
        trainer.close()
    metrics = result["test_metrics"]
    assert {"test_success_turn1", "test_success_turn2"} <= set(metrics)
    # The last checkpoint's test beside the chosen one's (always reported).
    assert result["last_step"] == 1 and result["last_test_success"] is not None
    if result["best_step"] == 1:
        assert result["last_test_success"] == result["test_success"]
    else:
        assert (tmp_path / "run" / "test_last.json").exists()
    assert "test_success_turn3" not in metrics
    transcript = next((tmp_path / "run").glob("transcripts/*test*"))
    assert "is too " in transcript.read_text() or "No number" in transcript.read_text()
