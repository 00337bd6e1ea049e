"""A claim to reproduce: a registered experiment with its prediction stated first.

A claim file (experiments/claims/<name>.py) defines `CLAIM = Claim(...)`: the source
paper, the prediction (direction and rough size, written and committed before any
run), two arms (config overrides) at an equal budget of generated samples, the metric
and the number of RL steps. tools/reproduce.py runs both arms on every seed from a
shared warm start (mtrl/evidence/arm_runs.py), takes d_i = treatment_i − baseline_i,
its mean and 95% t interval over seeds (mtrl/evidence/paired_ci.py), and the verdict
by paired_ci.verdict from the interval, the predicted direction and `min_effect`.

A comparison can only speak when training did something: the verdict is
`uninformative` (whatever the interval says) when no arm moved from its warm start
(on every seed, validation never rose above step 0's; `moved`), when the paired
differences have zero spread over >= 2 seeds (identical outcomes: nothing varied), or
when the claim's positive control, an arm known to learn on the suite, shows no test
gain over its warm start (the instrument could not have seen an effect). The record
carries each arm's gain over its warm start with its interval, so the control is there
to read. One arm staying at its warm start while the other learns is itself a
difference between the methods (the same warm start, the same budget): the verdict
stands, and the record and its table row name the arm (`did_not_move`). Seeds live in the claim file (`seeds`); the record names the code it ran
(one commit for every run, `provenance`).

An arm may measure the claim's metric its own way (`Arm.metric`): UFO's comparison scores
the multi-turn arm by sequential success within k attempts (test_success with
train.eval_turns = k) and the single-turn arm by Pass@k, k parallel samples
(test_pass@k with train.eval_samples = k), at equal samples per task. The difference is
then treatment's measure − baseline's; guards and reported metrics stay one metric for
both arms.

A claim whose effect is "less X at equal Y" (termination: fewer generated samples at
equal test success) names Y as its `guard`: the guard's interval must show
non-inferiority (paired_ci.non_inferior with `margin`), else a reproduced primary
becomes inconclusive ("unclear") or not_reproduced ("fails").
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import re

from mtrl.config.fields import check_choice
from mtrl.training.config import module_from_file
from mtrl.training.config.overrides import config_with_overrides
from mtrl.evidence.arm_runs import suite_config
from mtrl.evidence.paired_ci import non_inferior, paired_differences, t_interval, verdict

CLAIMS_DIR = pathlib.Path(__file__).resolve().parents[2] / "experiments" / "claims"
# Metrics a claim may name: run-record keys (arm_runs.run_arm). test_* are measured on
# the test split; the per-step numbers are training-side quantities.
# test_tool_call_turn1: the tool environment's share of first turns that call the tool
# (evaluation's per-component turn-1 mean, greedy, on the test split).
METRICS = ("test_success", "test_success_turn1", "test_success_turn2",
           "test_final_turn_success", "ood_test_success", "generated_samples_per_step",
           "generated_tokens_per_step", "test_tool_call_turn1")
# An arm's own measure (Arm.metric) may also be a sampled one (train.eval_samples = k):
# test_sampled_success, or test_pass@k (any of k sampled episodes solved the task).
ARM_METRICS = METRICS + ("test_sampled_success",)
PASS_AT_K = re.compile(r"test_pass@[1-9][0-9]*")


def measured_on(metric: str) -> str:
    """Where a metric is measured: the record's `split` is the evaluation split (always
    "test", and the guard's), `metric_on` says whether the metric itself is."""
    return "test split" if metric.startswith(("test_", "ood_test_")) else "training rollouts"


@dataclasses.dataclass(frozen=True)
class Arm:
    name: str
    overrides: tuple[str, ...] = ()  # "section.field=value", as --config.* takes them
    metric: str = ""  # this arm's measure of the claim's metric ("": the claim's own)

    def __post_init__(self):
        if self.metric and not PASS_AT_K.fullmatch(self.metric):
            check_choice("Arm.metric", self.metric, ARM_METRICS)


@dataclasses.dataclass(frozen=True)
class Guard:
    metric: str  # e.g. "test_success": held equal while the primary metric moves
    margin: float  # non-inferiority margin, in the metric's units


@dataclasses.dataclass(frozen=True)
class Claim:
    """name: the file's stem. title: one line. source: the paper (authors, year, title,
    where). prediction: the predicted direction and rough size, in words, written
    before any run. direction: +1 if the treatment's metric is predicted above the
    baseline's, −1 below. min_effect: the smallest |effect| (metric units) counted as
    the predicted effect. budget: how the arms' generated samples are made equal.
    suite: an experiments/configs name. steps / eval_interval: RL steps of every arm
    and validation interval. common: overrides of every run (warm starts included).
    reported: further metrics whose paired differences are recorded, not judged.
    by_construction: why the baseline cannot succeed on this suite whatever the method
    does ("": it can). Such a claim is a positive control of the suite (it shows the
    suite and the instrument can see the effect), not a test of the paper; the results
    index labels it so, whatever its verdict."""

    name: str
    title: str
    source: str
    prediction: str
    direction: int
    min_effect: float
    metric: str
    baseline: Arm
    treatment: Arm
    budget: str
    suite: str = "default"
    steps: int = 20
    eval_interval: int = 10
    common: tuple[str, ...] = ()
    guard: Guard | None = None
    reported: tuple[str, ...] = ()  # more METRICS whose paired intervals the record
    # carries beside the verdict's (e.g. the tool-call rate): reported, never judged
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)  # what reproduce.py runs by default
    positive_control: str = ""  # an arm's name known to learn here ("": none named)
    by_construction: str = ""

    def __post_init__(self):
        if not re.fullmatch(r"[a-z0-9_]+", self.name):
            raise ValueError(f"Claim.name must be lower_snake_case, got {self.name!r}")
        for field in ("title", "source", "prediction", "budget"):
            if not getattr(self, field).strip():
                raise ValueError(f"Claim.{field} must be stated")
        if self.direction not in (1, -1):
            raise ValueError(f"Claim.direction must be +1 or -1, got {self.direction!r}")
        if self.min_effect < 0:
            raise ValueError(f"Claim.min_effect must be >= 0, got {self.min_effect}")
        for metric in (self.metric, *((self.guard.metric,) if self.guard else ()),
                       *self.reported):
            check_choice("Claim.metric", metric, METRICS)
        if self.baseline.name == self.treatment.name:
            raise ValueError("Claim: baseline and treatment need different names")
        if len(set(self.seeds)) != len(self.seeds) or len(self.seeds) < 2:
            raise ValueError(f"Claim.seeds must be >= 2 distinct seeds, got {self.seeds}")
        for arm in self.arms:
            _check_sampled_measure(arm, self.common, self.suite)
        if self.positive_control not in ("", self.baseline.name, self.treatment.name):
            raise ValueError(f"Claim.positive_control must name an arm, got "
                             f"{self.positive_control!r}")

    @property
    def arms(self) -> tuple[Arm, Arm]:
        return self.baseline, self.treatment

    def measure(self, arm: Arm) -> str:
        """The run-record key that holds `arm`'s value of the claim's metric."""
        return arm.metric or self.metric


def _check_sampled_measure(arm: Arm, common: tuple[str, ...], suite: str) -> None:
    """A sampled measure exists only when the arm's runs sample at evaluation:
    test_pass@k needs train.eval_samples=k, test_sampled_success any k >= 1 (refused
    when the claim is built, not when its records come back empty). The arm's config is
    resolved as its runs will be: the suite's file with the common, then the arm's,
    overrides applied by the config layer."""
    if not (PASS_AT_K.fullmatch(arm.metric) or arm.metric == "test_sampled_success"):
        return
    try:
        config = config_with_overrides(suite_config(suite), (*common, *arm.overrides))
    except ValueError as error:
        raise ValueError(f"Arm {arm.name!r}: {error}") from None
    samples = config.train.eval_samples
    wanted = int(arm.metric.split("@")[1]) if "@" in arm.metric else None
    if (wanted is not None and samples != wanted) or (wanted is None and samples < 1):
        raise ValueError(f"Arm {arm.name!r}: metric {arm.metric} needs "
                         f"train.eval_samples={wanted or 'k >= 1'} in its overrides, got "
                         f"{samples}")


def load_claim(name: str, directory: pathlib.Path = CLAIMS_DIR) -> Claim:
    """experiments/claims/<name>.py's CLAIM (one-line error naming --claim)."""
    path = directory / f"{name}.py"
    if not path.exists():
        known = sorted(p.stem for p in directory.glob("*.py") if not p.stem.startswith("_"))
        raise SystemExit(f"--claim: unknown {name!r}; registered: {', '.join(known)}")
    claim = module_from_file(path).CLAIM
    if claim.name != name:
        raise SystemExit(f"--claim: {path} defines claim {claim.name!r}, not {name!r}")
    return claim


def _interval(claim: Claim, metric: str | None, runs: list[dict], seeds: list[int]) -> dict:
    """Paired differences treatment − baseline of `metric` (None: each arm's own
    measure of the claim's metric, Claim.measure), their mean and t interval."""
    keys = {arm.name: metric or claim.measure(arm) for arm in claim.arms}
    values = {arm: [_value(runs, arm, seed, key) for seed in seeds] for arm, key in keys.items()}
    d = paired_differences(values[claim.baseline.name], values[claim.treatment.name])
    out = {"metric": metric or claim.metric, "per_seed": d, "n": len(d)}
    if len(d) >= 2:
        mean, ci = t_interval(d)
        out.update(mean=mean, ci95=[ci[0], ci[1]])
    else:
        out.update(mean=d[0] if d else None, ci95=None)
    return out


def _value(runs: list[dict], arm: str, seed: int, metric: str) -> float | None:
    found = [r.get(metric) for r in runs if r["arm"] == arm and r["seed"] == seed]
    return found[0] if found else None


def moved(run: dict) -> bool:
    """Validation rose above the warm start's: the chosen checkpoint is an RL step whose
    held-out success beats step 0's. A chosen step alone is not enough: ties pick the
    later step, so a run whose validation never rose would count as moved. A record
    without the step-0 and chosen-step values in its curve falls back to the step."""
    best = run.get("best_step") or 0
    held = {p["step"]: p["heldout_success"] for p in run.get("curve") or ()
            if p.get("heldout_success") is not None}
    if best <= 0:
        return False
    return held[best] > held[0] if 0 in held and best in held else True


def arm_gain(runs: list[dict], arm: str, seeds: list[int]) -> dict:
    """An arm's test gain over its warm start per seed (test_success −
    post_sft_test_success), its mean and t interval, and on how many seeds validation
    rose above the warm start's (`moved_seeds`, `moved`)."""
    mine = {r["seed"]: r for r in runs if r["arm"] == arm and "error" not in r}
    gains = [mine[s]["test_success"] - mine[s]["post_sft_test_success"] for s in seeds
             if s in mine and mine[s].get("test_success") is not None
             and mine[s].get("post_sft_test_success") is not None]
    out = {"per_seed": gains, "moved_seeds": sum(1 for s in seeds if s in mine and
                                                 moved(mine[s]))}
    if len(gains) >= 2:
        mean, ci = t_interval(gains)
        out.update(mean=mean, ci95=[ci[0], ci[1]])
    else:
        out.update(mean=gains[0] if gains else None, ci95=None)
    return out


def unmoved_arms(claim: Claim, gains: dict) -> list[str]:
    """Arms whose validation never rose above their warm start's on any seed."""
    return [arm.name for arm in claim.arms if gains[arm.name]["moved_seeds"] == 0]


def uninformative_because(claim: Claim, difference: dict, gains: dict) -> str | None:
    """Why the comparison cannot speak (module docstring), or None. One arm staying at
    its warm start while the other learns is a measured difference between the methods
    (the record names the arm, `did_not_move`); neither moving is not."""
    if len(unmoved_arms(claim, gains)) == len(claim.arms):
        return "no arm moved from its warm start on any seed"
    d = difference["per_seed"]
    if len(d) >= 2 and max(d) - min(d) < 1e-9:  # equal up to float rounding
        return "the paired differences have zero spread"
    control = gains.get(claim.positive_control)
    if control is not None and (control["ci95"] is None or control["ci95"][0] <= 0):
        return (f"the positive control {claim.positive_control} shows no test gain over "
                "its warm start")
    return None


def claim_record(claim: Claim, seeds: list[int], runs: list[dict], minutes: float,
                 scale: dict, code: dict | None = None) -> dict:
    """The JSON record of a reproduction (the claim, its arms, the difference and the
    verdict, plus `guard`, `scale` and `runs`). The difference is treatment − baseline; verdict by paired_ci.verdict
    (inconclusive with fewer than two paired seeds), then the guard."""
    difference = _interval(claim, None, runs, seeds)
    measures = ("" if claim.measure(claim.baseline) == claim.measure(claim.treatment) else
                f" (each arm's own measure: {claim.treatment.name} "
                f"{claim.measure(claim.treatment)}, {claim.baseline.name} "
                f"{claim.measure(claim.baseline)})")
    rule = (f"t interval over seeds of d = {claim.treatment.name} - {claim.baseline.name}"
            f"{measures}; "
            f"direction {claim.direction:+d}, min_effect {claim.min_effect}: reproduced if "
            "the interval of direction*d lies above 0, not_reproduced if it lies below "
            "min_effect, else inconclusive")
    result = ("inconclusive" if difference["ci95"] is None
              else verdict(tuple(difference["ci95"]), claim.direction, claim.min_effect))
    guard = None
    if claim.guard is not None:
        guard = _interval(claim, claim.guard.metric, runs, seeds)
        guard["margin"] = claim.guard.margin
        guard["status"] = ("unclear" if guard["ci95"] is None
                           else non_inferior(tuple(guard["ci95"]), claim.guard.margin))
        rule += (f"; guard {claim.guard.metric} non-inferior within {claim.guard.margin}: "
                 "'fails' makes it not_reproduced, 'unclear' turns reproduced into "
                 "inconclusive")
        if guard["status"] == "fails":
            result = "not_reproduced"
        elif guard["status"] == "unclear" and result == "reproduced":
            result = "inconclusive"
    gains = {arm.name: arm_gain(runs, arm.name, seeds) for arm in claim.arms}
    why = uninformative_because(claim, difference, gains)
    if why is not None:
        result = "uninformative"
        rule += ("; uninformative, whatever the interval, when no arm's validation rose "
                 "above its warm start's on any seed, the differences have zero spread, or "
                 "the positive control shows no gain")
    codes = {json.dumps((r.get("provenance") or {}).get("code"), sort_keys=True)
             for r in runs if "error" not in r}
    arms = {arm.name: {"overrides": list(arm.overrides), "metric": claim.measure(arm),
                       "values": [_value(runs, arm.name, s, claim.measure(arm))
                                  for s in seeds],
                       "errors": [r["error"] for r in runs
                                  if r["arm"] == arm.name and "error" in r]}
            for arm in claim.arms}
    return {"claim": claim.name, "title": claim.title, "source": claim.source,
            "prediction": claim.prediction, "metric": claim.metric, "split": "test",
            "metric_on": measured_on(claim.metric),
            "seeds": list(seeds), "arms": arms,
            "difference": {"mean": difference["mean"], "ci95": difference["ci95"],
                           "per_seed": difference["per_seed"],
                           "method": "t interval over seeds (paired by seed)"},
            "verdict": result, "verdict_rule": rule, "guard": guard,
            "reported": {m: _interval(claim, m, runs, seeds) for m in claim.reported},
            "budget": claim.budget, "uninformative_because": why,
            "did_not_move": unmoved_arms(claim, gains),
            "gain_over_warm_start": gains, "positive_control": claim.positive_control or None,
            "provenance": {"code": code, "one_code_state": len(codes) == 1,
                           "config_hashes": sorted({(r.get("provenance") or {}).get(
                               "config_hash") or "" for r in runs if "error" not in r})},
            "minutes": minutes, "scale": scale, "runs": runs}
