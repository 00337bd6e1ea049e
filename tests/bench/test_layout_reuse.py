"""bench/layout_reuse.py: the layout rule it replays, checked by hand, and the
benchmark's JSON (a short run)."""

import json
import subprocess
import sys

from bench.layout_reuse import replay
from bench.workers import ROOT

# (rows, bins needed, budget, agents) of three minibatches.
SHAPES = [(8, 5, 128, 1), (8, 3, 128, 1), (4, 4, 128, 1)]


def test_replay_by_hand():
    exact = replay(SHAPES, "none", 1.0)  # three layouts, no padding
    assert (exact["compiles"], exact["slots"], exact["padding_slot_share"]) == (3, 12 * 128, 0)
    # pow2: 8 bins, then 4; the third (4 rows, 4 bins) runs in (8 rows, 4 bins) for free.
    pow2 = replay(SHAPES, "pow2", 1.0)
    assert pow2["layouts"] == [(8, 4, 128), (8, 8, 128)] and pow2["compile_steps"] == [0, 1]
    assert (pow2["compiles"], pow2["slots"], pow2["padding_slot_share"]) == (2, 16 * 128, 0.25)
    # growth 2: 3 and 4 bins both run in the 5-bin layout (5 <= 2·3).
    grown = replay(SHAPES, "none", 2.0)
    assert (grown["compiles"], grown["slots"]) == (1, 15 * 128)
    assert grown["attention_pairs"] == 15 * 128 ** 2


def test_the_script_writes_every_arm(tmp_path):
    out = tmp_path / "layout.json"
    subprocess.run([sys.executable, "-m", "bench.layout_reuse", "--out", str(out),
                    "--steps", "3", "--buckets", "none,pow2", "--growths", "1.0,2.0"],
                   cwd=ROOT, check=True, capture_output=True)
    result = json.loads(out.read_text())
    for mode in ("rows", "tree"):
        arms = result["modes"][mode]["arms"]
        assert [(a["buckets"], a["growth"]) for a in arms] == [
            ("none", 1.0), ("none", 2.0), ("pow2", 1.0), ("pow2", 2.0)]
        assert arms[0]["extra_slots"] == 0 and arms[0]["cpu"]["net_s_saved"] == 0
        for arm in arms:
            saved = arm["cpu"]["compile_s_saved"]
            assert saved == 35.0 * (arms[0]["compiles"] - arm["compiles"])
            assert arm["gpu"]["compile_s_saved"] == saved * 10 / 35
