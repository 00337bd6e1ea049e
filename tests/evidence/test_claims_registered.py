"""Every registered claim names a suite config that loads, and its common and arm
overrides parse against that config as `python -m mtrl.train --config.*` parses them
(ml_collections flags: the field must exist, the value must have its type), and the
credit and environment options they set are accepted by their dataclasses. No
training: it catches a claim whose arm would fail at its first command line."""

import pathlib

import pytest
from absl import flags
from ml_collections import config_flags

from mtrl.evidence.arm_runs import suite_config
from mtrl.evidence.claims import CLAIMS_DIR, load_claim
from mtrl.training.config.readers import read_section

NAMES = sorted(p.stem for p in CLAIMS_DIR.glob("*.py") if not p.stem.startswith("_"))


def parsed_config(config_path: pathlib.Path, overrides):
    """The config after `--config.<override>` flags, parsed by a fresh flag set."""
    argv = ["prog", f"--config={config_path}", *(f"--config.{kv}" for kv in overrides)]
    values = flags.FlagValues()
    # The override flags are defined from the command line at declaration.
    config_flags.DEFINE_config_file("config", str(config_path), flag_values=values,
                                    lock_config=True, sys_argv=argv)
    values(argv)
    return values.config


@pytest.mark.parametrize("name", NAMES)
def test_claim_overrides_parse_against_its_suite(name):
    claim = load_claim(name)
    path = suite_config(claim.suite)
    for arm in claim.arms:
        overrides = ["train.steps=0", *claim.common, *arm.overrides]
        config = parsed_config(path, overrides)
        for kv in overrides:
            key, value = kv.split("=", 1)
            node = config
            for part in key.split("."):
                node = node[part]
            assert str(node) == value or float(node) == float(value), (name, arm.name, kv)
        for section in ("credit", "env", "loss"):  # every arm's options are its entries'
            read_section(config, section)


def test_the_gigpo_claim_is_registered_on_the_long_textworld_suite():
    assert load_claim("gigpo_vs_grpo").suite == "textworld_long"


def test_reported_metrics_get_paired_intervals_but_no_say_in_the_verdict():
    from mtrl.evidence.claims import Arm, Claim, claim_record
    claim = Claim(name="x", title="t", source="s", prediction="p", direction=1,
                  min_effect=0.1, metric="test_success", baseline=Arm("a"),
                  treatment=Arm("b", ("credit.estimator=mt_grpo",)), budget="equal",
                  reported=("test_tool_call_turn1",))
    runs = [{"arm": arm, "seed": s, "test_success": v, "test_tool_call_turn1": c,
             "best_step": 10}
            for arm, s, v, c in (("a", 0, 0.2, 0.9), ("a", 1, 0.3, 0.8),
                                 ("b", 0, 0.5, 0.1), ("b", 1, 0.61, 0.3))]
    record = claim_record(claim, [0, 1], runs, 1.0, {})
    assert record["verdict"] == "reproduced"
    calls = record["reported"]["test_tool_call_turn1"]
    assert calls["per_seed"] == pytest.approx([-0.8, -0.5]) and len(calls["ci95"]) == 2
    with pytest.raises(ValueError, match="Claim.metric must be one of .*, got 'test_nope'"):
        Claim(**{**claim.__dict__, "reported": ("test_nope",)})


def uninformative_claim(**changes):
    from mtrl.evidence.claims import Arm, Claim
    return Claim(**{**dict(name="x", title="t", source="s", prediction="p", direction=1,
                           min_effect=0.1, metric="test_success", baseline=Arm("a"),
                           treatment=Arm("b", ("env.feedback_mode=plain",)), budget="equal",
                           seeds=(0, 1, 2)), **changes})


def arm_runs(values, best_steps=(10, 10, 10), post_sft=0.1):
    return [{"arm": arm, "seed": s, "test_success": v, "post_sft_test_success": post_sft,
             "best_step": best_steps[s]}
            for arm, row in zip("ab", values) for s, v in enumerate(row)]


def test_a_comparison_where_nothing_trained_is_uninformative():
    from mtrl.evidence.claims import claim_record
    claim = uninformative_claim()
    learned = claim_record(claim, [0, 1, 2],
                           arm_runs([(0.2, 0.3, 0.25), (0.5, 0.7, 0.6)]), 1.0, {})
    assert learned["verdict"] == "reproduced" and learned["uninformative_because"] is None
    gain = learned["gain_over_warm_start"]["b"]
    assert gain["per_seed"] == pytest.approx([0.4, 0.6, 0.5]) and gain["moved_seeds"] == 3
    # Both arms kept their warm start (validation chose step 0): no verdict, whatever
    # the interval says (here a zero-width one at 0).
    stuck = claim_record(claim, [0, 1, 2], arm_runs([(0.1,) * 3, (0.1,) * 3], (0, 0, 0)),
                         1.0, {})
    assert stuck["verdict"] == "uninformative"
    assert "no arm moved from its warm start" in stuck["uninformative_because"]
    # Identical differences on every seed: nothing varied between runs.
    flat = claim_record(claim, [0, 1, 2], arm_runs([(0.2, 0.3, 0.4), (0.3, 0.4, 0.5)]),
                        1.0, {})
    assert flat["verdict"] == "uninformative" and "zero spread" in flat["uninformative_because"]
    # A positive control that learned nothing makes the comparison mute.
    controlled = uninformative_claim(positive_control="a")
    mute = claim_record(controlled, [0, 1, 2], arm_runs([(0.1, 0.05, 0.1), (0.5, 0.7, 0.6)]),
                        1.0, {})
    assert mute["verdict"] == "uninformative" and "positive control a" in \
        mute["uninformative_because"]
    with pytest.raises(ValueError, match="positive_control"):
        uninformative_claim(positive_control="c")
    with pytest.raises(ValueError, match="seeds"):
        uninformative_claim(seeds=(0,))


def test_moved_compares_validation_values_not_the_chosen_step():
    """Ties pick the later step, so a run whose validation stayed at its warm start's
    chose step 20: it did not move. A run whose validation rose did."""
    from mtrl.evidence.claims import moved

    def run(best_step, *held):
        return {"best_step": best_step,
                "curve": [{"step": 10 * i, "heldout_success": v} for i, v in enumerate(held)]
                + [{"step": 5, "reward_mean": 1.0}]}
    assert not moved(run(20, 0.0, 0.0, 0.0))  # flat: the tie picked step 20
    assert not moved(run(0, 0.3, 0.1, 0.2))  # validation chose the warm start
    assert moved(run(10, 0.1, 0.3, 0.2))
    assert not moved(run(20, 0.4, 0.1, 0.3))  # chosen step below step 0 (cannot be chosen
    # by validation, but a value comparison says so rather than trusting the step)
    assert moved({"best_step": 10})  # an old record without a curve: the step decides
    assert not moved({"best_step": 0})


def test_one_arm_at_its_warm_start_is_named_not_uninformative():
    """The treatment learned and the baseline never rose: a measured difference between
    the methods; the verdict stands and the record and its table row name the arm."""
    from mtrl.evidence.claim_table import table_row
    from mtrl.evidence.claims import claim_record
    runs = arm_runs([(0.1,) * 3, (0.5, 0.7, 0.6)])
    for r in runs:
        rose = r["arm"] == "b"
        r["curve"] = [{"step": 0, "heldout_success": 0.1},
                      {"step": 10, "heldout_success": 0.5 if rose else 0.1}]
    record = claim_record(uninformative_claim(), [0, 1, 2], runs, 1.0, {})
    assert record["verdict"] == "reproduced" and record["uninformative_because"] is None
    assert record["did_not_move"] == ["a"]
    assert record["gain_over_warm_start"]["a"]["moved_seeds"] == 0
    assert "(a never rose above its warm start)" in table_row(record, "r.json")


def test_each_arm_can_measure_the_metric_its_own_way():
    """UFO's comparison: multi-turn Succ@2 (test_success, two sequential attempts) against
    single-turn Pass@2 (test_pass@2, two parallel samples): d is each arm's own measure,
    while a guard still compares one metric across arms."""
    from mtrl.evidence.claim_table import table_row
    from mtrl.evidence.claims import Arm, Guard, claim_record
    claim = uninformative_claim(baseline=Arm("a", ("train.eval_samples=2",),
                                             metric="test_pass@2"),
                                treatment=Arm("b", ("rollout.num_turns=2",)),
                                guard=Guard("test_success_turn1", 0.2))
    runs = [{"arm": arm, "seed": s, "test_success": v, "test_pass@2": p,
             "test_success_turn1": 0.1, "post_sft_test_success": 0.0, "best_step": 10}
            for arm, s, v, p in (("a", 0, 0.9, 0.30), ("a", 1, 0.9, 0.35), ("a", 2, 0.9, 0.25),
                                 ("b", 0, 0.5, 0.90), ("b", 1, 0.6, 0.90), ("b", 2, 0.4, 0.90))]
    record = claim_record(claim, [0, 1, 2], runs, 1.0, {})
    # b's test_success minus a's test_pass@2, seed by seed (hand-computed).
    assert record["difference"]["per_seed"] == pytest.approx([0.20, 0.25, 0.15])
    assert record["difference"]["mean"] == pytest.approx(0.20)
    assert record["arms"]["a"]["metric"] == "test_pass@2"
    assert record["arms"]["a"]["values"] == [0.30, 0.35, 0.25]
    assert record["arms"]["b"]["metric"] == "test_success"
    assert "a test_pass@2" in record["verdict_rule"]
    assert record["guard"]["per_seed"] == pytest.approx([0.0, 0.0, 0.0])
    assert "test_success vs test_pass@2 (test split)" in table_row(record, "r.json")
    with pytest.raises(ValueError, match="Arm.metric must be one of"):
        Arm("c", (), metric="test_pass@k")
    # A sampled measure without the sampling that makes it is refused at construction.
    with pytest.raises(ValueError, match="needs train.eval_samples=2 in its overrides, got 0"):
        uninformative_claim(baseline=Arm("a", (), metric="test_pass@2"))
    with pytest.raises(ValueError, match="got 4"):
        uninformative_claim(baseline=Arm("a", ("train.eval_samples=4",), metric="test_pass@2"))
    uninformative_claim(common=("train.eval_samples=2",),
                        baseline=Arm("a", (), metric="test_pass@2"))
