"""level_feedback vs plain revision prompts, on the embedded default's values split (test
inputs no agent saw in training). Prediction written 2026-11-27 before any run of this
claim on this split (the 2026-11-26 prediction, for the old split, is in the superseded
record); seen before it: only the SFT loss of the default's first seed on this split.

2026-11-28, before any run of this claim: its suite's k range widened to -99..99
(dcf18bd); the prediction is kept as written for the narrow-k split, and what of the new
suite was seen before the runs is in experiments/claims/README.md. Here plain's second
attempt now guesses one of ~160 coefficients, not 38: the predicted direction is
unchanged."""

from mtrl.evidence.claims import Arm, Claim

CLAIM = Claim(
    name="level_feedback_vs_plain",
    title="the sandbox's diagnostics in the revision prompt beat a bare 'revise'",
    source=("Liu et al. 2025, 'LLM Collaboration With Multi-Agent Reinforcement "
            "Learning' (CoMLRL / MAGRPO): level feedback (which tests "
            "fail, with their values) as the next turn's observation"),
    prediction=("level_feedback above plain on test success, by about +0.15 to +0.45: "
                "with plain the failing probe that names the coefficient is never shown, "
                "so a second attempt can only guess one of 38 coefficients; counted as "
                "reproduced in size from +0.10"),
    direction=+1,
    min_effect=0.10,
    metric="test_success",
    baseline=Arm("plain", ("env.feedback_mode=plain",)),
    treatment=Arm("level_feedback", ("env.feedback_mode=level_feedback",)),
    budget="same T = 2, G = 4 tree in both arms: 20 samples per agent per task per step",
    steps=20,
    eval_interval=10,
    positive_control="level_feedback",
    by_construction=("under plain feedback the helper's second turn carries no "
                     "coefficient, so the baseline can only guess it, while the "
                     "treatment's feedback states it verbatim"),
)
