"""sequence_logprobs equals the model's whole logits' log-softmax: values and gradients,
for chunk sizes that do and do not divide the number of positions, tied and untied
output layers (the head itself: tests/models/test_head.py)."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from mtrl.models import PRESETS, Transformer
from mtrl.training.policy.logprobs import sequence_logprobs

CONFIG = dataclasses.replace(PRESETS.get("tiny"), num_layers=2, hidden_size=32,
                             intermediate_size=64, head_dim=8, num_heads=4, num_kv_heads=2)


@pytest.mark.parametrize("tie", [True, False])
def test_sequence_logprobs_equal_the_model_logits(tie):
    model = Transformer(dataclasses.replace(CONFIG, tie_word_embeddings=tie), rngs=nnx.Rngs(0))
    rng = np.random.default_rng(1)
    tokens = jnp.asarray(rng.integers(0, CONFIG.vocab_size, size=(3, 9)), jnp.int32)
    mask = jnp.asarray(np.arange(9)[None, :] < np.array([[9], [6], [4]]))
    graphdef, params = nnx.split(model)

    def reference(params):
        logits = nnx.merge(graphdef, params)(tokens, token_mask=mask)[:, :-1]
        logp = jnp.take_along_axis(jax.nn.log_softmax(logits, -1), tokens[:, 1:, None],
                                   -1)[..., 0]
        return jnp.pad(jnp.where(mask[:, 1:] & mask[:, :-1], logp, 0.0), ((0, 0), (1, 0)))

    for chunk in (0, 4, 512):
        np.testing.assert_allclose(sequence_logprobs(graphdef, params, tokens, mask, chunk=chunk),
                                   reference(params), rtol=1e-5, atol=1e-5)
        got = jax.grad(lambda p: sequence_logprobs(graphdef, p, tokens, mask, remat="full",
                                                   chunk=chunk).sum())(params)
        want = jax.grad(lambda p: reference(p).sum())(params)
        for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
