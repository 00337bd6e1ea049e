"""ModelConfig.matmul: the choice, and the oneDNN path's values and gradients against XLA's.

Tolerances (measured on CONFIG, random init scaled to 0.1 so logits spread over several
nats). Forward: the two bf16 paths multiply the same bf16 values and accumulate in
float32, differing in sum order only, then round activations to bf16 alike: their
logits agreed bitwise here; we allow 1e-3 (a sum-order difference that flips one bf16
rounding moves a logit by ~1e-4). Gradients: both bf16 paths are ~1.3% (relative L2)
from the float32 model's gradient, and 0.8% from each other; we require the oneDNN
gradient to be no further from float32 than 1.25x XLA's bf16 error plus 1e-3, and the
two within 2% of each other. A path that dropped the float32 accumulation, or lost a
transpose in the backward, is far outside both.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from mtrl.kernels import cpu, onednn_matmul
from mtrl.models import ModelConfig, Transformer
from mtrl.models import matmul as matmul_module

CONFIG = ModelConfig(vocab_size=300, hidden_size=64, intermediate_size=128, num_layers=2,
                     num_heads=4, num_kv_heads=2, family="qwen2", attention_bias=True,
                     initializer_range=0.1, dtype="bfloat16")
needs_kernel = pytest.mark.skipif(not onednn_matmul.usable(),
                                  reason=f"oneDNN kernel: {onednn_matmul.unusable_reason()}")


def test_config_refuses_unknown_and_float32_onednn():
    with pytest.raises(ValueError, match="matmul must be one of"):
        CONFIG.replace(matmul="mkl")
    with pytest.raises(ValueError, match="needs dtype bfloat16"):
        CONFIG.replace(dtype="float32", matmul="onednn")


def test_auto_stays_on_xla_without_units_or_bf16(monkeypatch, capsys):
    assert matmul_module.resolve_matmul("auto", jnp.float32) == "xla"
    monkeypatch.setattr(cpu, "has_amx_bf16", lambda flags=None: False)
    assert matmul_module.auto_choice(jnp.bfloat16) == ("xla", "this CPU has no AMX-BF16 units")
    matmul_module._PRINTED.clear()
    assert matmul_module.resolve_matmul("auto", jnp.bfloat16) == "xla"
    matmul_module.resolve_matmul("auto", jnp.bfloat16)
    assert capsys.readouterr().out.count("matmul auto -> xla (this CPU has no AMX") == 1


def test_auto_picks_onednn_exactly_when_units_and_kernel_are_there():
    expected = cpu.has_amx_bf16() and onednn_matmul.available()  # auto asks for AMX units
    assert (matmul_module.resolve_matmul("auto", jnp.bfloat16) == "onednn") == expected


def run(config, tokens):
    model = Transformer(config, rngs=nnx.Rngs(0))

    def loss(model):
        logp = jax.nn.log_softmax(model(tokens))
        return -jnp.take_along_axis(logp[:, :-1], tokens[:, 1:, None], -1).mean()

    logits = model(tokens)
    grads = jax.tree.leaves(nnx.state(nnx.jit(nnx.grad(loss))(model)))
    return logits, grads


def relative(a, b):
    return (sum(float(jnp.sum((x - y) ** 2)) for x, y in zip(a, b))
            / sum(float(jnp.sum(y ** 2)) for y in b)) ** 0.5


@needs_kernel
@pytest.mark.parametrize("tied", [False, True])
def test_onednn_logits_and_gradients_match_xla(tied):
    tokens = jnp.asarray(np.random.default_rng(0).integers(0, 300, (3, 17)))
    config = CONFIG.replace(tie_word_embeddings=tied)
    fast, fast_grads = run(config.replace(matmul="onednn"), tokens)
    xla, xla_grads = run(config.replace(matmul="xla"), tokens)
    _, f32_grads = run(config.replace(matmul="xla", dtype="float32"), tokens)
    assert fast.dtype == jnp.float32
    np.testing.assert_allclose(fast, xla, atol=1e-3, rtol=0)
    assert all(g.dtype == jnp.float32 for g in fast_grads)  # float32 master weights
    xla_error = relative(xla_grads, f32_grads)
    assert 1e-4 < relative(fast_grads, f32_grads) <= 1.25 * xla_error + 1e-3
    assert relative(fast_grads, xla_grads) < 0.02


@needs_kernel
def test_onednn_model_runs_in_the_traced_program():
    tokens = jnp.zeros((2, 40), jnp.int32)
    model = Transformer(CONFIG.replace(matmul="onednn"), rngs=nnx.Rngs(0))
    text = str(jax.make_jaxpr(lambda t: model(t))(tokens))
    assert onednn_matmul.TARGET in text
    text = str(jax.make_jaxpr(lambda t: Transformer(CONFIG.replace(matmul="xla"),
                                                     rngs=nnx.Rngs(0))(t))(tokens))
    assert onednn_matmul.TARGET not in text
