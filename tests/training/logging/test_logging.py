"""MetricsLogger (JSON lines + TensorBoard read back through the TFRecord framing),
Progress, transcripts and the summary."""

import io
import json
import math
import struct
import subprocess
import sys

import jax.numpy as jnp
import numpy as np
import pytest
from tensorboardX.proto import event_pb2

from mtrl.training.logging import (MetricsLogger, Progress, format_duration, read_metrics,
                                   summary, write_transcripts)

# ---------------------------------------------------------------- TFRecord reader


def _crc32c_table():
    # CRC-32C (Castagnoli), reflected polynomial 0x82F63B78: what TFRecord uses.
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_TABLE = _crc32c_table()


def _crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _masked_crc(data: bytes) -> int:
    crc = _crc32c(data)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def _read_events(path):
    """Every Event in a TFRecord file, checking both CRCs of every record."""
    data = path.read_bytes()
    events, offset = [], 0
    while offset < len(data):
        header = data[offset:offset + 8]
        (length,) = struct.unpack("<Q", header)
        (length_crc,) = struct.unpack("<I", data[offset + 8:offset + 12])
        assert length_crc == _masked_crc(header)
        payload = data[offset + 12:offset + 12 + length]
        (payload_crc,) = struct.unpack("<I", data[offset + 12 + length:offset + 16 + length])
        assert payload_crc == _masked_crc(payload)
        events.append(event_pb2.Event.FromString(payload))
        offset += 16 + length
    return events


def _scalars(events):
    found = {}
    for event in events:
        for value in event.summary.value:
            found[(value.tag, event.step)] = value.simple_value
    return found


def test_crc32c_reference_value():
    # The standard CRC-32C check value for "123456789".
    assert _crc32c(b"123456789") == 0xE3069283


# ------------------------------------------------------------------ MetricsLogger
def test_a_fresh_process_writes_tensorboard_without_importing_torch(tmp_path):
    """summary_writer_class skips tensorboardX's optional torch import (1.3 s a run)
    and the events it writes read back the same."""
    script = (
        "import sys, pathlib\n"
        "from mtrl.training.logging import MetricsLogger\n"
        "with MetricsLogger(pathlib.Path(sys.argv[1])) as logger:\n"
        "    logger.write(3, {'heldout_success': 0.5})\n"
        "print('torch' in sys.modules)\n"
        "import torch\n"  # still importable afterwards
        "print(torch.tensor([2.0]).sum().item())\n")
    out = subprocess.run([sys.executable, "-c", script, str(tmp_path)], check=True,
                         capture_output=True, text=True).stdout.split()
    assert out == ["False", "2.0"]
    (event_file,) = (tmp_path / "tensorboard").glob("events.out.tfevents.*")
    assert _scalars(_read_events(event_file)) == {("heldout_success", 3): 0.5}




def test_metrics_jsonl_and_tensorboard_round_trip(tmp_path):
    with MetricsLogger(tmp_path) as logger:
        logger.write(1, {"heldout_success": 0.25, "reward_mean": jnp.float32(0.5),
                         "kl": float("nan"), "count": 3, "flag": True})
        logger.write(2, {"heldout_success": np.float64(0.75), "inf": float("inf")})
    lines = (tmp_path / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in lines] == [
        {"step": 1, "heldout_success": 0.25, "reward_mean": 0.5, "kl": None,
         "count": 3.0, "flag": 1.0},
        {"step": 2, "heldout_success": 0.75, "inf": None},
    ]
    assert "NaN" not in lines[0] and "Infinity" not in lines[1]
    assert read_metrics(tmp_path) == [json.loads(line) for line in lines]

    (event_file,) = (tmp_path / "tensorboard").glob("events.out.tfevents.*")
    scalars = _scalars(_read_events(event_file))
    assert scalars[("heldout_success", 1)] == pytest.approx(0.25)
    assert scalars[("heldout_success", 2)] == pytest.approx(0.75)
    assert scalars[("reward_mean", 1)] == pytest.approx(0.5)
    assert math.isnan(scalars[("kl", 1)])  # TensorBoard keeps the NaN visible
    assert scalars[("count", 1)] == 3.0


def test_metrics_logger_rejects_bad_values(tmp_path):
    with MetricsLogger(tmp_path, tensorboard=False) as logger:
        with pytest.raises(ValueError, match="numeric scalar"):
            logger.write(1, {"vector": np.ones(3)})
        with pytest.raises(ValueError, match="numeric scalar"):
            logger.write(1, {"text": "high"})
        with pytest.raises(ValueError, match="reserved"):
            logger.write(1, {"step": 1})
        with pytest.raises(ValueError, match="non-negative integer"):
            logger.write(-1, {"a": 1})
    assert (tmp_path / "metrics.jsonl").read_text() == ""
    assert not (tmp_path / "tensorboard").exists()


def test_resume_drops_later_steps_and_purges_tensorboard(tmp_path):
    with MetricsLogger(tmp_path) as logger:
        for step in range(1, 6):
            logger.write(step, {"loss": float(step)})
    # A killed run may leave a torn last line behind.
    with (tmp_path / "metrics.jsonl").open("a") as file:
        file.write('{"step": 6, "lo')
    with MetricsLogger(tmp_path, resume_step=3) as logger:
        logger.write(4, {"loss": 40.0})
    assert [(r["step"], r["loss"]) for r in read_metrics(tmp_path)] == [
        (1, 1.0), (2, 2.0), (3, 3.0), (4, 40.0)]
    first, second = sorted((tmp_path / "tensorboard").glob("events.out.tfevents.*"))
    assert _scalars(_read_events(first)) == {("loss", s): float(s) for s in range(1, 6)}
    resumed = _read_events(second)
    starts = [e.step for e in resumed if e.HasField("session_log")
              and e.session_log.status == event_pb2.SessionLog.START]
    assert starts == [4]  # TensorBoard drops the old run's events from step 4 on
    assert _scalars(resumed) == {("loss", 4): 40.0}


# ----------------------------------------------------------------------- Progress


class _FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_progress_prints_compact_lines_at_intervals_without_tty():
    stream, clock = io.StringIO(), _FakeClock()
    progress = Progress(10, initial=2, stream=stream, line_interval_s=30.0, clock=clock)
    for step in range(3, 11):
        clock.now += 10.0  # 10 s per step
        success = 0.5 if step == 4 else None
        progress.update(step, step_time_s=9.5, heldout_success=success)
    progress.close()
    lines = stream.getvalue().splitlines()
    # First update, then every >= 30 s (steps 6 and 9), then the last step.
    assert [line.split()[1] for line in lines] == ["3/10", "6/10", "9/10", "10/10"]
    assert lines[0] == "train 3/10 (30.0%) | 9.5 s/step | eta 1m10s"
    # The held-out success persists after the eval step that reported it.
    assert lines[1] == "train 6/10 (60.0%) | 9.5 s/step | eta 40s | heldout_success 0.500"
    assert lines[3].startswith("train 10/10 (100.0%) | 9.5 s/step | done in 1m20s")
    assert "\r" not in stream.getvalue()


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_bar_on_tty_and_silence_when_disabled():
    terminal = _Terminal()
    with Progress(4, stream=terminal) as progress:
        for step in range(1, 5):
            progress.update(step, step_time_s=0.25, heldout_success=0.125)
    shown = terminal.getvalue()
    assert "4/4" in shown and "success=0.125" in shown and "0.25s/step" in shown
    quiet = _Terminal()
    with Progress(4, stream=quiet, enabled=False) as progress:
        progress.update(4, heldout_success=1.0)
    assert quiet.getvalue() == ""
    with pytest.raises(ValueError, match="forward"):
        Progress(4, initial=2, stream=io.StringIO()).update(1)


def test_format_duration():
    assert format_duration(7.2) == "7s"
    assert format_duration(83) == "1m23s"
    assert format_duration(4000) == "1h06m40s"


# ------------------------------------------------------------ transcripts, summary


def test_write_transcripts(tmp_path):
    episodes = ["turn 1: def f(x): return x\nfeedback: 0/3", "turn 1: ok\n"]
    path = write_transcripts(tmp_path, 120, episodes)
    assert path == tmp_path / "transcripts" / "heldout_step00000120.txt"
    text = path.read_text()
    assert text.startswith("# heldout transcripts at step 120: 2\n")
    assert "======== transcript 1/2 ========\nturn 1: def f(x): return x\nfeedback: 0/3\n" in text
    assert text.endswith("======== transcript 2/2 ========\nturn 1: ok\n")
    assert not list((tmp_path / "transcripts").glob("*.tmp"))
    with pytest.raises(TypeError):
        write_transcripts(tmp_path, 1, "one string")


def test_summary_text():
    text = summary(total_steps=500, best_step=300, best_success=0.625,
                   best_checkpoint="/run/checkpoints/300", wall_s=3725,
                   final_metrics={"heldout_success": 0.6, "kl": float("nan")})
    assert text.splitlines() == [
        "Run finished: 500 steps in 1h02m05s.",
        "Best heldout_success: 0.6250 at step 300.",
        "Best checkpoint: /run/checkpoints/300",
        "Last logged: heldout_success 0.6, kl nan",
    ]
    none = summary(total_steps=3, best_step=None, best_success=None, best_checkpoint=None)
    assert "No held-out evaluation" in none
