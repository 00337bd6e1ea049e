"""SmolLM2-135M-Instruct on held-out two-digit sums (the arith suite): RL over two
turns with the "too high / too low" verifier vs RL over one turn, at (at least) equal
generated samples, both tested the same way: greedy, two attempts, the verifier's
message between them (train.eval_turns=2 for the single-turn arm).
The prediction below was written before the warm start's evaluation and before any
RL run of this claim (experiments/smollm2_heldout_sums/prediction.md)."""

from mtrl.evidence.claims import Arm, Claim

CLAIM = Claim(
    name="smollm2_direction_vs_single_turn",
    title=("SmolLM2-135M: two turns with 'too high / too low' beat one turn on held-out "
           "sums, same two-attempt test"),
    source=("Liu et al. 2025, 'A Simple \"Try Again\" Can Elicit Multi-Turn LLM "
            "Reasoning' (UFO): training on sequential attempts with feedback beats "
            "training on the same number of parallel single-turn samples; here with a "
            "verifier's direction instead of unary feedback, at 135M parameters"),
    prediction=("multi_turn at or slightly above single_turn on held-out test success "
                "within two attempts, by about +0.02 (between -0.05 and +0.10): 8 RL "
                "steps of 4 tasks move a 135M model little, and the single-turn arm "
                "samples at least as many answers; counted as reproduced in size from "
                "+0.05; expected verdict inconclusive"),
    direction=+1,
    min_effect=0.05,
    metric="test_success",
    baseline=Arm("single_turn", ("rollout.num_turns=1", "rollout.num_generations=16",
                                 "train.eval_turns=2")),
    treatment=Arm("multi_turn", ()),
    budget=("per task per step: T = 2, G = 4 generates 4 + 4 x 4 = 20 samples when "
            "no turn-1 answer is right and fewer otherwise (a right answer ends its "
            "episode, a node whose 4 answers are all right stops), so about "
            "4 + 16 x (1 - turn-1 sampled success); T = 1, G = 16 generates 16, at "
            "least as many at the warm start's success (checked in each run's "
            "generated_samples_per_step)"),
    suite="smollm2_arith",
    steps=8,
    eval_interval=4,
    common=(),
)
