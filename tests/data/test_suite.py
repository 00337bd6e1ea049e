"""Task suites: the registry, three disjoint splits, the family's unseen test
inputs, demonstrations from the suite's own train split, file-backed suites."""

import pytest

from mtrl.data.suite import SUITES, DataConfig, build_suite, suite_names
from mtrl.data.synthetic.terms import TERMS
from mtrl.envs.code import CodeEnv, CodeEnvConfig
from mtrl.envs.sandbox import SandboxPool
from mtrl.training.config import base_config

FAMILY = dict(probe_form="difference", heldout_by="function", offset_range=(0, 9),
              terms=("x", "2x", "3x", "4x", "neg"), probe_xs=(1,),
              test_xs=(-3, -2, -1, 1, 2, 3, 4), test_terms=("neg2x", "neg3x", "neg4x"),
              test_offset_range=(0, 9))


def family(run_seed=0, **options):
    data = DataConfig(name="intfn", test_split="test", num_train=300, num_eval=40, num_test=40,
                      options={**FAMILY, **options})
    return build_suite(data, run_seed)


def test_registry_names_every_suite():
    assert set(suite_names()) >= {"intfn", "gsm8k", "textworld", "humaneval", "mbpp",
                                  "mbpp_sanitized", "coop_humaneval"}
    # Suites in modules of their own register on import, which build_suite does.
    build_suite(DataConfig(name="intfn", num_train=2, num_eval=2, num_test=2), 0)
    assert "intfn" in SUITES
    with pytest.raises(ValueError, match="name must be one of .*, got 'nope'"):
        DataConfig(name="nope")


def test_family_splits_are_disjoint_and_test_inputs_are_unseen():
    suite = family()
    train, validation, test = (suite.tasks(s) for s in ("train", "validation", "test"))
    assert (len(train), len(validation), len(test)) == (300, 40, 40)
    functions = [{t.canonical_solution for t in split} for split in (train, validation, test)]
    assert not functions[0] & functions[1] and not functions[2] & (functions[0] | functions[1])
    # Test: coefficients that no train or validation task shows, so the failing probe
    # (the helper's turn-2 observation) and the answer are new.
    seen_probes = {t.tests[0] for t in train + validation}
    for task in test:
        assert task.tests[0] not in seen_probes
        offset = int(task.prompt.rsplit("== ", 1)[1].rstrip("."))
        assert 0 <= offset <= 9
        k = int(task.tests[0].rsplit("== ", 1)[1])
        assert k in {TERMS.get(t).coefficient for t in FAMILY["test_terms"]} == {-2, -3, -4}
        namespace = {}
        exec(task.canonical_solution, namespace)
        for line in task.tests:
            exec(line, namespace)
    # Asking for a test split changes no train or validation task.
    without = build_suite(DataConfig(name="intfn", num_train=300, num_eval=40,
                                     options=FAMILY), 0)
    assert without.tasks("test") == [] and without.tasks("train") == train
    assert without.tasks("validation") == validation


def test_unseen_offsets_give_unseen_prompts():
    # The stricter option: offsets outside 0..9 as well, so the prompt is new too.
    suite = family(test_terms=("5x", "6x", "7x"), test_offset_range=(10, 14))
    train, validation, test = (suite.tasks(s) for s in ("train", "validation", "test"))
    seen_prompts = {t.prompt for t in train + validation}
    assert test and not {t.prompt for t in test} & seen_prompts


def test_test_members_must_be_outside_train():
    with pytest.raises(ValueError, match="test members also in train"):
        family(test_terms=("x",), test_offset_range=(0, 3))


def test_demonstrations_come_from_the_data_seed_train_split():
    """Regression: the family's SFT data rebuilt the train split from config.seed,
    ignoring data.options.seed, so with different seeds SFT trained on held-out
    functions. Every demonstration's prompt must be a train prompt of the split the
    run trains on."""
    c = base_config()
    suite = family(run_seed=0, seed=5)  # run seed 0, data seed 5
    assert suite.tasks("train") != family(run_seed=0).tasks("train")
    sft = c.sft
    with SandboxPool(num_workers=1) as pool:
        env = CodeEnv(CodeEnvConfig(num_agents=2, feedback_style="compact",
                                    templates=suite.templates("tiny")), sandbox=pool)
        pairs = suite.demonstrations(env, 2, sft)
    first_turn = [(h, m) for (p, h), (_, m) in zip(*pairs) if isinstance(p, str)]
    assert len(first_turn) == 300
    demonstrated = {points(h + m) for h, m in first_turn}
    train, validation = (suite.tasks(s) for s in ("train", "validation"))
    assert demonstrated == {points(t.canonical_solution) for t in train}
    assert not demonstrated & {points(t.canonical_solution) for t in validation}


def points(program: str) -> tuple[int, int]:
    """(f(0), f(1)): a linear family member's offset and coefficient."""
    namespace = {}
    exec(program, namespace)
    return namespace["f"](0), namespace["f"](1)


def test_file_suite_slices_and_caps_splits():
    data = DataConfig(name="humaneval", train_split="test[:100]", eval_split="test[100:140]",
                      test_split="test[140:]", num_eval=30, num_test=100)
    suite = build_suite(data, 0)
    train, validation, test = (suite.tasks(s) for s in ("train", "validation", "test"))
    assert (len(train), len(validation), len(test)) == (100, 30, 24)
    ids = [{t.task_id for t in split} for split in (train, validation, test)]
    assert not (ids[0] & ids[1] or ids[0] & ids[2] or ids[1] & ids[2])
    with pytest.raises(ValueError, match="templates must be one of default, got 'tiny'"):
        suite.templates("tiny")
    sft = base_config().sft
    with pytest.raises(ValueError, match="one agent only"):
        suite.check_sft(sft, 2)
