"""Multi-turn vs single-turn RL training at an equal number of generated samples, both
tested with the same two-attempt protocol, on the embedded default's values split
(test inputs no agent saw in training). Prediction written 2026-11-27 before any run of
this claim on this split; seen before it: only the SFT loss of the default's first seed on
this split (its copy of the probe's coefficient fits the train rows), no evaluation.

2026-11-28, before any run of this claim: its suite's k range widened to -99..99
(dcf18bd); the prediction is kept as written for the narrow-k split, and what of the new
suite was seen before the runs is in experiments/claims/README.md."""

from mtrl.evidence.claims import Arm, Claim

CLAIM = Claim(
    name="multi_vs_single_turn",
    title="multi-turn training beats single-turn training at equal samples, both tested "
          "with a second attempt",
    source=("Liu et al. 2025, 'A Simple \"Try Again\" Can Elicit Multi-Turn LLM "
            "Reasoning' (UFO): training on sequential attempts with feedback, against the "
            "same number of single-turn samples; here both policies get the second attempt "
            "with level_feedback at test (train.eval_turns=2), so the comparison is the "
            "training, not the test protocol"),
    prediction=("multi_turn above single_turn on test success by about +0.15 to +0.45: "
                "single-turn training never sees the feedback turn, so its second attempt "
                "keeps the SFT teacher's habit of resubmitting (70% of its revisions); "
                "multi-turn training rewards copying the probe's coefficient, which the "
                "test's unseen coefficients need. Counted as reproduced in size from +0.10"),
    direction=+1,
    min_effect=0.10,
    metric="test_success",
    baseline=Arm("single_turn", ("rollout.num_turns=1", "rollout.num_generations=20",
                                 "train.eval_turns=2")),
    treatment=Arm("multi_turn", ("train.eval_turns=2",)),
    budget=("per agent per task per step: T = 2, G = 4 without termination generates "
            "4 + 4^2 = 20 samples; T = 1, G = 20 generates 20 (checked in each run's "
            "generated_samples_per_step)"),
    steps=20,
    eval_interval=10,
    positive_control="multi_turn",
    by_construction=("single-turn training never trains the second turn, and its first "
                     "turn cannot know the test's coefficient, which only the feedback "
                     "states: the baseline stays near 0 whatever the paper's claim"),
)
