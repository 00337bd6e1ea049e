"""Rotary embeddings against transformers' frequency code and hand-computed rotations."""

import math

import jax.numpy as jnp
import numpy as np
import pytest
import transformers
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

from mtrl.models.config import Llama3RopeScaling
from mtrl.models.rope import apply_rotary, inverse_frequencies, rotary_cos_sin, rotate_half


def test_default_frequencies_hand_computed():
    np.testing.assert_allclose(inverse_frequencies(4, 100.0), [1.0, 0.1], rtol=1e-7)
    np.testing.assert_allclose(inverse_frequencies(6, 10000.0),
                               [1.0, 10000.0 ** (-1 / 3), 10000.0 ** (-2 / 3)], rtol=1e-6)


@pytest.mark.parametrize("head_dim,theta", [(16, 500000.0), (64, 500000.0), (128, 10000.0)])
def test_llama3_scaling_matches_transformers(head_dim, theta):
    scaling = Llama3RopeScaling(factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                                original_max_position_embeddings=64)
    config = transformers.LlamaConfig(
        hidden_size=head_dim * 2, num_attention_heads=2, head_dim=head_dim,
        rope_parameters={**scaling.to_hf(), "rope_theta": theta})
    expected, attention_factor = ROPE_INIT_FUNCTIONS["llama3"](config, "cpu")
    assert attention_factor == 1.0
    got = inverse_frequencies(head_dim, theta, scaling)
    np.testing.assert_allclose(got, expected.numpy(), rtol=1e-6, atol=0)
    # All three bands occur, so every branch of the formula is exercised.
    unscaled = inverse_frequencies(head_dim, theta)
    ratio = got / unscaled
    assert np.isclose(ratio, 1.0).any() and np.isclose(ratio, 1 / 8).any()
    assert ((ratio > 1 / 8 + 1e-6) & (ratio < 1 - 1e-6)).any()


def test_default_frequencies_match_transformers():
    config = transformers.Qwen2Config(hidden_size=96, num_attention_heads=4,
                                      rope_parameters={"rope_type": "default", "rope_theta": 1e6})
    expected, _ = transformers.models.qwen2.modeling_qwen2.Qwen2RotaryEmbedding \
        .compute_default_rope_parameters(config)
    np.testing.assert_allclose(inverse_frequencies(24, 1e6), expected.numpy(), rtol=1e-6)


def test_rotate_half_and_rotation_by_hand():
    x = jnp.asarray([1.0, 2.0, 3.0, 4.0])
    np.testing.assert_array_equal(rotate_half(x), [-3.0, -4.0, 1.0, 2.0])
    # head_dim 2: one frequency (1.0), so position p rotates (a, b) by angle p.
    positions = jnp.asarray([[0, 1, 2]])
    cos, sin = rotary_cos_sin(positions, inverse_frequencies(2, 10000.0), jnp.float32)
    vec = jnp.broadcast_to(jnp.asarray([1.0, 0.0]), (1, 3, 1, 2))
    rotated = np.asarray(apply_rotary(vec, cos, sin))[0, :, 0]
    np.testing.assert_allclose(rotated, [[1, 0], [math.cos(1), math.sin(1)],
                                         [math.cos(2), math.sin(2)]], atol=1e-6)


def test_rotation_preserves_norm_and_is_relative():
    rng = np.random.default_rng(0)
    q = jnp.asarray(rng.normal(size=(1, 1, 1, 16)), jnp.float32)
    k = jnp.asarray(rng.normal(size=(1, 1, 1, 16)), jnp.float32)
    inv_freq = inverse_frequencies(16, 10000.0)

    def rotated(x, position):
        cos, sin = rotary_cos_sin(jnp.asarray([[position]]), inv_freq, jnp.float32)
        return apply_rotary(x, cos, sin)

    assert np.isclose(float(jnp.linalg.norm(rotated(q, 7))), float(jnp.linalg.norm(q)), rtol=1e-6)
    dot = lambda a, b: float(jnp.sum(a * b))  # noqa: E731
    assert np.isclose(dot(rotated(q, 10), rotated(k, 3)), dot(rotated(q, 107), rotated(k, 100)),
                      rtol=1e-4)
    assert not np.isclose(dot(rotated(q, 10), rotated(k, 3)), dot(rotated(q, 3), rotated(k, 10)),
                          rtol=1e-3)


def test_shape_checks():
    with pytest.raises(ValueError, match="even"):
        inverse_frequencies(5, 10000.0)
    with pytest.raises(ValueError, match="positions"):
        rotary_cos_sin(jnp.zeros((3,), jnp.int32), inverse_frequencies(4, 1e4), jnp.float32)
    cos, sin = rotary_cos_sin(jnp.zeros((1, 2), jnp.int32), inverse_frequencies(4, 1e4),
                              jnp.float32)
    with pytest.raises(ValueError, match="cos/sin"):
        apply_rotary(jnp.zeros((1, 3, 2, 4)), cos, sin)
