"""Credit methods selectable by name: `credit.estimator` -> per-agent completion advantages.

Every estimator maps the step's rollout (a StepRollout: its host tree and its dense
batch) to, per turn t, [P] + [J]*(t−1) + [N, G] advantages of each agent's
completions; the trainer gathers them into rows (mtrl.credit.row_advantages) and
broadcasts them over the row's loss tokens. Two kinds (docs/methods.md has the table
with the papers):

  tree estimators   magrpo (baseline mean | rloo | max | raw), grpo, dr_grpo, rloo:
                    tree returns, summed per completion over joint actions, then the
                    group function over the agent's G completions of the node
                    (mtrl.credit.magrpo_advantages).
  path estimators   mt_grpo, igpo, gigpo, ufo: the library function of the paper on
                    the task's root-to-leaf paths as its group of trajectories
                    (tree_paths.py); each step gets the mean of its paths' values,
                    then per-agent credit over the joint actions holding a completion.

Each registry entry (Estimator) declares its kind, the environment info keys it reads
(`needs`) and whether its paper's episodes end at the first success; `check_method`
compares them with the environment and the loss at build time, and no consumer keeps a
list of estimator names. (CREDIT_ESTIMATORS holds whole credit methods; the group
functions they apply are mtrl.credit's GROUP_ADVANTAGES, the KL's k1..k3 are
mtrl.losses' KL_ESTIMATORS.)
"""

from __future__ import annotations

import dataclasses
import zlib
from typing import Callable

import jax.numpy as jnp
import numpy as np

from mtrl.config.fields import check_bool, check_number
from mtrl.credit import (gigpo_advantages, grpo_advantages, igpo_advantages, magrpo_advantages,
                         mt_grpo_advantages, per_agent_credit, row_advantages,
                         ufo_reward)
from mtrl.credit.igpo import IGPO_NORMALIZATIONS, INFORMATION_GAINS
from mtrl.credit.joint_actions import CREDIT_REDUCTIONS
from mtrl.credit.turn_level import LAMBDA_PLACEMENTS
from mtrl.losses import POLICY_LOSSES
from mtrl.registry import Registry
from mtrl.rollout.step_rollout import StepRollout
from mtrl.rollout.tree_paths import TaskPaths, info_array, paths_to_dense, tree_paths

BASELINES = ("mean", "rloo", "max", "raw")
# Older configs named the baseline as the estimator: still accepted, as magrpo.
LEGACY_BASELINE_NAMES = ("mean", "max", "raw")


@dataclasses.dataclass(frozen=True)
class CreditConfig:
    """The `credit` section.

    estimator: a name in CREDIT_ESTIMATORS (or mean | max | raw: magrpo with that baseline).
    baseline: magrpo's group baseline over the agent's G completions.
    credit: cross mode, sum (CoMLRL) or mean of a completion's joint actions.
    normalize_std: magrpo baselines only: divide by max(std, 1e-6).
    turn_coef / lambda_on: MT-GRPO's λ and the term it scales ("turn" or "outcome").
    igpo_gain / igpo_normalization: IGPO's information gain and z-scoring.
    gigpo_omega: GiGPO's step-advantage weight ω.
    ufo_gamma / ufo_penalty: UFO's per-attempt decay γ and repetition penalty λ.
    """

    estimator: str = "magrpo"
    baseline: str = "mean"
    credit: str = "sum"
    normalize_std: bool = False
    turn_coef: float = 1.0
    lambda_on: str = "turn"
    igpo_gain: str = "prob"
    igpo_normalization: str = "joint"
    gigpo_omega: float = 1.0
    ufo_gamma: float = 0.9
    ufo_penalty: float = 0.5

    def __post_init__(self):
        if self.estimator in LEGACY_BASELINE_NAMES:
            object.__setattr__(self, "baseline", self.estimator)
            object.__setattr__(self, "estimator", "magrpo")
        if self.estimator not in CREDIT_ESTIMATORS:
            raise ValueError(f"estimator: unknown {self.estimator!r}; valid: "
                             f"{', '.join(CREDIT_ESTIMATORS.names())} (or mean | max | raw)")
        choices = dict(baseline=BASELINES, credit=CREDIT_REDUCTIONS, lambda_on=LAMBDA_PLACEMENTS,
                       igpo_gain=INFORMATION_GAINS.names(),
                       igpo_normalization=IGPO_NORMALIZATIONS)
        for name, valid in choices.items():
            if getattr(self, name) not in valid:
                raise ValueError(f"{name}: unknown {getattr(self, name)!r}; valid: "
                                 f"{', '.join(valid)}")
        check_bool("normalize_std", self.normalize_std)
        if self.normalize_std and self.estimator != "magrpo":
            raise ValueError(f"normalize_std applies to magrpo's baselines; {self.estimator!r} "
                             "fixes its own normalization")
        for name in ("turn_coef", "gigpo_omega", "ufo_gamma", "ufo_penalty"):
            value = getattr(self, name)
            check_number(name, value)
            if not value >= 0:
                raise ValueError(f"{name} must be >= 0, got {value!r}")
        if not self.ufo_gamma <= 1.0:
            raise ValueError(f"ufo_gamma must lie in [0, 1], got {self.ufo_gamma!r}")
        # An option only one estimator reads, set away from its default while another
        # estimator is selected, would be ignored silently: the user meant something else.
        defaults = {f.name: f.default for f in dataclasses.fields(CreditConfig)}
        for name, owner in OPTION_OWNERS.items():
            value = getattr(self, name)
            if value != defaults[name] and self.estimator != owner:
                raise ValueError(f"{name} is set to {value!r} but only {owner} reads it; "
                                 f"credit.estimator is {self.estimator!r}")


# The options one estimator reads (normalize_std: checked above; credit: every
# estimator in cross mode).
OPTION_OWNERS = {"baseline": "magrpo", "turn_coef": "mt_grpo", "lambda_on": "mt_grpo",
                 "igpo_gain": "igpo", "igpo_normalization": "igpo", "gigpo_omega": "gigpo",
                 "ufo_gamma": "ufo", "ufo_penalty": "ufo"}


ESTIMATOR_KINDS = ("tree", "path")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Estimator:
    """A CREDIT_ESTIMATORS entry: fn(rollout, credit, gamma, penalty) -> per turn
    [P] + [J]*(t−1) + [N, G] advantages, and the traits its consumers read.

      kind              "tree" (tree returns, per-completion penalties allowed:
                        loss.kl_in=reward, filters.overlong_cache) or "path" (the
                        paper's function over root-to-leaf paths, register with
                        path_estimator); see the module docstring.
      needs             environment info keys read from every step (check_method).
      ends_at_success   its paper's reading needs an episode to end at its first
                        success (config/root.py check_episode_end).
      paper             the citation, for docs and error messages.
    """

    fn: Callable
    kind: str
    needs: frozenset
    ends_at_success: bool
    paper: str

    def __post_init__(self):
        if self.kind not in ESTIMATOR_KINDS:
            raise ValueError(f"Estimator.kind: unknown {self.kind!r}; valid: "
                             f"{', '.join(ESTIMATOR_KINDS)}")
        if not isinstance(self.needs, frozenset):
            raise ValueError(f"Estimator.needs must be a frozenset of info keys, got {self.needs!r}")
        check_bool("Estimator.ends_at_success", self.ends_at_success)


CREDIT_ESTIMATORS: Registry[Estimator] = Registry("credit estimator")


def tree_estimators() -> tuple[str, ...]:
    """The registered estimators of kind "tree" (the ones that take return penalties)."""
    return tuple(n for n in CREDIT_ESTIMATORS.names() if CREDIT_ESTIMATORS.get(n).kind == "tree")


def _tree(group_fn: str | None):
    def fn(rollout: StepRollout, credit: CreditConfig, gamma, penalty=None):
        batch = rollout.batch
        name = group_fn or credit.baseline
        opts = {"normalize_std": True} if credit.normalize_std else {}
        return magrpo_advantages(batch.rewards, batch.expanded, gamma=gamma,
                                 mode=batch.joint_mode, num_agents=batch.num_agents,
                                 num_generations=batch.num_generations, estimator=name,
                                 credit=credit.credit, penalty=penalty, **opts)
    return fn


for _name, _group, _paper in (
        ("magrpo", None, "Liu et al. 2025, MAGRPO / CoMLRL"),
        ("grpo", "grpo", "Shao et al. 2024, DeepSeekMath"),
        ("dr_grpo", "dr_grpo", "Liu et al. 2025, Understanding R1-Zero-Like Training"),
        ("rloo", "rloo", "Ahmadian et al. 2024, Back to Basics")):
    CREDIT_ESTIMATORS.register(_name)(Estimator(fn=_tree(_group), kind="tree", needs=frozenset(),
                                                ends_at_success=False, paper=_paper))


def path_estimator(name: str, needs: tuple[str, ...], paper: str, ends_at_success: bool = False):
    """Registers `values(paths: TaskPaths, credit, gamma) -> [Q, K]` as a path estimator
    that reads the step info keys `needs`."""
    def register(values: Callable[[TaskPaths, CreditConfig, float], np.ndarray]):
        def fn(rollout: StepRollout, credit: CreditConfig, gamma, penalty=None):
            if penalty is not None:
                raise ValueError(f"{name!r} takes no per-completion penalty (kl_in=reward)")
            tree, batch = rollout.tree, rollout.batch
            paths = tree_paths(tree)
            dense = paths_to_dense(tree, paths, [values(p, credit, gamma) for p in paths])
            return [per_agent_credit(jnp.asarray(d), batch.joint_mode, batch.num_agents,
                                     batch.num_generations, reduce=credit.credit)
                    for d in dense]
        CREDIT_ESTIMATORS.register(name)(Estimator(fn=fn, kind="path", needs=frozenset(needs),
                                                   ends_at_success=ends_at_success, paper=paper))
        return values
    return register


def final_rewards(paths: TaskPaths) -> np.ndarray:
    """[Q]: each path's reward at its last present turn."""
    last = paths.mask.shape[1] - 1 - np.argmax(paths.mask[:, ::-1], axis=1)
    return paths.rewards[np.arange(len(last)), last]


@path_estimator("mt_grpo", (), "Zeng et al. 2025, MT-GRPO")
def mt_grpo_values(paths: TaskPaths, credit: CreditConfig, gamma) -> np.ndarray:
    """r^T = Σ of the path's non-final rewards, r^O = its final reward (module doc of
    mtrl.credit.turn_level): non-final turns get A^O + λ·A^T, the final turn A^O."""
    outcome = final_rewards(paths)
    last = paths.mask.sum(axis=1) - 1
    turn = paths.rewards.sum(axis=1) - outcome
    adv = mt_grpo_advantages(turn, outcome, turn_coef=credit.turn_coef,
                             lambda_on=credit.lambda_on)
    k = np.arange(paths.mask.shape[1])[None, :]
    values = np.where(k < last[:, None], np.asarray(adv.non_final)[:, None],
                      np.asarray(adv.final)[:, None])
    return np.where(paths.mask, values, 0.0)


@path_estimator("igpo", ("answer_logprob", "answer_logprob_prior"),
                "Wang et al. 2025, IGPO")
def igpo_values(paths: TaskPaths, credit: CreditConfig, gamma) -> np.ndarray:
    """truth log-probs m_0 (prior, before turn 1) .. m_K from the step infos; the final
    present turn's reward is the outcome."""
    after = info_array(paths, "answer_logprob", np.float32)
    prior = info_array(paths, "answer_logprob_prior", np.float32)[:, 0]
    # Absent turns repeat the last value (they are masked out of every statistic).
    filled = np.maximum.accumulate(np.where(paths.mask, np.arange(after.shape[1]), 0), axis=1)
    after = np.take_along_axis(after, filled, axis=1)
    truth = np.concatenate([prior[:, None], after], axis=1)
    return np.asarray(igpo_advantages(truth, final_rewards(paths), paths.mask,
                                      gain=credit.igpo_gain,
                                      normalization=credit.igpo_normalization, gamma=gamma))


@path_estimator("gigpo", ("anchor_id",), "Feng et al. 2025, GiGPO")
def gigpo_values(paths: TaskPaths, credit: CreditConfig, gamma) -> np.ndarray:
    """Step k's anchor state is the one it was taken from: the task's root (id −1) at
    turn 1, else the `anchor_id` the previous step led to; episode return Σ_k r_k."""
    led_to = info_array(paths, "anchor_id", np.int64)
    anchors = np.concatenate([np.full((len(led_to), 1), -1, np.int64), led_to[:, :-1]], axis=1)
    ranks = np.unique(anchors, return_inverse=True)[1].reshape(anchors.shape)  # int32-safe
    return np.asarray(gigpo_advantages(paths.rewards.sum(axis=1), paths.rewards,
                                       jnp.asarray(ranks, jnp.int32), paths.mask,
                                       gamma=gamma, omega=credit.gigpo_omega))


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
@path_estimator("ufo", ("correct",), "Liu et al. 2025, UFO (Try Again)", ends_at_success=True)
def ufo_values(paths: TaskPaths, credit: CreditConfig, gamma) -> np.ndarray:
    """Each path's UFO reward, GRPO-normalized over the task's paths, on every turn."""
    correct = info_array(paths, "correct", bool, fill=False)
    rewards = [ufo_reward(c, i, m, gamma=credit.ufo_gamma, penalty_coef=credit.ufo_penalty)
               for c, i, m in zip(correct, answer_ids(paths), paths.mask)]
    adv = np.asarray(grpo_advantages(jnp.stack(rewards)))
    return np.where(paths.mask, adv[:, None], 0.0)


def method_advantages(credit: CreditConfig, rollout: StepRollout, gamma, penalty=None) -> list:
    """Per turn [P] + [J]*(t−1) + [N, G] advantages of the configured estimator
    (penalty: per-completion return penalties, tree estimators only)."""
    return CREDIT_ESTIMATORS.get(credit.estimator).fn(rollout, credit, gamma, penalty)


def token_advantages(credit: CreditConfig, rollout: StepRollout, gamma,
                     penalty=None) -> jnp.ndarray:
    """[N, C, L] float32: each row's advantage on its loss tokens, 0 elsewhere (what
    the trainer feeds the loss)."""
    per_turn = method_advantages(credit, rollout, gamma, penalty)
    batch = rollout.batch
    rows = row_advantages(per_turn, batch.row_turn, batch.row_node, batch.row_sample)
    return rows[:, :, None] * batch.loss_mask


def check_group_size(credit: CreditConfig, num_generations: int) -> None:
    """One-line error when G = 1 leaves a group-relative estimator nothing to compare.

    Every estimator but magrpo with baseline raw subtracts a baseline over a group: the
    agent's G completions of a node (tree estimators) or the task's root-to-leaf paths,
    of which there are J^(T−1)·J with J = 1 when G = 1 (path estimators). A group of one
    gives every advantage 0, so every update is skipped and nothing trains.
    """
    if num_generations == 1 and not (credit.estimator == "magrpo" and credit.baseline == "raw"):
        name = credit.estimator + (f" (baseline {credit.baseline!r})"
                                   if credit.estimator == "magrpo" else "")
        raise ValueError(f"config.rollout.num_generations: 1 sample per node leaves every group "
                         f"of credit.estimator {name} one member, so every advantage is 0; use "
                         f">= 2 (or credit.estimator=magrpo with credit.baseline=raw)")


def check_method(credit: CreditConfig, loss: str, num_generations: int, env,
                 kl_in: str = "loss") -> None:
    """One-line errors for an estimator the environment or the loss cannot serve."""
    estimator = CREDIT_ESTIMATORS.get(credit.estimator)
    if kl_in == "reward" and estimator.kind != "tree":
        raise ValueError(f"config.loss.kl_in: 'reward' penalizes tree returns; estimators "
                         f"{', '.join(tree_estimators())} take it, not {credit.estimator!r}")
    needs = estimator.needs
    from mtrl.training.score.answer_probs import derived_info_keys  # what the trainer adds
    reported = frozenset(getattr(env, "info_keys", ()))
    missing = sorted(needs - reported - derived_info_keys(reported))
    if missing:
        raise ValueError(f"config.credit.estimator: {credit.estimator!r} reads step info "
                         f"{missing}, which {type(env).__name__} does not report "
                         "(docs/methods.md lists the fields)")
    if POLICY_LOSSES.get(loss).group_size == 2:  # REFUEL's pairs of sibling completions
        if num_generations % 2:
            raise ValueError(f"config.loss.policy_loss: {loss!r} pairs sibling completions; "
                             f"rollout.num_generations must be even, got {num_generations}")
        if credit.estimator not in ("magrpo", "dr_grpo") or credit.normalize_std or \
                credit.baseline not in ("mean", "raw"):
            raise ValueError(f"config.loss.policy_loss: {loss!r} regresses on return "
                             "differences; use credit.estimator magrpo (baseline mean or raw, "
                             "no normalize_std) or dr_grpo")
