"""The oneDNN FFI matmul against float32 products of the same bf16-rounded inputs.

Tolerance: both sides multiply the same bf16 values exactly in float32 and differ only
in the order of the float32 sums, so |difference| <= K * 2^-23 * sum |a_ik b_kj|
(a few 1e-6 here); we allow 1e-5 relative to the largest |entry|.
Needs the built kernel (`python -m mtrl.kernels.build`; .ci/run builds it) and a CPU
on which oneDNN has a bf16 matmul (AVX-512 or AMX): without them these are skipped,
with the reason, and ModelConfig.matmul="auto" stays on XLA.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mtrl.kernels import build, onednn_matmul

pytestmark = pytest.mark.skipif(not onednn_matmul.usable(),
                                reason=f"oneDNN kernel: {onednn_matmul.unusable_reason()}")


def bf16_values(shape, seed):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return np.asarray(jnp.asarray(x, jnp.bfloat16).astype(jnp.float32))


@pytest.mark.parametrize("transpose_a", [False, True])
@pytest.mark.parametrize("transpose_b", [False, True])
def test_matmul_equals_float32_product_of_bf16_inputs(transpose_a, transpose_b):
    m, k, n = 37, 53, 29  # no multiple of a tile
    a = bf16_values((k, m) if transpose_a else (m, k), 0)
    b = bf16_values((n, k) if transpose_b else (k, n), 1)
    got = jax.jit(lambda a, b: onednn_matmul.matmul(
        a, b, transpose_a=transpose_a, transpose_b=transpose_b))(a, b)
    want = (a.T if transpose_a else a).astype(np.float64) @ (b.T if transpose_b else b)
    assert got.dtype == jnp.float32 and got.shape == (m, n)
    np.testing.assert_allclose(got, want, atol=1e-5 * np.abs(want).max(), rtol=0)


def test_inputs_are_rounded_to_bf16_and_vmap_maps_slices():
    a = np.full((2, 3, 4), 1 + 2 ** -10, np.float32)  # rounds to 1 in bf16
    b = np.ones((2, 4, 5), np.float32) * np.arange(1, 3, dtype=np.float32)[:, None, None]
    got = jax.vmap(onednn_matmul.matmul)(a, b)
    np.testing.assert_array_equal(got, np.stack([np.full((3, 5), 4.0), np.full((3, 5), 8.0)]))


def test_empty_contraction_gives_zeros():
    got = onednn_matmul.matmul(jnp.ones((3, 0)), jnp.ones((0, 4)))
    np.testing.assert_array_equal(got, np.zeros((3, 4)))


def test_bad_shapes_are_refused_in_one_line():
    with pytest.raises(ValueError, match="contraction sizes differ"):
        onednn_matmul.matmul(jnp.ones((3, 4)), jnp.ones((5, 6)))
    with pytest.raises(ValueError, match="2-D"):
        onednn_matmul.matmul(jnp.ones((2, 3, 4)), jnp.ones((4, 6)))


def test_stale_library_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(build, "LIBRARY", tmp_path / "libx.so")
    onednn_matmul.load.cache_clear()
    try:
        assert "not built" in onednn_matmul.load()
        (tmp_path / "libx.so").write_bytes(b"")
        monkeypatch.setattr(build, "DIGEST", tmp_path / "libx.so.sha256")
        (tmp_path / "libx.so.sha256").write_text("0" * 64)
        onednn_matmul.load.cache_clear()
        assert "another source" in onednn_matmul.load()
    finally:
        monkeypatch.undo()
        onednn_matmul.load.cache_clear()
        assert onednn_matmul.load() is None


def test_kernel_reports_amx_where_the_cpu_has_it():
    from mtrl.kernels import cpu
    info = onednn_matmul.impl_info(64, 64, 64)
    assert ("amx" in info) == cpu.has_amx_bf16(), info
