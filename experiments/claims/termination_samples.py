"""Termination: fewer generated samples at equal test success, on the embedded
default's values split. Prediction written 2026-11-27 before any run of this claim on
this split; seen before it: only the SFT loss of the default's first seed on this split.

2026-11-28, before any run of this claim: its suite's k range widened to -99..99
(dcf18bd); the prediction is kept as written for the narrow-k split, and what of the new
suite was seen before the runs is in experiments/claims/README.md."""

from mtrl.evidence.claims import Arm, Claim, Guard

CLAIM = Claim(
    name="termination_samples",
    title="early termination of solved nodes saves samples without losing test success",
    source=("Liu et al. 2025, 'LLM Collaboration With Multi-Agent Reinforcement "
            "Learning' (CoMLRL): a node whose joint actions' mean "
            "reward passes a threshold does not expand"),
    prediction=("termination_on generates fewer samples per RL step than termination_off, "
                "about -5% to -20% (old split: 104 vs 120; here turn-1 success is rarer, "
                "so fewer nodes pass the threshold), counted from -6 samples per "
                "step; test success equal within 0.10 (non-inferiority guard)"),
    direction=-1,
    min_effect=6.0,
    metric="generated_samples_per_step",
    baseline=Arm("termination_off", ()),
    treatment=Arm("termination_on", ("rollout.termination_threshold=3.8",)),
    budget=("equal RL steps and tasks per step; the samples are the measured effect "
            "(termination_off: 20 per agent per task per step)"),
    guard=Guard(metric="test_success", margin=0.10),
    steps=20,
    eval_interval=10,
    positive_control="termination_off",
)
