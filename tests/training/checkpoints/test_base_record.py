"""A LoRA checkpoint's base record: the digest covers every tensor's bytes, names and
shapes, and a restore onto another base is refused in one line."""

import jax.numpy as jnp
import pytest

from mtrl.training.checkpoints.base_record import (EXTRA_KEY, base_digest, base_record,
                                                   check_base, on_checked_base)


def states():
    return [{"a": jnp.arange(6.0).reshape(2, 3), "b": jnp.ones(2, jnp.bfloat16)},
            {"a": jnp.zeros((2, 3)), "b": jnp.ones(2, jnp.bfloat16)}]


def test_digest_changes_with_any_value_shape_dtype_or_order():
    digest = base_digest(states())
    assert digest == base_digest(states()) and len(digest) == 64
    changed = states()
    changed[1]["a"] = changed[1]["a"].at[1, 2].set(1e-30)
    reshaped = states()
    reshaped[0]["a"] = reshaped[0]["a"].reshape(3, 2)
    recast = states()
    recast[0]["b"] = recast[0]["b"].astype(jnp.float16)
    for other in (changed, reshaped, recast, states()[::-1], states()[:1]):
        assert base_digest(other) != digest


def test_check_base_refuses_another_base_in_one_line():
    record = base_record(states(), "hf:/models/a")
    check_base(dict(record), record, "checkpoint x")
    other = base_record(states()[:1], "hf:/models/a")
    with pytest.raises(ValueError, match=r"^checkpoint x holds adapters of the base hf:/models/a "
                       r"\(sha256 [0-9a-f]{12}\), but this run's base hf:/models/a is sha256 ") as e:
        check_base(other, record, "checkpoint x")
    assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match="names no LoRA base"):
        check_base(None, record, "checkpoint x")
    with pytest.raises(ValueError, match="source must name the base"):
        base_record(states(), "")


def test_full_fine_tuning_states_pass_through_unchecked():
    marker = object()
    assert on_checked_base(marker, {}, None, None, "x") is marker
    with pytest.raises(ValueError, match="names no LoRA base"):
        on_checked_base(marker, {}, None, {"source": "s", "sha256": "0" * 64}, "x")
    assert EXTRA_KEY == "lora_base"
