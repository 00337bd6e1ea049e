"""Shared tiny model and sampler for the sampling tests (module-level so compiled
programs are reused across tests: each distinct shape costs seconds on 2 cores)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from mtrl.models import Transformer, preset
from mtrl.sampling import BucketPolicy
from mtrl.sampling import Sampler

# initializer_range 0.1 (default 0.02) makes the random model's next-token distributions
# peaked enough (top probability ~0.07 instead of ~0.01) for greedy margins and for the
# empirical-distribution test to have power, while keeping logits small (|z| < ~5), so
# float32 round-off between cache and full forward stays below ~5e-6 in log-probability.
TINY = preset("tiny", initializer_range=0.1)
BUCKETS = BucketPolicy(min_batch=4, min_length=16, cache_multiple=64)


@pytest.fixture(scope="session")
def tiny_model() -> Transformer:
    return Transformer(TINY, rngs=nnx.Rngs(0))


@pytest.fixture(scope="session")
def sampler(tiny_model) -> Sampler:
    return Sampler(tiny_model, buckets=BUCKETS)


@pytest.fixture(scope="session")
def full_log_probs(tiny_model):
    """fn(tokens: list[int]) -> [len, V] log-softmax of a cache-free full forward."""
    forward = jax.jit(lambda tokens: jax.nn.log_softmax(tiny_model(tokens), axis=-1))

    def run(tokens):
        # Pad to a fixed 64 so every call reuses one program; padding sits after the
        # real tokens and is masked out causally, so it cannot change their logits.
        padded = np.zeros((1, 64), np.int32)
        padded[0, : len(tokens)] = tokens
        return np.asarray(forward(jnp.asarray(padded)))[0, : len(tokens)]

    return run
