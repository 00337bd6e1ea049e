"""bench/peak_rss.py: a child that holds ~300 MB in a grandchild is counted in the
tree's peak, the exit status comes back, and bad input fails in one line."""

import json
import sys

from bench import peak_rss

# A parent that starts a grandchild holding 300 MB of touched pages for a second.
HOLDER = ("import subprocess, sys; subprocess.run([sys.executable, '-c', "
          "\"import time; b = bytearray(300 * 2**20); b[::4096] = b'x' * len(b[::4096]); "
          "time.sleep(1.0)\"], check=True)")


def test_grandchild_memory_is_in_the_tree_peak(tmp_path):
    out = tmp_path / "peak.json"
    rc = peak_rss.main(["--out", str(out), "--interval", "0.05", "--",
                        sys.executable, "-c", HOLDER])
    result = json.loads(out.read_text())
    assert rc == 0 and result["rc"] == 0
    # 300 MiB = 0.315 GB held by the grandchild, plus two interpreters.
    assert 0.31 < result["peak_tree_gb"] < 0.6
    assert 0.31 < result["peak_process_gb"] <= result["peak_tree_gb"]
    assert result["polls"] >= 5 and 0 < result["peak_at_s"] < result["wall_s"]


def test_a_failing_command_returns_its_status(tmp_path):
    result = peak_rss.measure([sys.executable, "-c", "raise SystemExit(3)"], interval=0.05)
    assert result["rc"] == 3
    assert peak_rss.main(["--", sys.executable, "-c", "raise SystemExit(3)"]) == 1


def test_no_command_is_one_line_error(capsys):
    assert peak_rss.main(["--"]) == 2
    assert capsys.readouterr().err.strip() == "error: no command to measure: put it after --"
