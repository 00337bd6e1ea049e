"""LoRA adapters on the decoder's projections: the layer against a hand computation, a
fresh adapter as the base exactly, adapted = merged weights (a second implementation),
the first gradients, and the merged export against transformers. (The gradients against
the merged weights' and the cached decode: tests/training/update/test_lora_step.py.)"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import transformers
from flax import nnx

from mtrl.models import PRESETS, Transformer, load_hf_checkpoint, save_hf_checkpoint
from mtrl.models.adapters import (adapt, adapted_graphdef, adapter_count, init_adapters,
                                  lora_report, merged_state, split_adapters, with_adapters)
from mtrl.models.lora import LoRAConfig, LoRAParam
from mtrl.models.lora_linear import LoRALinear

CONFIG = PRESETS.get("tiny").replace(num_layers=2, hidden_size=32, intermediate_size=48,
                                     num_heads=2, num_kv_heads=1, head_dim=16)
TOKENS = jnp.asarray(np.random.default_rng(0).integers(0, 259, (2, 12)), jnp.int32)


def noisy(adapters, seed=1, scale=0.05):
    """Adapters with every factor (B included) nonzero, so they change the model."""
    leaves, treedef = jax.tree.flatten(adapters)
    keys = jax.random.split(jax.random.key(seed), len(leaves))
    return jax.tree.unflatten(treedef, [x + scale * jax.random.normal(k, x.shape)
                                        for x, k in zip(leaves, keys)])


def test_config_targets_groups_names_and_errors():
    assert LoRAConfig(rank=4).targets == ("q_proj", "k_proj", "v_proj", "o_proj",
                                          "gate_proj", "up_proj", "down_proj")
    assert LoRAConfig(rank=4, targets="mlp").targets == ("gate_proj", "up_proj", "down_proj")
    assert LoRAConfig(rank=4, targets="v_proj, q_proj").targets == ("q_proj", "v_proj")
    assert LoRAConfig(rank=4, targets=["attention", "down_proj"]).targets[-1] == "down_proj"
    assert LoRAConfig(rank=8, alpha=16).scale == 2.0
    assert not LoRAConfig().enabled and LoRAConfig(rank=1).enabled
    for bad, match in ((dict(rank=-1), "rank must be an int >= 0"),
                       (dict(rank=2.0), "rank must be an int"),
                       (dict(alpha=0.0), "alpha must be a finite number > 0"),
                       (dict(targets="x_proj"), "unknown 'x_proj'"),
                       (dict(targets=""), "unknown ''"),
                       (dict(targets=()), "at least one projection")):
        with pytest.raises(ValueError, match=match):
            LoRAConfig(**bad)
    with pytest.raises(ValueError, match="rank is 0"):
        LoRAConfig().scale
    # Rank 0 in a ModelConfig means no adapters; the HF config never carries them.
    assert CONFIG.replace(lora=LoRAConfig()).lora is None
    assert "lora" not in CONFIG.replace(lora=LoRAConfig(rank=2)).to_hf_config()


def test_lora_linear_hand_computed():
    lora = LoRAConfig(rank=2, alpha=6.0)  # scale 3
    layer = LoRALinear(3, 4, lora=lora, use_bias=True, rngs=nnx.Rngs(0))
    rng = np.random.default_rng(1)
    w, b = rng.normal(size=(3, 4)), rng.normal(size=4)
    a, bb = rng.normal(size=(3, 2)), rng.normal(size=(2, 4))
    layer.kernel[...], layer.bias[...] = jnp.asarray(w, jnp.float32), jnp.asarray(b, jnp.float32)
    layer.lora_a[...], layer.lora_b[...] = jnp.asarray(a, jnp.float32), jnp.asarray(bb, jnp.float32)
    x = rng.normal(size=(5, 3))
    expected = x @ w + b + 3.0 * (x @ a) @ bb
    np.testing.assert_allclose(layer(jnp.asarray(x, jnp.float32)), expected, rtol=1e-5, atol=1e-5)
    # Fresh: B = 0 and A within PEFT's ±1/sqrt(in).
    fresh = LoRALinear(3, 4, lora=lora, rngs=nnx.Rngs(0))
    assert not np.asarray(fresh.lora_b[...]).any()
    assert np.abs(np.asarray(fresh.lora_a[...])).max() <= 1 / np.sqrt(3)
    assert isinstance(fresh.lora_a, LoRAParam) and fresh.lora_a[...].dtype == jnp.float32


@pytest.mark.parametrize("targets", ["all", "q_proj,v_proj,down_proj"])
def test_adapted_model_is_the_base_at_start_and_the_merged_weights_after(targets):
    lora = LoRAConfig(rank=4, alpha=8.0, targets=targets)
    base_model = Transformer(CONFIG, rngs=nnx.Rngs(0))
    graph, base = nnx.split(base_model)
    adapted = adapt(base_model, lora, jax.random.key(3))
    want = np.asarray(base_model(TOKENS))
    # B = 0: the adapted model computes the base's logits exactly.
    np.testing.assert_array_equal(np.asarray(adapted(TOKENS)), want)
    adapters, adapted_base = split_adapters(nnx.split(adapted)[1])
    names = {path[-2] for path, _ in nnx.to_flat_state(adapters)}
    assert names == set(lora.targets)
    # The base's arrays are shared, not copied.
    for (_, x), (_, y) in zip(nnx.to_flat_state(adapted_base), nnx.to_flat_state(base)):
        assert x[...] is y[...]
    trained = noisy(adapters)
    model = nnx.merge(adapted_graphdef(CONFIG, lora), with_adapters(base, trained))
    got = np.asarray(model(TOKENS))
    assert np.abs(got - want).max() > 1e-3  # the adapters change the function ...
    merged = nnx.merge(graph, merged_state(base, trained, lora))
    np.testing.assert_allclose(np.asarray(merged(TOKENS)), got, rtol=1e-5, atol=1e-5)
    # ... and merging left the base untouched.
    np.testing.assert_array_equal(np.asarray(base_model(TOKENS)), want)


def test_init_adapters_is_keyed_and_gradients_reach_b_first():
    lora = LoRAConfig(rank=4)
    one, again = (init_adapters(CONFIG, lora, jax.random.key(7)) for _ in range(2))
    other = init_adapters(CONFIG, lora, jax.random.key(8))
    flat = lambda s: [np.asarray(x) for x in jax.tree.leaves(s)]  # noqa: E731
    assert all(np.array_equal(x, y) for x, y in zip(flat(one), flat(again)))
    assert not all(np.array_equal(x, y) for x, y in zip(flat(one), flat(other)))
    # Per layer r · (in + out) for q, k, v, o, gate, up, down (d 32, kv 16, mlp 48).
    assert adapter_count(one) == CONFIG.num_layers * 4 * sum(
        i + o for i, o in [(32, 32), (32, 16), (32, 16), (32, 32), (32, 48), (32, 48), (48, 32)])
    base = nnx.split(Transformer(CONFIG, rngs=nnx.Rngs(0)))[1]
    graph = adapted_graphdef(CONFIG, lora)

    def loss(adapters):
        return jnp.mean(nnx.merge(graph, with_adapters(base, adapters))(TOKENS) ** 2)

    grads = dict(nnx.to_flat_state(jax.grad(loss)(one)))
    # At B = 0, dL/dA = x^T (dy B^T) s = 0, while dL/dB = s (xA)^T dy is not.
    a = [np.asarray(v[...]) for k, v in grads.items() if k[-1] == "lora_a"]
    b = [np.asarray(v[...]) for k, v in grads.items() if k[-1] == "lora_b"]
    assert all(not x.any() for x in a) and all(np.abs(x).max() > 0 for x in b)
    assert "0.00% of" not in lora_report(lora, one, CONFIG)


def test_merged_export_loads_in_transformers_with_the_adapted_logits(make_hf_model, tmp_path):
    # Llama with untied embeddings and q/k/v/o and MLP biases: every adapted projection
    # has a bias beside it (tests/models/conftest.py).
    make_hf_model("llama").save_pretrained(tmp_path / "base")
    base_model = load_hf_checkpoint(tmp_path / "base")
    lora = LoRAConfig(rank=4, alpha=8.0)
    graph, base = nnx.split(base_model)
    adapters = noisy(init_adapters(base_model.config, lora, jax.random.key(2)), scale=0.1)
    adapted = nnx.merge(adapted_graphdef(base_model.config, lora), with_adapters(base, adapters))
    save_hf_checkpoint(nnx.merge(graph, merged_state(base, adapters, lora)), tmp_path / "out")
    hf, info = transformers.AutoModelForCausalLM.from_pretrained(
        tmp_path / "out", output_loading_info=True, attn_implementation="eager")
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    import torch
    tokens = np.random.default_rng(3).integers(0, base_model.config.vocab_size, (2, 16))
    with torch.no_grad():
        expected = hf.eval()(input_ids=torch.tensor(tokens)).logits.float().numpy()
    got = np.asarray(adapted(jnp.asarray(tokens, jnp.int32)))
    base_logits = np.asarray(base_model(jnp.asarray(tokens, jnp.int32)))
    scale = np.abs(expected).max()
    assert np.abs(got - expected).max() <= 1e-4 * scale
    assert np.abs(base_logits - expected).max() > 1e-2 * scale  # the adapters showed


def test_a_bfloat16_base_keeps_float32_adapters():
    """The factors are their own float32 master copy; the base and a merge keep bf16
    (shapes and dtypes only: nothing is computed)."""
    config = CONFIG.replace(dtype="bfloat16", param_dtype="bfloat16")
    lora = LoRAConfig(rank=2)
    base = nnx.split(nnx.eval_shape(lambda: Transformer(config, rngs=nnx.Rngs(0))))[1]
    adapters = init_adapters(config, lora, jax.random.key(0))
    assert {x.dtype for x in jax.tree.leaves(adapters)} == {jnp.dtype(jnp.float32)}
    assert {x.dtype for x in jax.tree.leaves(base)} == {jnp.dtype(jnp.bfloat16)}
    merged = jax.eval_shape(lambda b, a: merged_state(b, a, lora), base, adapters)
    assert {x.dtype for x in jax.tree.leaves(merged)} == {jnp.dtype(jnp.bfloat16)}
    model = nnx.eval_shape(lambda: nnx.merge(adapted_graphdef(config, lora),
                                             with_adapters(base, adapters)))
    logits = jax.eval_shape(lambda m: m(TOKENS), model)
    assert logits.dtype == jnp.float32 and logits.shape == TOKENS.shape + (config.vocab_size,)
