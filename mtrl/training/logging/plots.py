"""The learning-curve picture drawn at the end of a run.

Panels, top to bottom, all against the training step:
  1. held-out episodic success, overall (Succ@T) and by turn (success by turn t =
     fraction of held-out episodes solved at or before turn t), best step starred;
  2. the feedback gain (training/evaluate/feedback_gain.py: after a failed turn,
     the next turn's success with the environment's observation minus with "Try
     again." in its place), with the success of each and the count of failed turns
     at the last evaluation (left out when the run measured none);
  3. mean episodic reward of the training rollouts;
  4. KL to the reference policy (left out when the run logged none).
The best step (highest held-out success; ties go to the later step, as in
`CheckpointKeeper`) is a dashed vertical line across every panel.

Readable at 1 step and at 200: every series has markers (a one-step run's single
point drew nothing as a bare line), the step axis has integer ticks only (a one-step
run showed 0.0, 0.2, ..., 1.0) and a margin, each panel has a
title and a y label, and the legend sits outside the axes, right of the data (inside
it covered the last steps).

Drawn on a bare `matplotlib.figure.Figure` with the Agg canvas, so it needs no
display and never switches the caller's pyplot backend.
"""

from __future__ import annotations

import os
import pathlib
import re

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from mtrl.training.logging.metrics import (HELDOUT_FEEDBACK_GAIN, HELDOUT_SUCCESS, KL,
                                           REWARD_MEAN, read_metrics)

_TURN_KEY = re.compile(r"_turn(\d+)$")


def _series(records: list[dict], key: str) -> tuple[list[int], list[float]]:
    """(steps, values) of `key`, skipping steps without it or with null; a step
    logged twice keeps its last value."""
    by_step: dict[int, float] = {}
    for record in records:
        value = record.get(key)
        if value is not None:
            by_step[int(record["step"])] = float(value)
    steps = sorted(by_step)
    return steps, [by_step[s] for s in steps]


def best_step_of(records: list[dict], key: str = HELDOUT_SUCCESS) -> int | None:
    """The step with the highest `key` (ties: the later step); None if never logged."""
    steps, values = _series(records, key)
    if not steps:
        return None
    return max(zip(values, steps))[1]


def plot_learning_curve(metrics_path: str | os.PathLike, out_png: str | os.PathLike, *,
                        success_key: str = HELDOUT_SUCCESS, reward_key: str = REWARD_MEAN,
                        kl_key: str = KL, best_step: int | None = None,
                        title: str | None = None,
                        gain_key: str = HELDOUT_FEEDBACK_GAIN) -> pathlib.Path:
    """Draws the learning curve of a metrics.jsonl (or of a workdir) into `out_png`.

    Per-turn success is every key `<success_key>_turn<t>`. `best_step` overrides
    the step marked as best (e.g. the one `CheckpointKeeper` kept). Returns the PNG.
    """
    figure = learning_curve_figure(read_metrics(metrics_path), success_key=success_key,
                                   reward_key=reward_key, kl_key=kl_key,
                                   best_step=best_step, title=title, gain_key=gain_key)
    out_png = pathlib.Path(out_png)
    out_png.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out_png)
    return out_png


def learning_curve_figure(records: list[dict], *, success_key: str = HELDOUT_SUCCESS,
                          reward_key: str = REWARD_MEAN, kl_key: str = KL,
                          best_step: int | None = None, title: str | None = None,
                          gain_key: str = HELDOUT_FEEDBACK_GAIN) -> Figure:
    """The learning curve of metrics records as a Figure (plot_learning_curve's)."""
    turn_keys = sorted({key for record in records for key in record
                        if key.startswith(success_key) and _TURN_KEY.search(key)},
                       key=lambda key: int(_TURN_KEY.search(key).group(1)))
    has_kl = bool(_series(records, kl_key)[0])
    has_gain = bool(_series(records, f"{gain_key}_tasks")[0])
    if best_step is None:
        best_step = best_step_of(records, success_key)

    panels = 2 + has_gain + has_kl
    figure = Figure(figsize=(8.0, 2.6 * panels + 0.6), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots(panels, 1, sharex=True, squeeze=False)[:, 0]

    success_axis = axes[0]
    steps, values = _series(records, success_key)
    if steps:
        success_axis.plot(steps, values, marker="o", markersize=3, linewidth=2,
                          color="black", label="overall")
    for key in turn_keys:
        turn_steps, turn_values = _series(records, key)
        turn = _TURN_KEY.search(key).group(1)
        success_axis.plot(turn_steps, turn_values, marker=".", linewidth=1.2,
                          alpha=0.85, label=f"by turn {turn}")
    if best_step is not None and best_step in steps:
        best_value = values[steps.index(best_step)]
        success_axis.plot([best_step], [best_value], marker="*", markersize=14,
                          color="crimson", linestyle="none",
                          label=f"best {best_value:.3f} @ {best_step}")
    if not steps and not turn_keys:
        success_axis.text(0.5, 0.5, "no held-out evaluation logged", ha="center",
                          va="center", transform=success_axis.transAxes)
    success_axis.set_ylabel("held-out success")
    success_axis.set_title("validation success (greedy), overall and by turn",
                           fontsize="medium", loc="left")
    success_axis.set_ylim(-0.02, 1.02)
    if success_axis.get_legend_handles_labels()[0]:
        success_axis.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small",
                            borderaxespad=0.0)

    rest = iter(axes[1:])
    if has_gain:
        _gain_panel(next(rest), records, gain_key)
    _line_panel(next(rest), records, reward_key, "mean reward", "tab:blue",
                "mean episode reward of the training rollouts")
    if has_kl:
        _line_panel(next(rest), records, kl_key, "KL to reference", "tab:purple",
                    "KL to the reference policy")

    logged = sorted({int(r["step"]) for r in records})
    for axis in axes:
        axis.grid(alpha=0.3)
        axis.xaxis.set_major_locator(MaxNLocator(integer=True))
        if best_step is not None:
            axis.axvline(best_step, color="crimson", linestyle="--", linewidth=1, alpha=0.7)
    if logged:  # a margin: a one-step run's points are not on the frame
        margin = max(0.5, 0.02 * (logged[-1] - logged[0]))
        axes[-1].set_xlim(logged[0] - margin, logged[-1] + margin)
    axes[-1].set_xlabel("training step")
    figure.suptitle(title or "Learning curve")
    return figure


def _gain_panel(axis, records: list[dict], key: str) -> None:
    """The feedback gain and the two successes it is the difference of."""
    steps, values = _series(records, key)
    if steps:
        axis.plot(steps, values, color="tab:green", linewidth=2, marker="o", markersize=4,
                  label="gain")
    for suffix, label, style in (("observed", "with the observation", "--"),
                                 ("retry", 'with "Try again."', ":")):
        arm_steps, arm_values = _series(records, f"{key}_{suffix}")
        if arm_steps:
            axis.plot(arm_steps, arm_values, color="tab:green", linestyle=style,
                      linewidth=1, alpha=0.8, label=label)
    axis.axhline(0.0, color="gray", linewidth=0.8)
    counts = _series(records, f"{key}_tasks")
    if not steps:
        axis.text(0.5, 0.5, "no failed turn to measure", ha="center", va="center",
                  transform=axis.transAxes)
    axis.set_ylim(-1.02, 1.02)
    axis.set_ylabel("feedback gain")
    axis.set_title(f"feedback gain: next-turn success, observation minus \"Try again.\" "
                   f"(n = {int(counts[1][-1])} at step {counts[0][-1]})", fontsize="medium",
                   loc="left")
    if axis.get_legend_handles_labels()[0]:
        axis.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small",
                    borderaxespad=0.0)


def _line_panel(axis, records: list[dict], key: str, label: str, color: str,
                title: str) -> None:
    steps, values = _series(records, key)
    if steps:
        axis.plot(steps, values, color=color, linewidth=1.2, marker="o", markersize=4)
    else:
        axis.text(0.5, 0.5, f"no {key} logged", ha="center", va="center",
                  transform=axis.transAxes)
    axis.set_ylabel(label)
    axis.set_title(title, fontsize="medium", loc="left")
