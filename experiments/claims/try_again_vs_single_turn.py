"""UFO's unary "try again" feedback vs single-turn samples at an equal budget, on the
embedded default's old iid split (prediction written 2026-11-26, before any run of
this claim). Its record is superseded (experiments/claims/records/superseded/: the try_again
arm never left its warm start). Not re-run on the values split: the UFO-faithful
comparison (multi-turn Succ@k against single-turn Pass@k at equal samples, each arm
scored its own way) is experiments/claims/try_again_succ_vs_pass.py."""

from mtrl.evidence.claims import Arm, Claim

CLAIM = Claim(
    name="try_again_vs_single_turn",
    title="a second attempt after a bare 'did not pass' beats one turn at equal samples",
    source=("Liu et al. 2025, 'A Simple \"Try Again\" Can Elicit Multi-Turn LLM "
            "Reasoning' (UFO): unary feedback ('try again') with the UFO reward "
            "(gamma^t for the first correct attempt, a repetition penalty) beats the same "
            "number of parallel single-turn samples (+14% at five attempts)"),
    prediction=("try_again above single_turn on iid test success, by about +0.05 to "
                "+0.20: the unary feedback never names the coefficient, so turn 2 can "
                "only try another guess (one of five terms: at most about +0.2 if RL "
                "teaches the helper to switch instead of resubmitting); counted as "
                "reproduced in size from +0.05"),
    direction=+1,
    min_effect=0.05,
    metric="test_success",
    baseline=Arm("single_turn", ("rollout.num_turns=1", "rollout.num_generations=20")),
    treatment=Arm("try_again", ("env.feedback_mode=passed", "credit.estimator=ufo",
                                "env.end_on_success=True")),
    budget=("per agent per task per step: T = 2, G = 4 generates at most 4 + 4^2 = 20 "
            "samples (fewer once attempts succeed and end); T = 1, G = 20 generates 20"),
    steps=20,
    eval_interval=10,
)
