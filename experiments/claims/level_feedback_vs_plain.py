"""level_feedback vs plain revision prompts, on the embedded default's iid test split
(prediction written 2026-11-26, before any run of this claim on the iid split)."""

from mtrl.training.evidence.claims import Arm, Claim

CLAIM = Claim(
    name="level_feedback_vs_plain",
    title="the sandbox's diagnostics in the revision prompt beat a bare 'revise'",
    source=("Liu et al. 2025, 'LLM Collaboration With Multi-Agent Reinforcement "
            "Learning' (CoMLRL / MAGRPO): level feedback (which tests "
            "fail, with their values) as the next turn's observation"),
    prediction=("level_feedback above plain on iid test success, by about +0.2 to +0.4: "
                "with plain the failing probe that names the coefficient is never shown, "
                "so turn 2 cannot beat a guess (validation on the old split: 0.54 vs "
                "0.19); counted as reproduced in size from +0.10"),
    direction=+1,
    min_effect=0.10,
    metric="test_success",
    baseline=Arm("plain", ("env.feedback_mode=plain",)),
    treatment=Arm("level_feedback", ("env.feedback_mode=level_feedback",)),
    budget="same T = 2, G = 4 tree in both arms: 20 samples per agent per task per step",
    steps=20,
    eval_interval=10,
)
