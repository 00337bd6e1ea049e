"""The contributor path of docs/methods.md, in-process: a throwaway estimator, loss and
environment, each registered the way the docs say (its entry declares its options and
traits) and nowhere else, then a config that selects them parses, a config that sets
one's option under another entry is refused in one line, and one learner step (grow
-> score -> advantages -> update -> publish) runs on a tiny model. A trait that slips
back into a consumer as a list of names breaks this test."""

import dataclasses

import jax
import numpy as np
import pytest
from flax import nnx

from mtrl.config import ConfigErrors
from mtrl.credit import grpo_advantages
from mtrl.envs.base import TurnEnvironment
from mtrl.envs.code.task import CodeTask
from mtrl.envs.registry import ENV_BUILDERS, BuiltEnv, EnvBuilder
from mtrl.losses import POLICY_LOSSES, PolicyLoss, reinforce_loss
from mtrl.rollout.environment import StepResult
from mtrl.rollout.tree_paths import TaskPaths, info_array
from mtrl.training.advantages.path_estimators import path_estimator
from mtrl.training.advantages.registry import CREDIT_ESTIMATORS
from mtrl.training.config import parse
from mtrl.training.loop.trainer import Trainer
from tests.training.loop.test_compile_count import small_config


# --- the estimator: its options, its math, its traits (docs: "How to add an estimator")
@dataclasses.dataclass(frozen=True)
class BonusOptions:
    bonus_coef: float = 0.5  # credit.bonus_coef


def bonus_values(paths: TaskPaths, options: BonusOptions, gamma) -> np.ndarray:
    """Each path's summed reward plus bonus_coef · its steps' `bonus` info, z-scored."""
    bonus = info_array(paths, "bonus", np.float32)
    score = paths.rewards.sum(axis=1) + options.bonus_coef * bonus.sum(axis=1)
    adv = np.asarray(grpo_advantages(score.astype(np.float32)))
    return np.where(paths.mask, adv[:, None], 0.0)


# --- the loss: REINFORCE under a scale of its own (docs: "How to add a loss")
@dataclasses.dataclass(frozen=True)
class ScaledOptions:
    scale: float = 1.0  # loss.pg_scale


def scaled_loss(inputs, config: ScaledOptions):
    out = reinforce_loss(inputs)
    return out.replace(loss=out.loss * config.scale)


# --- the environment: it answers "yes" (docs: "How to add an environment")
@dataclasses.dataclass(frozen=True)
class YesState:
    task: CodeTask
    turn: int = 0
    ended: bool = False


@dataclasses.dataclass(frozen=True)
class YesOptions:
    word: str = "yes"  # env.word


class YesEnv(TurnEnvironment):
    state_type = YesState
    info_keys = frozenset({"bonus", "correct"})

    def __init__(self, num_agents: int, options: YesOptions):
        self.num_agents, self.word = num_agents, options.word

    def reset(self, task):
        return YesState(task), tuple(f"Say {self.word}." for _ in range(self.num_agents))

    def step_branches(self, states, actions, turn):
        out = []
        for state, action in zip(states, actions):
            hit = all(self.word in text for text in action)
            out.append(StepResult(
                reward=float(hit), done=hit, observations=("Again.",) * self.num_agents,
                state=YesState(state.task, turn, hit),
                info={"bonus": float(len(action[0]) % 3), "correct": hit}, ended=hit))
        return out


def build_yes(request) -> BuiltEnv:
    return BuiltEnv(YesEnv(request.env.num_agents, request.env.options))


@pytest.fixture
def registered(monkeypatch):
    """The three entries, registered for this test only."""
    monkeypatch.setitem(ENV_BUILDERS._entries, "yes", EnvBuilder(
        build_yes, options=YesOptions, plays=CodeTask))
    monkeypatch.setitem(POLICY_LOSSES._entries, "scaled-pg", PolicyLoss(
        fn=scaled_loss, options=ScaledOptions, aggregation="seq-mean-token-sum",
        clipped=False, advantage_linear=True, group_size=1, needs_unscaled_returns=False,
        config_names={"scale": "pg_scale"}))
    saved = dict(CREDIT_ESTIMATORS._entries)
    path_estimator("bonus", ("bonus",), "a test", BonusOptions)(bonus_values)
    yield
    CREDIT_ESTIMATORS._entries.clear()
    CREDIT_ESTIMATORS._entries.update(saved)


def selecting_them():
    c = small_config()
    c.env.name, c.credit.estimator, c.loss.policy_loss = "yes", "bonus", "scaled-pg"
    c.env.workers = 0  # the code environment's option (small_config sets it) back to unset
    c.unlock()  # the throwaway entries' options are no fields of the embedded default
    c.env.word, c.credit.bonus_coef, c.loss.pg_scale = "ok", 0.25, 2.0
    return c


def test_a_config_selecting_them_parses_into_their_options(registered, no_work):
    run = parse(selecting_them())
    assert run.env.options == YesOptions(word="ok")
    assert run.credit.options == BonusOptions(bonus_coef=0.25)
    assert run.objective.loss_config == ScaledOptions(scale=2.0)


@pytest.mark.parametrize("section, field, value", [
    ("credit", "bonus_coef", 0.25), ("loss", "pg_scale", 2.0), ("env", "word", "ok")])
def test_their_options_under_another_entry_are_refused(registered, no_work, section, field,
                                                       value):
    c = small_config()
    c.unlock()
    c[section][field] = value
    with pytest.raises(ConfigErrors) as error:
        parse(c)
    assert len(error.value.lines) == 1
    assert error.value.lines[0].startswith(f"config.{section}.{field}: set to {value!r}, but "
                                           "only ") and "leave it unset" in str(error.value)


def test_one_learner_step_runs_through_them(registered, tmp_path):
    trainer = Trainer(selecting_them(), tmp_path, show_progress=False)
    try:
        stages = trainer.stages
        state = trainer.init_state([nnx.split(m)[1] for m in trainer.c.models])
        before = jax.tree.map(np.asarray, state.params)  # the update donates `state`
        stages.publisher.publish(state)
        tree = stages.grower.grow(1, trainer.backend)
        tree = stages.scorer.score(tree, stages.publisher.policies(state))
        rollout, advantages = stages.advantages.advantages(tree, state, 1)
        new_state, update = stages.updater.update(rollout, advantages, state, 1)
        stages.publisher.publish(new_state)
    finally:
        trainer.close()
    assert trainer.run_config.credit.estimator == "bonus"
    assert np.isfinite(np.asarray(advantages)).all()
    assert update.kept == rollout.batch.num_rows and update.metrics  # the update ran
    moved = jax.tree.map(lambda a, b: float(np.abs(a - np.asarray(b)).max()),
                         before, new_state.params)
    assert max(jax.tree.leaves(moved)) > 0
