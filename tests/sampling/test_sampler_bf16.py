"""A bfloat16-compute model's sampler keeps its float weights in bfloat16 (half the bytes a
decode step reads) and computes exactly what the float32 master weights compute: every
use of a weight casts it to the compute dtype first, so the cast copy is the same input."""

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from mtrl.models import Transformer, preset
from mtrl.sampling import Sampler, SamplingConfig

MIXED = preset("tiny", initializer_range=0.1, dtype="bfloat16", param_dtype="float32",
               matmul="xla")


def test_sampler_copy_is_bf16_and_forward_is_bitwise_the_masters():
    model = Transformer(MIXED, rngs=nnx.Rngs(0))
    sampler = Sampler(model)
    floats = [x for x in jax.tree.leaves(sampler.state) if jnp.issubdtype(x.dtype, jnp.floating)]
    assert floats and all(x.dtype == jnp.bfloat16 for x in floats)
    tokens = jnp.asarray(np.random.default_rng(0).integers(0, 259, (2, 11)))
    copy = nnx.merge(sampler.graphdef, sampler.state)
    np.testing.assert_array_equal(copy(tokens), model(tokens))
    sampler.set_state(nnx.split(model)[1])  # a trainer's float32 state is cast again
    assert all(x.dtype == jnp.bfloat16 for x in jax.tree.leaves(sampler.state)
               if jnp.issubdtype(x.dtype, jnp.floating))
    out = sampler.generate([[5, 17, 33]], jax.random.key(0),
                           SamplingConfig(greedy=True, max_new_tokens=4)).output
    assert out.tokens.shape == (1, 4)


def test_float32_sampler_keeps_float32_weights():
    model = Transformer(preset("tiny"), rngs=nnx.Rngs(0))
    assert all(x.dtype == jnp.float32 for x in jax.tree.leaves(Sampler(model).state)
               if jnp.issubdtype(x.dtype, jnp.floating))
