"""jax.nn.dot_product_attention (XLA's implementation on CPU) against the reference
einsum attention: causal, padded, packed-segment and tree masks, values and gradients,
alone and inside the model; plus which implementation ModelConfig.attention picks.

Tolerance: float32, both paths compute the same float32 scores and softmax in a
different order of operations, so they agree to float32 rounding (atol 1e-6 on
outputs of order 1; 1e-5 on the model's logits and gradients after two layers)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from mtrl.models import ModelConfig, Transformer
from mtrl.models.attention import fused_attention, resolve_implementation
from mtrl.models.layers import grouped_attention

B, L, KV, G, D = 3, 8, 2, 2, 16


def mask_from(token_mask, attend_end=None):
    """The cache-free forward's mask (Transformer._forward): j <= i, i < attend_end[j],
    both tokens real."""
    index = np.arange(L)
    mask = index[None, :] <= index[:, None]
    mask = np.broadcast_to(mask, (B, L, L))
    if attend_end is not None:
        mask = mask & (index[None, :, None] < attend_end[:, None, :])
    return mask & token_mask[:, None, :] & token_mask[:, :, None]


ALL = np.ones((B, L), bool)
PADDED = np.array([[1] * 8, [1] * 5 + [0] * 3, [0, 0] + [1] * 4 + [0, 1]], bool)
# Packed segments: row 0 holds chains [0, 3) [3, 8); row 1 [0, 2) [2, 5) + padding;
# row 2 one chain of 6 + padding (padding slots: attend_end = s + 1).
SEGMENTS = np.array([[3, 3, 3, 8, 8, 8, 8, 8], [2, 2, 5, 5, 5, 6, 7, 8],
                     [6, 6, 6, 6, 6, 6, 7, 8]], np.int32)
SEGMENT_TOKENS = np.array([[1] * 8, [1] * 5 + [0] * 3, [1] * 6 + [0] * 2], bool)
# Trees laid out depth-first: row 0 is 0-1-2 then two branches 3-4 and 5-6-7; row 1 a
# root with three one-token children and a grandchild; row 2 two trees of 4 and 3 nodes.
TREES = np.array([[8, 8, 8, 5, 5, 8, 8, 8], [8, 2, 3, 5, 5, 8, 7, 8],
                  [4, 4, 3, 4, 7, 7, 7, 8]], np.int32)
TREE_TOKENS = np.array([[1] * 8, [1] * 6 + [0] * 2, [1] * 7 + [0]], bool)
MASKS = {"causal": mask_from(ALL), "padded": mask_from(PADDED),
         "segments": mask_from(SEGMENT_TOKENS, SEGMENTS), "tree": mask_from(TREE_TOKENS, TREES)}


def qkv(seed=0, dtype=jnp.float32):
    rng = np.random.default_rng(seed)
    q = jnp.asarray(rng.normal(size=(B, L, KV, G, D)), dtype)
    k = jnp.asarray(rng.normal(size=(B, KV, L, D)), dtype)
    v = jnp.asarray(rng.normal(size=(B, KV, L, D)), dtype)
    return q, k, v


@pytest.mark.parametrize("name", sorted(MASKS))
def test_fused_equals_reference_values_and_gradients(name):
    mask = jnp.asarray(MASKS[name])
    q, k, v = qkv()
    got = fused_attention(q, k, v, mask, "xla")
    want = grouped_attention(q, [(k, v, mask)])
    np.testing.assert_allclose(got, want, atol=1e-6, rtol=0)
    # Rows with no visible key (padding) are exactly 0 in both.
    empty = ~np.asarray(mask).any(-1)
    assert np.all(np.asarray(got)[empty] == 0)
    weights = jnp.asarray(np.random.default_rng(1).normal(size=got.shape), jnp.float32)

    def loss(fn, *args):
        return jnp.sum(weights * fn(*args))

    got_g = jax.grad(lambda *a: loss(lambda q, k, v: fused_attention(q, k, v, mask, "xla"), *a),
                     argnums=(0, 1, 2))(q, k, v)
    want_g = jax.grad(lambda *a: loss(lambda q, k, v: grouped_attention(q, [(k, v, mask)]), *a),
                      argnums=(0, 1, 2))(q, k, v)
    for g, w in zip(got_g, want_g):
        assert bool(jnp.isfinite(g).all())
        np.testing.assert_allclose(g, w, atol=1e-5, rtol=0)


def test_masks_are_what_they_claim():
    """The fixtures mean what their comments say (a wrong mask would make the test
    above compare two paths on an easy case)."""
    tree = MASKS["tree"][0]
    assert tree[4].nonzero()[0].tolist() == [0, 1, 2, 3, 4]  # branch 3-4 under 0-1-2
    assert tree[6].nonzero()[0].tolist() == [0, 1, 2, 5, 6]  # branch 5-6-7 skips 3-4
    assert MASKS["tree"][1][4].nonzero()[0].tolist() == [0, 3, 4]
    assert MASKS["segments"][0][5].nonzero()[0].tolist() == [3, 4, 5]
    assert not MASKS["padded"][2][0].any() and MASKS["padded"][2][7].sum() == 5


CONFIG = ModelConfig(vocab_size=97, hidden_size=32, intermediate_size=64, num_layers=2,
                     num_heads=4, num_kv_heads=2, head_dim=16, family="qwen2",
                     attention_bias=True, initializer_range=0.3)


@pytest.mark.parametrize("case", ["padded", "segments", "tree"])
def test_model_forward_and_gradient_match_reference(case):
    """The whole cache-free forward with attention 'xla' vs 'reference' (same weights):
    logits and parameter gradients."""
    graph, params = nnx.split(Transformer(CONFIG.replace(attention="xla"), rngs=nnx.Rngs(0)))
    ref_graph = nnx.graphdef(nnx.eval_shape(
        lambda: Transformer(CONFIG.replace(attention="reference"), rngs=nnx.Rngs(0))))
    tokens = jnp.asarray(np.random.default_rng(2).integers(0, 97, (B, L)), jnp.int32)
    token_mask = {"padded": PADDED, "segments": SEGMENT_TOKENS, "tree": TREE_TOKENS}[case]
    attend_end = {"padded": None, "segments": SEGMENTS, "tree": TREES}[case]
    kwargs = dict(token_mask=jnp.asarray(token_mask))
    if attend_end is not None:
        kwargs["attend_end"] = jnp.asarray(attend_end)
        kwargs["positions"] = jnp.asarray(np.tile(np.arange(L), (B, 1)), jnp.int32)

    def loss(g, p):
        logits = nnx.merge(g, p)(tokens, **kwargs)
        return jnp.sum(jnp.where(jnp.asarray(token_mask)[..., None], logits, 0.0) ** 2), logits

    (_, got), got_g = jax.value_and_grad(lambda p: loss(graph, p), has_aux=True)(params)
    (_, want), want_g = jax.value_and_grad(lambda p: loss(ref_graph, p), has_aux=True)(params)
    keep = np.asarray(token_mask)
    np.testing.assert_allclose(np.asarray(got)[keep], np.asarray(want)[keep], atol=1e-5, rtol=0)
    for g, w in zip(jax.tree.leaves(got_g), jax.tree.leaves(want_g)):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4 * float(jnp.abs(w).max()))


def test_bf16_fused_matches_reference():
    """In bf16 both paths take float32 scores and softmax and round the probabilities
    to bf16 before the value product: they agree to a bf16 rounding of the output."""
    mask = jnp.asarray(MASKS["tree"])
    q, k, v = qkv(3, jnp.bfloat16)
    got = fused_attention(q, k, v, mask, "xla")
    want = grouped_attention(q, [(k, v, mask)])
    assert got.dtype == jnp.bfloat16
    np.testing.assert_allclose(np.asarray(got, np.float32), np.asarray(want, np.float32),
                               atol=2 ** -6, rtol=0)


def test_implementation_choice():
    assert resolve_implementation("auto", jnp.float32, 64, "cpu") == "chunked"
    assert resolve_implementation("auto", jnp.bfloat16, 64, "tpu") == "chunked"
    assert resolve_implementation("auto", jnp.bfloat16, 64, "gpu") == "cudnn"
    assert resolve_implementation("auto", jnp.float32, 64, "gpu") == "chunked"  # cuDNN: 16-bit
    assert resolve_implementation("auto", jnp.bfloat16, 256, "gpu") == "chunked"
    assert resolve_implementation("auto", jnp.bfloat16, 12, "gpu") == "chunked"
    assert resolve_implementation("reference", jnp.bfloat16, 64, "gpu") == "reference"
    assert resolve_implementation("auto", jnp.float32, 64) == "chunked"  # this CPU machine
    with pytest.raises(ValueError, match="needs a GPU"):
        resolve_implementation("cudnn", jnp.bfloat16, 64, "cpu")
    with pytest.raises(ValueError, match="attention must be one of"):
        ModelConfig(vocab_size=8, hidden_size=8, intermediate_size=8, num_layers=1,
                    num_heads=2, num_kv_heads=1, attention="flash")
    assert CONFIG.attention == "auto"
