"""step_metrics: one step's logged numbers from its stages' results, checked by hand."""

from types import SimpleNamespace

import numpy as np
import pytest

from mtrl.training.loop.step_metrics import step_metrics


class NoBand:
    def record(self, step, tree):
        return {}


def tree(env_s=0.5, device_s=2.0):
    turns = [SimpleNamespace(rewards=np.array([1.0, 3.0]), done=np.array([True, False]),
                             completions=[["a", "b"], ["c"]]),
             SimpleNamespace(rewards=np.array([2.0]), done=np.array([True]),
                             completions=[["d"]])]
    return SimpleNamespace(turns=turns, metrics={"rollout/env_seconds": env_s,
                                                 "rollout/device_seconds": device_s})


def update(metrics=({"loss": np.float32(0.25)},)):
    return SimpleNamespace(metrics=list(metrics), kept=6, informative=4, compiles=1,
                           packing={"bins": 2.0})


def test_times_rollout_and_update_numbers():
    m = step_metrics(3, tree(), update(), (10.0, 13.0, 14.5), step_tasks=NoBand(),
                     sampler_compiles=2)
    assert m["loss"] == 0.25 and "skipped_update" not in m
    # rollout time excludes the environment's share: (13 - 10) - 0.5
    assert m["time/rollout_s"] == pytest.approx(2.5)
    assert m["time/env_s"] == 0.5 and m["time/update_s"] == pytest.approx(1.5)
    assert m["step_time_s"] == pytest.approx(4.5)
    # mean over turns of each turn's mean reward: (2 + 2) / 2; turn-1 done share 1/2
    assert m["reward_mean"] == pytest.approx(2.0)
    assert m["train_success_turn1"] == pytest.approx(0.5)
    assert m["rollout/generated_samples"] == 4.0
    assert (m["train_rows"], m["informative_rows"], m["packing/bins"]) == (6.0, 4.0, 2.0)
    assert (m["sampler_compiles"], m["train_step_compiles"]) == (2.0, 1.0)
    assert "off_policy/staleness" not in m


def test_no_update_is_logged_as_skipped():
    m = step_metrics(1, tree(), update(metrics=()), (0.0, 1.0, 1.0), step_tasks=NoBand(),
                     sampler_compiles=0)
    assert m["skipped_update"] == 1.0


def test_off_policy_uses_the_background_rollout_clock():
    m = step_metrics(2, tree(device_s=7.0), update(), (0.0, 0.25, 1.0),
                     step_tasks=NoBand(), sampler_compiles=0, staleness=1)
    assert m["off_policy/staleness"] == 1.0
    assert m["time/rollout_s"] == 7.0 and m["time/rollout_wait_s"] == 0.25
