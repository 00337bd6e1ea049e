"""The family's iid test split (FamilyConfig.iid_test): held-out functions drawn like
validation's, disjoint from train and validation by function and by task text, fixed
by the data seed; the unseen-number members move to "ood_test" unchanged."""

import collections

import pytest

from mtrl.data.suite import DataConfig, build_suite, extra_test_splits
from mtrl.data.synthetic import FamilyConfig, make_splits

# The embedded default's family (experiments/configs/default.py).
DEFAULT = dict(probe_form="difference", heldout_by="function", offset_range=(0, 9),
               terms=("x", "2x", "3x", "4x", "neg"), probe_xs=(1,),
               test_xs=(-3, -2, -1, 1, 2, 3, 4),
               test_terms=("neg2x", "neg3x", "neg4x"), test_offset_range=(0, 9))
BY_OFFSET = dict(heldout_by="offset", offset_range=(-9, 9))


def _splits(options, seed, iid=True, num_train=600):
    family = FamilyConfig(**options, iid_test=iid)
    ood = 80 if family.test_members() else 0
    return make_splits(family, num_train=num_train, num_heldout=80, seed=seed,
                       num_test=80 if iid else ood, num_ood_test=ood if iid else 0)


def _text(item):
    return item.task.prompt, item.task.tests


@pytest.mark.parametrize("options", [DEFAULT, BY_OFFSET], ids=["by_function", "by_offset"])
@pytest.mark.parametrize("seed", [0, 5])
def test_three_splits_are_disjoint_by_function_and_task_text(options, seed):
    s = _splits(options, seed)
    parts = {"train": s.train, "validation": s.heldout, "test": s.test}
    functions = {name: {t.function for t in items} for name, items in parts.items()}
    texts = {name: {_text(t) for t in items} for name, items in parts.items()}
    for a, b in (("train", "validation"), ("train", "test"), ("validation", "test")):
        assert not functions[a] & functions[b], (a, b)
        assert not texts[a] & texts[b], (a, b)
    ids = [t.task.task_id for items in parts.values() for t in items]
    assert len(set(ids)) == len(ids)
    if options is BY_OFFSET:  # no held-out prompt occurs in train (with another answer)
        prompts = {t.task.prompt for t in s.train}
        assert not prompts & {t.task.prompt for t in s.heldout + s.test}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_test_functions_are_drawn_like_validation(seed):
    """Seen numbers, unseen pairs: every test term and offset occurs in train; one test
    term per offset, each term at |offsets| / |terms| = 2 offsets (validation's deal);
    same task form as validation (prompt, difference probe, number of tests)."""
    family = FamilyConfig(**DEFAULT, iid_test=True)
    s = _splits(DEFAULT, seed, num_train=900)
    test = {t.function for t in s.test}
    validation = {t.function for t in s.heldout}
    assert {f.term for f in test} <= set(family.terms)
    assert {f.offset for f in test} == set(family.offsets) == {f.offset for f in validation}
    assert {f.term for f in test} <= {t.function.term for t in s.train}
    assert len(test) == len(validation) == family.num_offsets
    assert set(collections.Counter(f.term for f in test).values()) == {2}
    for item in s.test:
        assert item.split == "test" and item.task.task_id.startswith("intfn/test/")
        assert item.task.prompt == f"Write f(x) with f(0) == {item.function.offset}."
        assert item.task.tests[0].startswith("assert f(1) - f(0) == ")
        assert len(item.task.tests) == len(s.heldout[0].task.tests)
    # Fixed by the data seed; another seed deals other pairs.
    assert _splits(DEFAULT, seed, num_train=900).test == s.test
    assert {t.function for t in _splits(DEFAULT, seed + 10, num_train=900).test} != test


@pytest.mark.parametrize("options", [DEFAULT, BY_OFFSET], ids=["by_function", "by_offset"])
def test_validation_is_unchanged_and_the_old_test_becomes_ood_test(options):
    before, after = _splits(options, 3, iid=False), _splits(options, 3)
    assert after.heldout == before.heldout
    assert {t.function for t in after.train} < {t.function for t in before.train}
    if options is DEFAULT:
        assert [_text(t) for t in after.ood_test] == [_text(t) for t in before.test]
        assert {t.function.term for t in after.ood_test} == {"neg2x", "neg3x", "neg4x"}
        assert all(t.split == "ood_test" for t in after.ood_test)


def test_suite_declares_ood_test_beside_test():
    data = DataConfig(name="intfn", test_split="test", num_train=300, num_eval=20,
                      num_test=20, options=dict(DEFAULT, iid_test=True))
    suite = build_suite(data, 4)
    extra = extra_test_splits(suite)
    assert list(extra) == ["ood_test"] and len(extra["ood_test"]) == 20
    test = suite.tasks("test")
    assert not {_text_of(t) for t in test} & {_text_of(t) for t in extra["ood_test"]}
    assert extra_test_splits(build_suite(DataConfig(
        name="intfn", test_split="", num_train=300, num_eval=20,
        options=dict(DEFAULT, iid_test=True)), 4)) == {}
    # Without iid_test the unseen-number tasks are the test split itself: nothing extra.
    assert extra_test_splits(build_suite(DataConfig(
        name="intfn", test_split="test", num_train=300, num_eval=20, num_test=20,
        options=DEFAULT), 4)) == {}


def _text_of(task):
    return task.prompt, task.tests


def test_iid_test_options_are_checked():
    with pytest.raises(ValueError, match="iid_test must be a bool"):
        FamilyConfig(iid_test=1)
    with pytest.raises(ValueError, match="needs >= 3 terms"):
        FamilyConfig(terms=("x", "neg"), heldout_by="function", iid_test=True)
    with pytest.raises(ValueError, match="leaves no train offset"):
        FamilyConfig(offset_range=(0, 1), iid_test=True)
    with pytest.raises(ValueError, match="num_ood_test"):
        make_splits(FamilyConfig(**DEFAULT), num_train=10, num_heldout=5, num_ood_test=5)
