"""The synthetic integer-function family: terms, members, ambiguity, probes."""

import pytest

from mtrl.data.synthetic import (TERMS, FamilyConfig, IntFunction, consistent_members,
                                 separating_probes)


def test_every_term_expression_matches_its_function():
    # A second implementation: Python evaluates the source each term claims to be.
    for name in TERMS:
        term = TERMS.get(name)
        for x in range(-12, 13):
            assert eval(term.expression, {}, {"x": x}) == term.apply(x), (name, x)
        assert term.apply(0) == 0  # the family's ambiguity at x = 0 relies on it


@pytest.mark.parametrize("term,offset,expected", [
    ("2x", 7, "2*x+7"), ("square", -3, "x*x-3"), ("neg", 0, "-x"), ("mod3", 4, "x%3+4")])
def test_expression_rendering_and_value(term, offset, expected):
    function = IntFunction(term, offset)
    assert function.expression == expected
    for x in range(-6, 7):
        assert eval(expected, {}, {"x": x}) == function(x)


def test_one_example_at_zero_fits_every_term():
    config = FamilyConfig()
    fits = consistent_members(config, 0, 7)
    assert sorted(f.expression for f in fits) == ["-x+7", "2*x+7", "3*x+7", "x*x+7", "x+7"]
    # Away from 0 the offset must absorb g(x0): f(2) == 7 fits x+5, 2*x+3, 3*x+1, x*x+3,
    # -x+9 (all offsets within -9..9).
    assert sorted(f.expression for f in consistent_members(config, 2, 7)) == [
        "-x+9", "2*x+3", "3*x+1", "x*x+3", "x+5"]


def test_separating_probes_identify_the_function():
    config = FamilyConfig()
    function = IntFunction("x", 1)
    # Rivals with f(0) == 1: 2x+1, 3x+1, x*x+1, -x+1. At x = 1, x*x+1 also gives 2;
    # at x = -1, only x+1 gives 0.
    probes = separating_probes(config, function, 0)
    assert 1 not in probes and -1 in probes
    for probe in probes:
        matching = [f for f in consistent_members(config, 0, 1) if f(probe) == function(probe)]
        assert matching == [function]


def test_probe_xs_restrict_the_probe_and_linear_terms_at_one_read_as_coefficients():
    config = FamilyConfig(terms=("x", "2x", "3x", "4x", "neg"), probe_xs=(1,))
    for term in config.terms:
        function = IntFunction(term, 5)
        assert separating_probes(config, function, 0) == (1,)
        # f(1) - f(0) is the term's coefficient: the feedback's number names the term.
        assert function(1) - function(0) == {"x": 1, "2x": 2, "3x": 3, "4x": 4, "neg": -1}[term]
    # With the default terms x*x and x agree at 1, so 1 separates neither of them.
    assert separating_probes(FamilyConfig(probe_xs=(1,)), IntFunction("x", 0), 0) == ()
    with pytest.raises(ValueError, match="probe_xs must be a subset of test_xs"):
        FamilyConfig(probe_xs=(7,))


def test_family_config_validation():
    with pytest.raises(KeyError, match="must be one of"):
        FamilyConfig(terms=("x", "cubic"))
    with pytest.raises(ValueError, match="distinct"):
        FamilyConfig(terms=("x", "x"))
    with pytest.raises(ValueError, match="fewer than num_tests"):
        FamilyConfig(test_xs=(1, 2), num_tests=3)
    with pytest.raises(ValueError, match="heldout_offset_fraction"):
        FamilyConfig(heldout_offset_fraction=1.0)
    with pytest.raises(ValueError, match="entry_point"):
        FamilyConfig(entry_point="aux")
    with pytest.raises(TypeError, match="tuple"):
        FamilyConfig(example_xs=[0])
    assert FamilyConfig(offset_range=(-9, 9)).num_heldout_offsets == 5
