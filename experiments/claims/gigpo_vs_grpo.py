"""GiGPO vs GRPO on four-move TextWorld games (coin collector level 4), on the test
games (prediction written 2026-11-26, before any RL run of this claim).

Measured before the prediction (one SFT-only warm start, seed 0, the suite's config):
post-SFT validation win 0.167 (4 of 24 games, all won at turn 4); SFT 240 updates in
~34 minutes on the 2-core machine under a load of 14-19 (others' runs), plus ~12
minutes to generate and cache the 168 games once. Test numbers of that run were not
looked at. (That run used rollout.max_context 544 until its first evaluation refused
a 551-token validation prompt; the evaluation was rerun from its SFT checkpoint with
640, the config's value now; SFT itself is unchanged.) Its final log line printed its
post-SFT test win, 0.229 on 48 games: seen after the prediction below was committed
(309f98e), which is unchanged.
"""

from mtrl.evidence.claims import Arm, Claim

CLAIM = Claim(
    name="gigpo_vs_grpo",
    title="GiGPO's anchor-state step groups beat GRPO on four-move text games",
    source=("Feng et al. 2025, 'Group-in-Group Policy Optimization for LLM Agent "
            "Training' (GiGPO): episode groups plus step groups of equal anchor "
            "states; above GRPO on ALFWorld (+12%) and WebShop (+9%)"),
    prediction=("gigpo above grpo on test wins, by about +0.05 (+0.0 to +0.10), counted "
                "as reproduced in size from +0.05; RL after SFT raises gigpo's test wins "
                "over the warm start's (each run's test_success vs post_sft_test_success) "
                "by a few points. Small because in a T = 4, G = 3 tree GRPO's per-node "
                "groups already credit single moves; GiGPO adds episode groups and pools "
                "nodes in the same room. On 1-2-move games 24 GiGPO steps left test wins "
                "flat (0.597 -> 0.576, textworld.py); inconclusive at 3 seeds is likely"),
    direction=+1,
    min_effect=0.05,
    metric="test_success",
    baseline=Arm("grpo", ("credit.estimator=grpo",)),
    treatment=Arm("gigpo", ("credit.estimator=gigpo",)),
    budget=("same T = 4, G = 3 tree in both arms: 3 + 9 + 27 + 81 = 120 samples per "
            "task per step, 2 tasks per step (checked in generated_samples_per_step)"),
    suite="textworld_long",
    steps=16,
    eval_interval=8,
)
