"""Per-layer rematerialisation changes memory, never values: gradients are equal."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from mtrl.models import PRESETS, Transformer

CONFIG = dataclasses.replace(PRESETS.get("tiny"), num_layers=2, hidden_size=32,
                             intermediate_size=64, head_dim=8, num_heads=4, num_kv_heads=2)


def test_remat_policies_give_the_same_gradients():
    graphdef, params = nnx.split(Transformer(CONFIG, rngs=nnx.Rngs(0)))
    tokens = jnp.asarray(np.random.default_rng(0).integers(0, 256, (2, 12)), jnp.int32)

    def loss(p, remat):
        logits = nnx.merge(graphdef, p)(tokens, remat=remat)
        return jnp.mean(jax.nn.logsumexp(logits, axis=-1) - logits[..., 0])

    grads = {name: jax.jit(jax.grad(loss), static_argnums=1)(params, name)
             for name in ("none", "dots", "full")}
    for name in ("dots", "full"):
        for got, want in zip(jax.tree.leaves(grads[name]), jax.tree.leaves(grads["none"])):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
    with pytest.raises(ValueError, match="remat must be one of"):
        nnx.merge(graphdef, params)(tokens, remat="some")
