"""bench/gpu.py --small runs every part on CPU and writes the record's keys with
positive, finite numbers; the sampler and transformers generate the same greedy tokens
(same weights), so the throughput ratio compares two runs of one model. No timing is
asserted (docs/design.md section 8)."""

import json
import math
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
BATCHES = ("1", "8", "64")
SHAPES = ("smollm2-135m", "qwen2.5-0.5b")


def positive(value) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


def sampler_config():
    from bench.gpu import model_config
    return model_config("smollm2-135m", small=True)


def test_small_run_writes_the_record(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu")
    result = subprocess.run([sys.executable, "-m", "bench.gpu", "--small", "--out",
                             str(tmp_path)], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=1800)
    assert result.returncode == 0, result.stderr[-3000:]
    assert [p.name for p in tmp_path.iterdir()] == ["cpu.json"]
    record = json.loads((tmp_path / "cpu.json").read_text())
    errors = {k: v["error"] for k, v in {**record, **record["train"]}.items()
              if isinstance(v, dict) and "error" in v}
    assert not errors, errors
    assert record["device"] == "cpu" and record["small"] is True and record["complete"] is True
    assert positive(record["bf16_peak_tflops"]) and positive(record["hbm_gb_s"])
    assert all(positive(record[part]["part_s"]) for part in ("matmul", "hbm", "sampler"))

    sampler = record["sampler"]
    for key in ("mtrl_tok_s", "hf_tok_s", "sampler_vs_hf"):
        assert sorted(sampler[key]) == sorted(BATCHES)
        assert all(positive(sampler[key][b]) for b in BATCHES), sampler[key]
    assert record["sampler_vs_hf_b64"] == sampler["sampler_vs_hf"]["64"]
    assert sampler["greedy_token_agreement"]["64"] >= 0.9, sampler["greedy_token_agreement"]
    # Roofline: batch · bandwidth / (weights + each row's K/V cache), hand-computed here.
    config = sampler_config()
    width = 2 if config.dtype == "bfloat16" else 4
    kv_row = 2 * config.num_layers * config.num_kv_heads * config.head_dim * sampler["cache_len"]
    roof = 64 * record["hbm_gb_s"] * 1e9 / ((config.num_params() + 64 * kv_row) * width)
    assert math.isclose(sampler["decode_roofline_tok_s"]["64"], roof, rel_tol=1e-9)
    assert math.isclose(record["decode_roofline_fraction_b64"],
                        sampler["mtrl_tok_s"]["64"] / roof, rel_tol=1e-9)

    assert sorted(record["train_mfu"]) == sorted(SHAPES)
    for shape in SHAPES:
        train = record["train"][shape]
        assert positive(record["train_mfu"][shape]) and record["train_mfu"][shape] < 1
        assert train["dtype"] == "bfloat16" and train["param_dtype"] == "float32"
        for mode in ("rows", "tree"):
            run = train["modes"][mode]
            assert positive(run["update_s"]) and math.isfinite(run["loss"])
            assert run["compiles"] == 1
        # The tree holds each shared prefix once: fewer tokens than the packed rows.
        assert train["modes"]["tree"]["tokens"] < train["modes"]["rows"]["tokens"]
        assert positive(train["tree_vs_packed_time"])
    assert record["tree_vs_packed_time"] == record["train"][SHAPES[-1]]["tree_vs_packed_time"]

    step = record["rl_step"]
    for key in ("rollout_s", "update_s", "step_s"):
        assert positive(step[key]), step
    assert step["env_s"] >= 0 and 0 < step["rollout_fraction"] < 1
    assert math.isclose(step["step_s"], step["rollout_s"] + step["env_s"] + step["update_s"])
