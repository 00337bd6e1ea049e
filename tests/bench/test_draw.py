"""bench/draw.py and bench/decode_attention.py at small shapes: every arm runs and is
recorded with the machine stamp; the two attention formulations agree (no timing
asserted)."""

import json
import sys

import jax
import jax.numpy as jnp
import numpy as np

from bench import decode_attention as bench_decode_attention
from bench import draw as bench_draw
from mtrl.evidence.stamp import STAMP_KEYS
from mtrl.kernels import library


def test_bench_draw_records_every_arm(tmp_path, monkeypatch):
    out = tmp_path / "draw.json"
    monkeypatch.setattr(sys, "argv", ["draw.py", "--out", str(out), "--vocab", "300",
                                      "--batches", "1,4", "--rounds", "1", "--repeats", "1"])
    bench_draw.main()
    result = json.loads(out.read_text())
    assert set(result["ms"]) == {"1", "4"}
    assert all(set(row) == set(bench_draw.ARMS) and min(row.values()) > 0
               for row in result["ms"].values())
    # The one stamp, not the load keys the benchmark once wrote by hand.
    assert set(STAMP_KEYS) | {"load_after", "format"} <= set(result["stamp"])
    assert "load_before" not in result and "load_after" not in result


def test_the_old_gumbel_draw_and_the_new_one_sample_the_same_distribution():
    logits = jnp.log(jnp.asarray([[0.1, 0.6, 0.0, 0.3]] * 4000, jnp.float32))
    counts = {}
    for name in ("gumbel", "inverse"):
        tokens, log_probs = bench_draw.ARMS[name](jax.random.key(3), logits)
        counts[name] = np.bincount(np.asarray(tokens), minlength=4) / 4000
        np.testing.assert_allclose(np.exp(log_probs), np.asarray([0.1, 0.6, 0.0, 0.3])[tokens],
                                   rtol=1e-5)
    np.testing.assert_allclose(counts["gumbel"], counts["inverse"], atol=0.04)
    assert counts["inverse"][2] == 0


def test_bench_decode_attention_formulations_agree(tmp_path, monkeypatch):
    out = tmp_path / "attn.json"
    monkeypatch.setattr(sys, "argv", ["decode_attention.py", "--out", str(out),
                                      "--shapes", "2x16,3x24/10"])
    monkeypatch.setattr(bench_decode_attention, "best_ms",
                        lambda fn, args, calls=1, rounds=1: 1.0)  # no timing here
    bench_decode_attention.main()
    rows = json.loads(out.read_text())["rows"]
    assert [(r["dtype"], r["written"]) for r in rows] == [
        ("float32", 16), ("float32", 10), ("bfloat16", 16), ("bfloat16", 10)]
    for row in rows:
        tol = 1e-5 if row["dtype"] == "float32" else 2e-2
        assert row["max_abs_diff"] < tol
        if library.available():  # .ci/run builds the library: the kernel arm runs there
            assert row["kernel_max_abs_diff"] < tol
