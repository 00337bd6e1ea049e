"""UFO's comparison, faithfully: multi-turn RL with unary feedback, scored by sequential
success within two attempts, against single-turn RL scored by two parallel samples, at
an equal number of samples, on the try_again suite (experiments/configs/try_again.py:
one agent, f(x) = x + b or -x + b, offsets held out so that no test input occurs in
training). Prediction written 2026-11-28 before any run of this claim or its suite
(nothing of the suite evaluated: its SFT, post-SFT numbers and RL all unseen)."""

from mtrl.evidence.claims import Arm, Claim

CLAIM = Claim(
    name="try_again_succ_vs_pass",
    title="multi-turn RL on a bare 'try again' gives sequential Succ@2 above single-turn "
          "RL's parallel Pass@2 at equal samples",
    source=("Liu et al. 2025, 'A Simple \"Try Again\" Can Elicit Multi-Turn LLM "
            "Reasoning' (UFO): unary feedback, the UFO reward (gamma^t for the first "
            "success, a repetition penalty); multi-turn Succ@k beats single-turn Pass@k "
            "at the same number of samples"),
    prediction=("try_again's sampled Succ@2 above single_turn's Pass@2 on the test split "
                "by about +0.10 to +0.40: the first attempt is a coin flip for both "
                "(the example fixes b, not the sign of x), so Pass@2 of two independent "
                "guesses is at most 0.75 and falls if single-turn RL sharpens the guess; "
                "after SFT about half of the second attempts resubmit the failed one (the "
                "teacher's habit), and multi-turn RL with the repetition penalty should "
                "teach the switch, whose Succ@2 is 1.0. Counted as reproduced in size "
                "from +0.05"),
    direction=+1,
    min_effect=0.05,
    metric="test_success",
    # Both sampled (temperature as in training), two samples per task at test:
    # single_turn's Pass@2 = any of two one-attempt episodes solved; try_again's
    # sampled_success = the mean over two sampled two-attempt episodes of Succ@2
    # (each episode spends at most two samples).
    baseline=Arm("single_turn", ("rollout.num_turns=1", "rollout.num_generations=20"),
                 metric="test_pass@2"),
    treatment=Arm("try_again", (), metric="test_sampled_success"),
    budget=("per task per step: T = 2, G = 4 generates at most 4 + 4^2 = 20 samples "
            "(fewer: episodes end on success); T = 1, G = 20 generates 20 (each run's "
            "generated_samples_per_step)"),
    suite="try_again",
    common=("train.eval_samples=2",),
    steps=20,
    eval_interval=10,
    positive_control="try_again",
)
