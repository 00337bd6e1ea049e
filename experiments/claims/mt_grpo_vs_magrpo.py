"""Turn-level credit (MT-GRPO) vs the default's tree credit (MAGRPO), on the embedded
default's values split (test inputs no agent saw in training). Prediction written
2026-11-27 before any run of this claim on this split; seen before it: only the SFT loss
of the default's first seed on this split.

2026-11-28, before any run of this claim: its suite's k range widened to -99..99
(dcf18bd); the prediction is kept as written for the narrow-k split, and what of the new
suite was seen before the runs is in experiments/claims/README.md."""

from mtrl.evidence.claims import Arm, Claim

CLAIM = Claim(
    name="mt_grpo_vs_magrpo",
    title="turn-level credit at least matches tree credit on the two-turn default",
    source=("Zeng et al. 2025, 'Reinforcing Multi-Turn Reasoning in LLM Agents via "
            "Turn-Level Credit Assignment' (MT-GRPO): turn rewards and the outcome "
            "normalised separately within the group beat outcome-only credit"),
    prediction=("mt_grpo at or slightly above magrpo on test success, 0 to +0.10: "
                "both credit the helper's turn-2 use of the feedback, which is where the "
                "default's gain is; mt_grpo adds turn 1's level reward as its own "
                "normalised term, which a turn-1 guess cannot use much; counted as "
                "reproduced from +0.05, and inconclusive at five seeds is the likely "
                "verdict"),
    direction=+1,
    min_effect=0.05,
    metric="test_success",
    baseline=Arm("magrpo", ()),
    treatment=Arm("mt_grpo", ("credit.estimator=mt_grpo",)),
    budget="the same T = 2, G = 4 tree in both arms: 20 samples per agent per task per step",
    steps=20,
    eval_interval=10,
    positive_control="magrpo",
)
