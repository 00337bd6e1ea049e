import numpy as np
import pytest

from tests.credit.jitted import jitted
from mtrl.credit import apply_kl_penalty


def test_comlrl_reference():
    out = jitted(apply_kl_penalty, np.array([1.0, 2.0], np.float32),
                 np.array([0.2, 0.4], np.float32), coef=0.5)
    np.testing.assert_allclose(out, [0.9, 1.8], rtol=1e-6)


def test_checks():
    with pytest.raises(ValueError, match="kl shape"):
        apply_kl_penalty(np.zeros(2), np.zeros(3), 0.5)
    with pytest.raises(ValueError, match="coef"):
        apply_kl_penalty(np.zeros(2), np.zeros(2), -0.1)
