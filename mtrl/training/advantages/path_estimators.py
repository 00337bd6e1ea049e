"""Path estimators: the paper's function on a task's root-to-leaf paths as its group of
trajectories (rollout/tree_paths.py); each step gets the mean of its paths' values,
then per-agent credit over the joint actions holding a completion.

  mt_grpo  turn and outcome advantages, λ·A^T on non-final turns (Zeng et al. 2025)
  igpo     information gain of the truth's log-prob per turn     (Wang et al. 2025)
  gigpo    episode and anchor-state step advantages, weight ω    (Feng et al. 2025)
  ufo      γ^t for the first correct attempt, a repeat penalty   (Liu et al. 2025)

Each takes no per-completion return penalty; its registration declares the rest of its
traits (`path_estimator`: the step info it reads, whether its episodes end at the first
success, its options, whether its returns stay unscaled and the fewest samples per
node). The four here group-normalize, so they need two samples per node and REFUEL
does not take them.
"""

from __future__ import annotations

import dataclasses
import zlib
from typing import Callable

import jax.numpy as jnp
import numpy as np

from mtrl.config.fields import check_choice, check_number
from mtrl.credit import (gigpo_advantages, grpo_advantages, igpo_advantages,
                         mt_grpo_advantages, per_agent_credit, ufo_reward)
from mtrl.credit.igpo import IGPO_NORMALIZATIONS, INFORMATION_GAINS
from mtrl.credit.turn_level import LAMBDA_PLACEMENTS
from mtrl.rollout.step_rollout import StepRollout
from mtrl.rollout.tree_paths import TaskPaths, info_array, paths_to_dense, tree_paths
from mtrl.training.advantages.registry import CREDIT_ESTIMATORS, Estimator


def _non_negative(options, *names: str) -> None:
    for name in names:
        check_number(name, getattr(options, name), 0)


@dataclasses.dataclass(frozen=True)
class MTGRPOOptions:
    """turn_coef: MT-GRPO's λ; lambda_on: the term it scales ("turn" or "outcome")."""

    turn_coef: float = 1.0
    lambda_on: str = "turn"

    def __post_init__(self):
        _non_negative(self, "turn_coef")
        check_choice("lambda_on", self.lambda_on, LAMBDA_PLACEMENTS)


@dataclasses.dataclass(frozen=True)
class IGPOOptions:
    """igpo_gain: the information gain (INFORMATION_GAINS); igpo_normalization: z-score
    turn gains and outcomes "joint"ly or "separate"ly."""

    igpo_gain: str = "prob"
    igpo_normalization: str = "joint"

    def __post_init__(self):
        check_choice("igpo_gain", self.igpo_gain, INFORMATION_GAINS)
        check_choice("igpo_normalization", self.igpo_normalization, IGPO_NORMALIZATIONS)


@dataclasses.dataclass(frozen=True)
class GiGPOOptions:
    """gigpo_omega: GiGPO's step-advantage weight ω."""

    gigpo_omega: float = 1.0

    def __post_init__(self):
        _non_negative(self, "gigpo_omega")


@dataclasses.dataclass(frozen=True)
class UFOOptions:
    """ufo_gamma: UFO's per-attempt decay γ in [0, 1]; ufo_penalty: its repetition
    penalty λ."""

    ufo_gamma: float = 0.9
    ufo_penalty: float = 0.5

    def __post_init__(self):
        _non_negative(self, "ufo_gamma", "ufo_penalty")
        if not self.ufo_gamma <= 1.0:
            raise ValueError(f"ufo_gamma must lie in [0, 1], got {self.ufo_gamma!r}")


def path_estimator(name: str, *, needs: tuple[str, ...], paper: str, options: type,
                   ends_at_success: bool, unscaled_returns, min_group_size):
    """Registers `values(paths: TaskPaths, options, gamma) -> [Q, K]` as a path
    estimator with its traits (registry.py Estimator; every one required): the step
    info keys it `needs`, its `paper`, the `options` it owns, `ends_at_success`,
    `unscaled_returns` and `min_group_size` (each a value or options -> value)."""
    def register(values: Callable[[TaskPaths, object, float], np.ndarray]):
        def fn(rollout: StepRollout, credit, gamma, penalty=None):
            if penalty is not None:
                raise ValueError(f"{name!r} takes no per-completion penalty (kl_in=reward)")
            tree, batch = rollout.tree, rollout.batch
            paths = tree_paths(tree)
            dense = paths_to_dense(tree, paths, [values(p, credit.options, gamma)
                                                 for p in paths])
            return [per_agent_credit(jnp.asarray(d), batch.joint_mode, batch.num_agents,
                                     batch.num_generations, reduce=credit.credit)
                    for d in dense]
        CREDIT_ESTIMATORS.register(name)(Estimator(
            fn=fn, kind="path", needs=frozenset(needs), ends_at_success=ends_at_success,
            options=options, unscaled_returns=unscaled_returns,
            min_group_size=min_group_size, paper=paper))
        return values
    return register


def final_rewards(paths: TaskPaths) -> np.ndarray:
    """[Q]: each path's reward at its last present turn."""
    last = paths.mask.shape[1] - 1 - np.argmax(paths.mask[:, ::-1], axis=1)
    return paths.rewards[np.arange(len(last)), last]


@path_estimator("mt_grpo", needs=(), paper="Zeng et al. 2025, MT-GRPO",
                options=MTGRPOOptions, ends_at_success=False, unscaled_returns=False,
                min_group_size=2)
def mt_grpo_values(paths: TaskPaths, options, gamma) -> np.ndarray:
    """r^T = Σ of the path's non-final rewards, r^O = its final reward (module doc of
    mtrl.credit.turn_level): non-final turns get A^O + λ·A^T, the final turn A^O."""
    outcome = final_rewards(paths)
    last = paths.mask.sum(axis=1) - 1
    turn = paths.rewards.sum(axis=1) - outcome
    adv = mt_grpo_advantages(turn, outcome, turn_coef=options.turn_coef,
                             lambda_on=options.lambda_on)
    k = np.arange(paths.mask.shape[1])[None, :]
    values = np.where(k < last[:, None], np.asarray(adv.non_final)[:, None],
                      np.asarray(adv.final)[:, None])
    return np.where(paths.mask, values, 0.0)


@path_estimator("igpo", needs=("answer_logprob", "answer_logprob_prior"),
                paper="Wang et al. 2025, IGPO", options=IGPOOptions, ends_at_success=False,
                unscaled_returns=False, min_group_size=2)
def igpo_values(paths: TaskPaths, options, gamma) -> np.ndarray:
    """truth log-probs m_0 (prior, before turn 1) .. m_K from the step infos; the final
    present turn's reward is the outcome."""
    after = info_array(paths, "answer_logprob", np.float32)
    prior = info_array(paths, "answer_logprob_prior", np.float32)[:, 0]
    # Absent turns repeat the last value (they are masked out of every statistic).
    filled = np.maximum.accumulate(np.where(paths.mask, np.arange(after.shape[1]), 0), axis=1)
    after = np.take_along_axis(after, filled, axis=1)
    truth = np.concatenate([prior[:, None], after], axis=1)
    return np.asarray(igpo_advantages(truth, final_rewards(paths), paths.mask,
                                      gain=options.igpo_gain,
                                      normalization=options.igpo_normalization, gamma=gamma))


@path_estimator("gigpo", needs=("anchor_id",), paper="Feng et al. 2025, GiGPO",
                options=GiGPOOptions, ends_at_success=False, unscaled_returns=False,
                min_group_size=2)
def gigpo_values(paths: TaskPaths, options, gamma) -> np.ndarray:
    """Step k's anchor state is the one it was taken from: the task's root (id −1) at
    turn 1, else the `anchor_id` the previous step led to; episode return Σ_k r_k."""
    led_to = info_array(paths, "anchor_id", np.int64)
    anchors = np.concatenate([np.full((len(led_to), 1), -1, np.int64), led_to[:, :-1]], axis=1)
    ranks = np.unique(anchors, return_inverse=True)[1].reshape(anchors.shape)  # int32-safe
    return np.asarray(gigpo_advantages(paths.rewards.sum(axis=1), paths.rewards,
                                       jnp.asarray(ranks, jnp.int32), paths.mask,
                                       gamma=gamma, omega=options.gigpo_omega))


def answer_ids(paths: TaskPaths) -> np.ndarray:
    """[Q, K] ids of each step's answer: info["answer_id"] where the environment gives
    one, else a hash of the agents' texts."""
    out = np.full(paths.mask.shape, -1, np.int64)
    for q, steps in enumerate(paths.infos):
        for t, info in enumerate(steps):
            given = info.get("answer_id")
            out[q, t] = (int(given) if given is not None
                         else zlib.crc32("\0".join(paths.texts[q][t]).encode()))
    return np.unique(out, return_inverse=True)[1].reshape(out.shape).astype(np.int32)


# UFO rewards γ^t for the first correct attempt and trains no attempt after it (its
# entry's ends_at_success: config/root.py checks the env section against it).
@path_estimator("ufo", needs=("correct",), paper="Liu et al. 2025, UFO (Try Again)",
                options=UFOOptions, ends_at_success=True, unscaled_returns=False,
                min_group_size=2)
def ufo_values(paths: TaskPaths, options, gamma) -> np.ndarray:
    """Each path's UFO reward, GRPO-normalized over the task's paths, on every turn."""
    correct = info_array(paths, "correct", bool, fill=False)
    rewards = [ufo_reward(c, i, m, gamma=options.ufo_gamma, penalty_coef=options.ufo_penalty)
               for c, i, m in zip(correct, answer_ids(paths), paths.mask)]
    adv = np.asarray(grpo_advantages(jnp.stack(rewards)))
    return np.where(paths.mask, adv[:, None], 0.0)
