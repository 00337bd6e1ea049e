"""LoRA end to end: a run from a (tiny, random) Hugging Face checkpoint with lora.rank=4
trains adapters in SFT and one RL step, saves checkpoints that hold adapters and name
their base, exports merged weights that transformers loads with the adapted model's
logits, resumes for a second step, and refuses, in one line, to resume onto a base whose
weights changed."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch
import transformers
from flax import nnx

from mtrl.models import PRESETS, Transformer, save_hf_checkpoint
from mtrl.tokenizers import ByteTokenizer
from mtrl.training.loop.trainer import Trainer
from mtrl.training.policy.train_state import agent_params, agent_policy
from tests.training.loop.small_run import small_config

MODEL = PRESETS.get("tiny").replace(num_layers=1, hidden_size=32, intermediate_size=64,
                                    num_heads=2, num_kv_heads=1, head_dim=16,
                                    vocab_size=ByteTokenizer().vocab_size)


def lora_config(checkpoint, steps):
    c = small_config()
    c.model.preset, c.model.hf_checkpoint, c.model.overrides = "", str(checkpoint), {}
    c.lora.rank, c.lora.alpha = 4, 8.0
    c.sft.enabled, c.sft.steps, c.sft.batch_size = True, 2, 2
    c.train.steps = steps
    c.train.eval_interval = c.train.save_interval = 1
    c.optim.learning_rate, c.optim.warmup_steps = 1e-2, 0
    return c


def run(config, workdir):
    trainer = Trainer(config, workdir, show_progress=False)
    try:
        result = trainer.run()
        best = trainer._restored(result["best_step"])
        return result, trainer, best
    finally:
        trainer.close()


@pytest.fixture(scope="module")
def first_run(tmp_path_factory):
    checkpoint = tmp_path_factory.mktemp("base")
    save_hf_checkpoint(Transformer(MODEL, rngs=nnx.Rngs(0)), checkpoint)
    workdir = tmp_path_factory.mktemp("lora_run")
    return checkpoint, workdir, run(lora_config(checkpoint, 1), workdir)


def test_checkpoints_hold_adapters_and_name_their_base(first_run):
    checkpoint, workdir, (result, trainer, best) = first_run
    assert result["steps"] == 1
    saved = json.loads((workdir / "checkpoints" / "1" / "state" / "_METADATA").read_text())
    leaves = [key for key in saved["tree_metadata"]]
    params = [k for k in leaves if "'params'" in k]
    assert params and all("lora_a" in k or "lora_b" in k for k in params), params
    assert not any("kernel" in k or "embedding" in k for k in leaves)  # no base, no moments
    extra = json.loads((workdir / "checkpoints" / "1" / "extra" / "metadata").read_text())
    assert extra["lora_base"]["source"] == f"hf:{checkpoint}"
    assert extra["lora_base"] == trainer.base_record
    sft_extra = json.loads(next((workdir / "sft_checkpoints").glob("*/extra/metadata"))
                           .read_text())
    assert sft_extra["lora_base"] == trainer.base_record
    # SFT and the RL step trained the adapters away from their fresh values.
    fresh = trainer.c.adapters
    moved = [np.abs(np.asarray(x) - np.asarray(y)).max() for a in range(2)
             for x, y in zip(jax.tree.leaves(agent_params(best, a)), jax.tree.leaves(fresh[a]))]
    assert min(moved) > 0


def test_the_merged_export_loads_in_transformers_with_the_adapted_logits(first_run):
    _, workdir, (result, trainer, best) = first_run
    tokens = np.random.default_rng(0).integers(0, MODEL.vocab_size, (2, 10))
    for a in range(2):
        adapted = nnx.merge(trainer.graphdef, agent_policy(best, a))
        want = np.asarray(adapted(jnp.asarray(tokens, jnp.int32)))
        base = np.asarray(trainer.c.models[a](jnp.asarray(tokens, jnp.int32)))
        hf = transformers.AutoModelForCausalLM.from_pretrained(workdir / "export" / f"agent{a}")
        with torch.no_grad():
            got = hf.eval()(input_ids=torch.tensor(tokens)).logits.float().numpy()
        assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()
        assert np.abs(base - want).max() > 1e-4  # trained adapters, merged in


def test_resumes_and_refuses_another_base(first_run, capsys):
    checkpoint, workdir, _ = first_run
    result, _, _ = run(lora_config(checkpoint, 2), workdir)
    assert "resuming from RL step 1" in capsys.readouterr().out
    steps = [json.loads(line)["step"] for line in (workdir / "metrics.jsonl").read_text()
             .splitlines()]
    assert result["steps"] == 2 and 2 in steps
    # Same config, same path, other weights: the adapters do not belong to this base.
    save_hf_checkpoint(Transformer(MODEL, rngs=nnx.Rngs(1)), checkpoint)
    with pytest.raises(ValueError, match=r"holds adapters of the base hf:.* but this run's "
                       r"base hf:.* is sha256 [0-9a-f]{12}: the weights differ") as error:
        run(lora_config(checkpoint, 3), workdir)
    assert "\n" not in str(error.value)
