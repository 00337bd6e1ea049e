import numpy as np
import pytest

from tests.credit.jitted import assert_trees_match, jitted, vmapped_and_looped
from mtrl.credit import apply_kl_penalty


def test_comlrl_reference():
    out = jitted(apply_kl_penalty, np.array([1.0, 2.0], np.float32),
                 np.array([0.2, 0.4], np.float32), coef=0.5)
    np.testing.assert_allclose(out, [0.9, 1.8], rtol=1e-6)


def test_vmap_over_batches_matches_loop():
    returns = np.array([[1.0, 2.0], [0.0, -1.0], [3.0, 0.5]], np.float32)
    kl = np.array([[0.2, 0.4], [1.0, 0.0], [0.5, 2.0]], np.float32)
    mapped, looped = vmapped_and_looped(lambda r, k: apply_kl_penalty(r, k, 0.5), returns, kl)
    assert_trees_match(mapped, looped)
    np.testing.assert_allclose(mapped, [[0.9, 1.8], [-0.5, -1.0], [2.75, -0.5]], rtol=1e-6)
    # A per-batch β, vmapped as well (a traced coef skips the host-side sign check).
    coef = np.array([0.5, 2.0, 0.0], np.float32)
    mapped, looped = vmapped_and_looped(apply_kl_penalty, returns, kl, coef)
    assert_trees_match(mapped, looped)
    np.testing.assert_allclose(mapped, [[0.9, 1.8], [-2.0, -1.0], [3.0, 0.5]], rtol=1e-6)


def test_checks():
    with pytest.raises(ValueError, match="kl shape"):
        apply_kl_penalty(np.zeros(2), np.zeros(3), 0.5)
    with pytest.raises(ValueError, match="coef"):
        apply_kl_penalty(np.zeros(2), np.zeros(2), -0.1)
