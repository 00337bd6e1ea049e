"""Registry entries carry their traits, and the consumers read them from the entry.

A loss or credit estimator registered here, in the test, and nowhere else gets the
behaviour its traits declare: an advantage-linear loss has its zero-advantage rows left
out of the packed forward, a clipped loss takes the clip settings, a pairwise loss moves
its rows in pairs. No list of names in the trainer has to learn about it.
"""

import dataclasses
import types

import jax
import pytest
from flax import nnx

from mtrl.envs.registry import EnvSection
from mtrl.losses import (AGGREGATIONS, POLICY_LOSSES, PolicyLoss, PolicyObjectiveConfig,
                         PPOClipConfig, ReinforceConfig, ppo_loss, reinforce_loss)
from mtrl.models import Transformer
from mtrl.training.advantages.estimators import (CREDIT_ESTIMATORS, ESTIMATOR_KINDS, CreditConfig,
                                                Estimator, NoOptions, tree_estimators)
from mtrl.training.config.rules import (episodes_end_at_success, groups_fit_generations,
                                        penalties_need_a_tree_estimator)
from mtrl.training.run.built_rules import estimator_info
from mtrl.training.update.packing import pack_rows
from mtrl.training.update.row_groups import group_size
from mtrl.training.policy.train_state import init_train_state
from mtrl.training.update.train_step import make_train_step, zero_advantage_is_exact
from tests.training.config.test_objective_build import build_objective, config_for
from tests.training.update.test_packing import CONFIG, recording_sgd, tree_minibatch


@pytest.mark.parametrize("name", POLICY_LOSSES.names())
def test_every_policy_loss_declares_its_traits(name):
    entry = POLICY_LOSSES.get(name)
    assert isinstance(entry, PolicyLoss)
    assert dataclasses.is_dataclass(entry.options) and entry.options().__hash__ is not None
    assert entry.aggregation in AGGREGATIONS
    assert isinstance(entry.advantage_linear, bool)
    assert entry.group_size >= 1 and isinstance(entry.needs_unscaled_returns, bool)
    fields = {f.name for f in dataclasses.fields(entry.options)}
    assert entry.clipped == ({"eps_low", "eps_high", "dual_clip"} <= fields)  # derived


@pytest.mark.parametrize("name", CREDIT_ESTIMATORS.names())
def test_every_credit_estimator_declares_its_traits(name):
    entry = CREDIT_ESTIMATORS.get(name)
    assert isinstance(entry, Estimator)
    assert entry.kind in ESTIMATOR_KINDS and entry.paper
    assert isinstance(entry.needs, frozenset) and all(isinstance(k, str) for k in entry.needs)
    assert isinstance(entry.ends_at_success, bool)
    options = entry.options()  # every option has its default
    assert isinstance(entry.returns_unscaled(options), bool)
    assert entry.group_minimum(options) >= 1


def test_the_built_in_entries_declare_the_traits_the_trainer_used_to_list():
    """The lists the consumers held before the traits moved into the entries, as
    subsets: a newly registered entry joins without editing this test."""
    def having(trait):
        return {n for n in POLICY_LOSSES.names() if getattr(POLICY_LOSSES.get(n), trait)}
    assert {"gspo", "gspo-token", "ppo", "turn-ratio"} <= having("clipped")
    assert not {"reinforce", "refuel"} & having("clipped")
    assert {"gspo", "gspo-token", "ppo", "reinforce"} <= having("advantage_linear")
    assert not {"refuel", "turn-ratio"} & having("advantage_linear")
    assert POLICY_LOSSES.get("refuel").group_size == 2 and having("needs_unscaled_returns") \
        >= {"refuel"}
    assert {"dr_grpo", "grpo", "magrpo", "rloo"} <= set(tree_estimators())
    assert not {"mt_grpo", "igpo", "gigpo", "ufo"} & set(tree_estimators())
    assert CREDIT_ESTIMATORS.get("ufo").ends_at_success
    assert not any(CREDIT_ESTIMATORS.get(n).ends_at_success
                   for n in ("magrpo", "grpo", "mt_grpo", "igpo", "gigpo"))


def test_an_entry_must_declare_every_trait():
    with pytest.raises(TypeError, match="advantage_linear"):
        PolicyLoss(fn=reinforce_loss, options=ReinforceConfig, aggregation="token-mean",
                   group_size=1, needs_unscaled_returns=False)
    with pytest.raises(ValueError, match="group_size must be an int >= 1"):
        PolicyLoss(fn=reinforce_loss, options=ReinforceConfig, aggregation="token-mean",
                   advantage_linear=True, group_size=0,
                   needs_unscaled_returns=False)
    with pytest.raises(TypeError, match="min_group_size"):
        Estimator(fn=None, kind="tree", needs=frozenset(), ends_at_success=False,
                  options=NoOptions, unscaled_returns=False, paper="x")
    with pytest.raises(ValueError, match="kind"):
        Estimator(fn=None, kind="forest", needs=frozenset(), ends_at_success=False,
                  options=NoOptions, unscaled_returns=False, min_group_size=2, paper="x")


def toy_loss(monkeypatch, name, **traits):
    """Registers `name` for this test only (REINFORCE's function under other traits)."""
    entry = dict(fn=reinforce_loss, options=ReinforceConfig, aggregation="seq-mean-token-sum",
                 clipped=False, advantage_linear=False, group_size=1,
                 needs_unscaled_returns=False)
    entry.update(traits)
    if entry.pop("clipped"):  # derived from the options: PPO's clip settings
        entry.update(fn=ppo_loss, options=PPOClipConfig)
    monkeypatch.setitem(POLICY_LOSSES._entries, name, PolicyLoss(**entry))


@pytest.fixture(scope="module")
def models():
    graphdef, params0 = nnx.split(Transformer(CONFIG, rngs=nnx.Rngs(0)))
    _, params1 = nnx.split(Transformer(CONFIG, rngs=nnx.Rngs(1)))
    return graphdef, [params0, params1]


def test_a_registered_linear_loss_has_zero_advantage_rows_skipped_by_packing(monkeypatch, models):
    toy_loss(monkeypatch, "toy-linear", advantage_linear=True)
    toy_loss(monkeypatch, "toy-nonlinear", advantage_linear=False)
    graphdef, params = models
    rows, _ = tree_minibatch("align", 2, models, seed=3)  # every 5th row has A = 0
    full = int(pack_rows(rows.tokens, rows.token_mask, rows.loss_mask, "tree").token_mask.sum())
    packed = {}
    for name in ("toy-linear", "toy-nonlinear"):
        objective = PolicyObjectiveConfig(loss=name)
        step = make_train_step(graphdef, objective, recording_sgd(), num_agents=2,
                               shared=False, packing="tree")
        assert step.skip_zero_advantage == zero_advantage_is_exact(objective)
        state = init_train_state(params, recording_sgd(), shared=False, keep_reference=False)
        jax.block_until_ready(step(state, rows))
        packed[name] = step.last_packing["packed_tokens"]
    assert packed["toy-linear"] < full and packed["toy-nonlinear"] == full


def test_a_registered_clipped_loss_takes_the_clip_settings(monkeypatch):
    toy_loss(monkeypatch, "toy-clipped", clipped=True)
    toy_loss(monkeypatch, "toy-unclipped", clipped=False)
    built = build_objective(config_for("toy-clipped", eps_low=0.1))
    assert built.loss_config.eps_low == 0.1
    with pytest.raises(ValueError, match="config.loss.eps_low: set to 0.1, but only .*"
                                         "toy-clipped.* loss.policy_loss is 'toy-unclipped'"):
        build_objective(config_for("toy-unclipped", eps_low=0.1))


def test_a_registered_pairwise_loss_moves_rows_in_pairs(monkeypatch):
    toy_loss(monkeypatch, "toy-pairs", group_size=2)
    assert group_size("toy-pairs") == 2 and group_size("reinforce") == 1
    loss = types.SimpleNamespace(objective=types.SimpleNamespace(loss="toy-pairs"))
    with pytest.raises(ValueError, match="num_generations must be a multiple of 2"):
        groups_fit_generations(loss, types.SimpleNamespace(num_generations=3))
    groups_fit_generations(loss, types.SimpleNamespace(num_generations=4))


def test_a_registered_estimator_brings_its_needs_and_episode_end(monkeypatch):
    magrpo = CREDIT_ESTIMATORS.get("magrpo")
    monkeypatch.setitem(CREDIT_ESTIMATORS._entries, "toy", Estimator(
        fn=magrpo.fn, kind="path", needs=frozenset({"toy_key"}), ends_at_success=True,
        options=NoOptions, unscaled_returns=False, min_group_size=2, paper="a test"))
    credit = CreditConfig(estimator="toy")
    env = type("Env", (), {"info_keys": frozenset({"correct"}), "ends_on_success": False})()
    with pytest.raises(ValueError, match=r"'toy' reads step info \['toy_key'\]"):
        estimator_info(types.SimpleNamespace(credit=credit), env)
    with pytest.raises(ValueError, match="'toy' needs episodes that end at the first success"):
        episodes_end_at_success(credit, EnvSection("code"))  # keeps revising solved branches
    episodes_end_at_success(credit, EnvSection.of("code", end_on_success=True))
    with pytest.raises(ValueError, match="return penalties .* need a tree estimator"):
        penalties_need_a_tree_estimator(credit, types.SimpleNamespace(overlong_cache=0),
                                        types.SimpleNamespace(kl_in="reward"))


def test_magrpo_takes_its_baselines_traits_from_the_group_function(monkeypatch):
    """No list of group-function names: each declares unscaled / single_sample where it
    is registered (mtrl/credit/group.py), and magrpo reads them from the entry."""
    from mtrl.credit.group import GROUP_ADVANTAGES, GroupFunction, mean_baseline_advantages
    names = GROUP_ADVANTAGES.names()
    assert {n for n in names if GROUP_ADVANTAGES.get(n).unscaled} == {"mean", "raw", "dr_grpo"}
    assert {n for n in names if GROUP_ADVANTAGES.get(n).single_sample} == {"raw"}
    monkeypatch.setitem(GROUP_ADVANTAGES._entries, "toy", GroupFunction(
        mean_baseline_advantages, unscaled=True, single_sample=True))
    magrpo = CREDIT_ESTIMATORS.get("magrpo")
    for name in (*names, "toy"):
        group, options = GROUP_ADVANTAGES.get(name), magrpo.options(baseline=name)
        assert magrpo.returns_unscaled(options) == group.unscaled
        assert magrpo.group_minimum(options) == (1 if group.single_sample else 2)
        assert not magrpo.returns_unscaled(magrpo.options(baseline=name, normalize_std=True))
    for name in ("grpo", "dr_grpo", "rloo"):
        entry = CREDIT_ESTIMATORS.get(name)
        assert entry.returns_unscaled(NoOptions()) == GROUP_ADVANTAGES.get(name).unscaled


def test_a_path_estimator_takes_the_traits_it_is_registered_with(monkeypatch):
    from mtrl.training.advantages.path_estimators import path_estimator
    monkeypatch.setattr(CREDIT_ESTIMATORS, "_entries", dict(CREDIT_ESTIMATORS._entries))
    path_estimator("toy_path", needs=("toy_key",), paper="a test", options=NoOptions,
                   ends_at_success=True, unscaled_returns=lambda o: True,
                   min_group_size=1)(lambda paths, options, gamma: None)
    entry = CREDIT_ESTIMATORS.get("toy_path")
    assert (entry.kind, entry.needs, entry.ends_at_success) == ("path", {"toy_key"}, True)
    assert entry.returns_unscaled(NoOptions()) and entry.group_minimum(NoOptions()) == 1
    with pytest.raises(TypeError, match="min_group_size"):  # every trait is required
        path_estimator("toy_other", needs=(), paper="a test", options=NoOptions,
                       ends_at_success=False, unscaled_returns=False)
