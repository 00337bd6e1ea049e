"""ModelConfig.layer_loop changes how the cache-free forward loops, never its values."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from mtrl.models import PRESETS, Transformer
from mtrl.models.config import UNROLL_LAYERS_UP_TO

CONFIG = dataclasses.replace(PRESETS.get("tiny"), num_layers=3, hidden_size=32,
                             intermediate_size=64, head_dim=8, num_heads=4, num_kv_heads=2)


@pytest.mark.parametrize("remat", ["none", "full"])
def test_scan_and_unroll_give_the_same_logits_and_gradients(remat):
    tokens = jnp.asarray(np.random.default_rng(0).integers(0, 256, (2, 12)), jnp.int32)
    token_mask = jnp.arange(12)[None, :] < jnp.asarray([[12], [7]])
    out = {}
    for loop in ("scan", "unroll"):
        graphdef, params = nnx.split(Transformer(dataclasses.replace(CONFIG, layer_loop=loop),
                                                 rngs=nnx.Rngs(0)))

        def loss(p):
            logits = nnx.merge(graphdef, p)(tokens, token_mask=token_mask, remat=remat)
            return jnp.mean(jax.nn.logsumexp(logits, axis=-1) - logits[..., 0]), logits

        (_, logits), grads = jax.jit(jax.value_and_grad(loss, has_aux=True))(params)
        out[loop] = (logits, grads)
    np.testing.assert_allclose(out["unroll"][0], out["scan"][0], rtol=1e-5, atol=1e-6)
    for got, want in zip(jax.tree.leaves(out["unroll"][1]), jax.tree.leaves(out["scan"][1])):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


def test_auto_unrolls_shallow_models_only_and_names_are_checked():
    shallow = dataclasses.replace(CONFIG, num_layers=UNROLL_LAYERS_UP_TO)
    deep = dataclasses.replace(CONFIG, num_layers=UNROLL_LAYERS_UP_TO + 1)
    assert shallow.unrolled_layers and not deep.unrolled_layers
    assert not dataclasses.replace(shallow, layer_loop="scan").unrolled_layers
    assert dataclasses.replace(deep, layer_loop="unroll").unrolled_layers
    with pytest.raises(ValueError, match="layer_loop must be one of"):
        dataclasses.replace(CONFIG, layer_loop="loop")


def test_unroll_leaves_no_layer_scan_in_the_program():
    tokens = jnp.zeros((1, 6), jnp.int32)
    for loop, has_scan in (("scan", True), ("unroll", False)):
        config = dataclasses.replace(CONFIG, layer_loop=loop, attention="reference")
        graphdef, params = nnx.split(Transformer(config, rngs=nnx.Rngs(0)))
        program = str(jax.make_jaxpr(lambda p: nnx.merge(graphdef, p)(tokens))(params))
        assert ("scan[" in program) is has_scan, loop
