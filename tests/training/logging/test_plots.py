"""The learning-curve PNG: written, non-trivial, with and without KL."""

import json
import math

import numpy as np
from matplotlib.image import imread

from mtrl.training.logging.plots import best_step_of, plot_learning_curve


def _write_run(path, with_kl=True):
    records = []
    for step in range(0, 201, 5):
        record = {"step": step, "reward_mean": math.tanh(step / 80)}
        if with_kl:
            record["kl"] = 0.002 * step if step != 50 else None
        if step % 25 == 0:
            turn1 = 0.2 + 0.3 * step / 200
            turn2 = min(1.0, turn1 + 0.1 + 0.2 * step / 200)
            record.update(heldout_success=turn2, heldout_success_turn1=turn1,
                          heldout_success_turn2=turn2)
        records.append(record)
    records[-1]["heldout_success"] = records[-6]["heldout_success"]  # tie with step 175
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return records


def _ink_fraction(png):
    pixels = imread(png)[..., :3]
    return float(np.mean(np.any(pixels < 0.9, axis=-1)))


def test_learning_curve_png(tmp_path):
    records = _write_run(tmp_path / "metrics.jsonl")
    assert best_step_of(records) == 200  # the later of two tied maxima
    out = plot_learning_curve(tmp_path, tmp_path / "plots" / "curve.png")
    assert out.exists() and out.stat().st_size > 20_000
    image = imread(out)
    assert image.shape[0] > image.shape[1] > 500  # three stacked panels
    assert 0.02 < _ink_fraction(out) < 0.5  # drawn, not blank and not a solid block


def test_learning_curve_without_kl_or_evaluations(tmp_path):
    _write_run(tmp_path / "metrics.jsonl", with_kl=False)
    two_panels = plot_learning_curve(tmp_path / "metrics.jsonl", tmp_path / "a.png",
                                     best_step=100)
    three_panels = plot_learning_curve(tmp_path / "metrics.jsonl", tmp_path / "b.png",
                                       kl_key="reward_mean")
    assert imread(two_panels).shape[0] < imread(three_panels).shape[0]
    (tmp_path / "bare.jsonl").write_text('{"step": 1, "reward_mean": 0.5}\n')
    bare = plot_learning_curve(tmp_path / "bare.jsonl", tmp_path / "bare.png")
    assert bare.stat().st_size > 5_000


def _check_readable(figure, steps):
    """Integer step ticks only, every panel titled and labelled with its data drawn
    (markers: one point shows), the legend right of the data, not over it."""
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    axes = figure.axes
    for axis in axes:
        ticks = [t for t in axis.get_xticks() if axis.get_xlim()[0] <= t <= axis.get_xlim()[1]]
        assert ticks and all(float(t).is_integer() for t in ticks), ticks
        assert axis.get_title(loc="left") and axis.get_ylabel()
        lines = [line for line in axis.get_lines() if len(line.get_xdata()) and
                 line.get_marker() not in ("None", None, "")]
        assert lines, axis.get_title(loc="left")
    low, high = axes[-1].get_xlim()
    assert low < min(steps) and high > max(steps)
    legend = axes[0].get_legend()
    assert legend.get_window_extent(renderer).x0 >= axes[0].get_window_extent(renderer).x1


def test_a_one_step_curve_and_a_200_step_curve_are_readable(tmp_path):
    from mtrl.training.logging.plots import learning_curve_figure
    one_step = [{"step": 0, "heldout_success": 0.0, "heldout_success_turn1": 0.0},
                {"step": 1, "heldout_success": 0.5, "heldout_success_turn1": 0.5,
                 "reward_mean": 0.25}]
    _check_readable(learning_curve_figure(one_step), [0, 1])
    records = _write_run(tmp_path / "metrics.jsonl")
    _check_readable(learning_curve_figure(records), [0, 200])


def test_the_feedback_gain_has_a_panel_of_its_own(tmp_path):
    from mtrl.training.logging.plots import learning_curve_figure
    records = _write_run(tmp_path / "metrics.jsonl")
    without = learning_curve_figure(records)
    for r in records:
        if "heldout_success" in r:
            retry = 0.1
            observed = r["heldout_success"]
            r.update(heldout_feedback_gain=observed - retry, heldout_feedback_gain_retry=retry,
                     heldout_feedback_gain_observed=observed,
                     heldout_feedback_gain_tasks=20.0 - r["step"] // 25)
    figure = learning_curve_figure(records)
    assert len(figure.axes) == len(without.axes) + 1
    gain_axis = figure.axes[1]
    assert "feedback gain" in gain_axis.get_ylabel()
    assert "(n = 12 at step 200)" in gain_axis.get_title(loc="left")
    labels = gain_axis.get_legend_handles_labels()[1]
    assert labels == ["gain", "with the observation", 'with "Try again."']
    _check_readable(figure, [0, 200])
