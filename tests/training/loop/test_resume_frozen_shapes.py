"""Exact resume across the compile freeze: a run stopped after RL step 2 (inside the
warm-up), resumed, stopped again after step 4 (past it) and resumed to its end logs the
same metrics at every step, and ends with the same parameters, as the run that was never
stopped.

What makes it a test: after COMPILE_WARMUP_STEPS the sampler and the packed update pad
each call into a shape compiled before (step_metrics.py), so how a step pads depends on
which shapes the run has met. A resumed invocation that forgot them (or froze at its own
third step instead of the run's) pads differently: the packed update then logs other
`packing/bins` and `packing/slots`, and its floats differ by rounding. The run is the
compile-count test's (test_compile_count.py: prompts of several lengths, rewards,
informative rows and packed bins that change from step to step), shortened.

The stops are the trainer's own (a stop request as SIGTERM leaves it, honoured at the
safe point after a step's checkpoint), in this process, so the runs share XLA's caches.
"""

from __future__ import annotations

import signal

import jax
import numpy as np

from mtrl.training.checkpoints.checkpointing import CheckpointKeeper
from mtrl.training.loop.step_metrics import COMPILE_WARMUP_STEPS
from mtrl.training.loop.trainer import Trainer
from mtrl.training.run import interrupts
from tests.training.loop.test_compile_count import varied_config
from tests.training.loop.test_resume import records

STEPS = 7
STOPS = (2, 4)  # one inside the warm-up, one past it


def resume_config():
    c = varied_config()
    c.train.steps = STEPS
    c.train.eval_interval = STEPS
    c.train.save_interval = 1
    c.data.num_test = 2
    return c


def train(workdir, monkeypatch, stop_after: int | None = None) -> None:
    """The trainer on resume_config() in `workdir` (resuming what is there), to its
    end, or stopped at the safe point after RL step `stop_after` (its checkpoint saved)
    as a SIGTERM would stop it."""
    save = CheckpointKeeper.save

    def save_then_stop(self, at, *args, **kwargs):
        saved = save(self, at, *args, **kwargs)
        if int(at) == stop_after and self.directory.name == "checkpoints":
            interrupts._STOP.signum = signal.SIGTERM
        return saved

    monkeypatch.setattr(CheckpointKeeper, "save", save_then_stop)
    trainer = Trainer(resume_config(), workdir, show_progress=False)
    try:
        if stop_after is None:
            trainer.run()
        else:
            try:
                trainer.run()
            except interrupts.Interrupted as e:
                assert e.where == f"RL step {stop_after}", e.where
            else:
                raise AssertionError(f"the run did not stop after step {stop_after}")
    finally:
        interrupts._STOP.signum = None
        trainer.close()
        monkeypatch.setattr(CheckpointKeeper, "save", save)


def final_parameters(workdir):
    keeper = CheckpointKeeper(workdir / "checkpoints")
    try:
        return keeper.restore(STEPS).state
    finally:
        keeper.close()


def test_a_run_stopped_inside_and_after_the_warm_up_resumes_exactly(tmp_path, monkeypatch):
    assert STOPS[0] < COMPILE_WARMUP_STEPS < STOPS[1] < STEPS
    whole, stopped = tmp_path / "whole", tmp_path / "stopped"
    train(whole, monkeypatch)
    for stop in STOPS:
        train(stopped, monkeypatch, stop_after=stop)
    train(stopped, monkeypatch)

    expected, got = records(whole), records(stopped)
    assert sorted(got) == sorted(expected) == list(range(STEPS + 1))
    # The packed update ran and padded (else the test proves nothing).
    assert any(expected[s].get("packing/packed_tokens", 0) > 0 for s in range(1, STEPS + 1))
    for step in sorted(expected):
        assert got[step] == expected[step], f"step {step} differs after resume"
    want, have = final_parameters(whole), final_parameters(stopped)
    assert jax.tree.structure(have) == jax.tree.structure(want)
    for a, b in zip(jax.tree.leaves(have), jax.tree.leaves(want)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
