"""bench/sft_memory.py on the tiny default config: the warm start's updates run, each
is timed, and the record carries the model's logits_chunk and the machine stamp (no
timing asserted)."""

import json

from bench import sft_memory
from mtrl.evidence.stamp import STAMP_KEYS


def test_config_with_sets_the_head_chunk_and_the_warm_start():
    c = sft_memory.config_with("experiments/configs/default.py", 0,
                               ["lora.rank=4", "sft.batch_size=2"], steps=3)
    assert c.model.overrides["logits_chunk"] == 0
    assert c.model.overrides["num_layers"] == 2  # the config's own overrides are kept
    assert (c.lora.rank, c.sft.batch_size, c.sft.steps, c.train.steps) == (4, 2, 3, 0)
    assert c.sft.enabled and c.sft.first_phase_steps == 0


def test_sft_memory_records_each_update(tmp_path):
    out = tmp_path / "steps.json"
    sft_memory.main(["--config", "experiments/configs/default.py", "--steps", "2",
                     "--logits-chunk", "5", "--set", "sft.batch_size=2",
                     "--set", "sft.max_len=48", "--out", str(out)])
    record = json.loads(out.read_text())
    assert record["logits_chunk"] == 5 and record["steps"] == 2
    assert len(record["step_seconds"]) == len(record["losses"]) == 2
    assert record["process_peak_rss_gb"] > 0
    assert set(STAMP_KEYS) | {"load_after", "format"} <= set(record["stamp"])
