"""TURN_CREDIT: the multi-turn and tree credit schemes, registered by name.

The schemes take different inputs, so the registry maps a name to the function itself
(no common signature); each function's docstring states its inputs and shapes.

  mt_grpo    mt_grpo_advantages(turn_rewards[G], outcome_rewards[G], mask[G] | None)
             → MTGRPOAdvantages([G], [G])  (Zeng et al. 2025, MT-GRPO; turn_level.py)
  per_turn   per_turn_advantages(turn_rewards[G, K], turn_mask[G, K] | None)
             → [G, K]  discounted turn returns compared by an ADVANTAGE_ESTIMATORS entry
  igpo       igpo_advantages(truth_logprob[G, K+1], outcome[G], turn_mask[G, K] | None)
             → [G, K]  (Wang et al. 2025, IGPO; igpo.py)
  gigpo      gigpo_advantages(episode_returns[G], step_rewards[G, K], state_ids[G, K],
             step_mask[G, K] | None) → [G, K]  (Feng et al. 2025, GiGPO; gigpo.py)
  magrpo     magrpo_advantages(rewards, expanded, *, gamma, mode, num_agents,
             num_generations) → per turn [B, J^(t−1), N, G]  (Liu et al. 2025, MAGRPO;
             magrpo.py)
"""

from __future__ import annotations

from typing import Callable

from mtrl.credit.gigpo import gigpo_advantages
from mtrl.credit.igpo import igpo_advantages
from mtrl.credit.magrpo import magrpo_advantages
from mtrl.credit.turn_level import mt_grpo_advantages, per_turn_advantages
from mtrl.registry import Registry

TURN_CREDIT: Registry[Callable] = Registry("turn credit scheme")

TURN_CREDIT.register("mt_grpo")(mt_grpo_advantages)
TURN_CREDIT.register("per_turn")(per_turn_advantages)
TURN_CREDIT.register("igpo")(igpo_advantages)
TURN_CREDIT.register("gigpo")(gigpo_advantages)
TURN_CREDIT.register("magrpo")(magrpo_advantages)
