"""Multi-turn vs single-turn RL at an equal number of generated samples, on the
embedded default's iid test split (prediction written 2026-11-26, before any run of
this claim on the iid split)."""

from mtrl.training.evidence.claims import Arm, Claim

CLAIM = Claim(
    name="multi_vs_single_turn",
    title="two turns with feedback beat one turn at equal generated samples",
    source=("Liu et al. 2025, 'A Simple \"Try Again\" Can Elicit Multi-Turn LLM "
            "Reasoning' (UFO): sequential attempts with feedback beat "
            "the same number of parallel single-turn samples (+14% at five attempts)"),
    prediction=("multi_turn above single_turn on iid test success, by about +0.2 to +0.4 "
                "(validation on the old split, which chose the checkpoint: 0.54 vs 0.19); "
                "counted as reproduced in size from +0.10"),
    direction=+1,
    min_effect=0.10,
    metric="test_success",
    baseline=Arm("single_turn", ("rollout.num_turns=1", "rollout.num_generations=20")),
    treatment=Arm("multi_turn", ()),
    budget=("per agent per task per step: T = 2, G = 4 without termination generates "
            "4 + 4^2 = 20 samples; T = 1, G = 20 generates 20 (checked in each run's "
            "generated_samples_per_step)"),
    steps=20,
    eval_interval=10,
)
