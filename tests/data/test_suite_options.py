"""The shared checks of a suite's data.options (mtrl/data/suite_options.py): one-line
errors naming the field and the suite, and the suites that call them."""

import pytest

from mtrl.data.suite import DataConfig, build_suite
from mtrl.data.suite_options import check_generated_options, check_known_options

VALID = ("seed", "width")


def data(path="", **options):
    return DataConfig(name="arith", path=path, options=options)


def test_known_options_pass_and_unknown_ones_are_named_with_the_suite():
    check_known_options("toy", {}, VALID)
    check_known_options("toy", {"seed": 1, "width": 2}, VALID)
    with pytest.raises(ValueError) as error:
        check_known_options("toy", {"wdith": 2, "seed": 1, "extra": 0}, VALID)
    assert str(error.value) == ("config.data.options: unknown ['extra', 'wdith'] for toy; "
                                "valid: ['seed', 'width']")


def test_generated_options_accept_a_seed_of_zero_or_more_or_none():
    for options in ({}, {"seed": 0}, {"seed": 7, "width": 3}):
        check_generated_options("toy", data(**options), VALID)


@pytest.mark.parametrize("seed", [-1, 1.0, "3", True, None])
def test_generated_options_refuse_a_seed_that_is_not_an_int_of_zero_or_more(seed):
    with pytest.raises(ValueError) as error:
        check_generated_options("toy", data(seed=seed), VALID)
    assert str(error.value) == f"config.data.options.seed: an int >= 0 for toy, got {seed!r}"


def test_generated_options_refuse_a_path_and_unknown_options():
    with pytest.raises(ValueError, match=r"^config.data.path: toy games are generated; "
                                         r"leave it ''$"):
        check_generated_options("toy", data(path="x"), VALID, items="games")
    with pytest.raises(ValueError, match=r"unknown \['kind'\] for toy"):
        check_generated_options("toy", data(kind="add2"), VALID)


@pytest.mark.parametrize("suite", ["arith", "calc", "guess", "textworld"])
def test_generated_suites_name_themselves_in_the_shared_errors(suite):
    def build(path="", **options):
        return build_suite(DataConfig(name=suite, path=path, options=options), seed=0)
    cases = [(dict(shuffle=True), rf"^config.data.options: unknown \['shuffle'\] for {suite}; "),
             (dict(seed=-1), rf"^config.data.options.seed: an int >= 0 for {suite}, got -1$"),
             (dict(path="x"), rf"^config.data.path: {suite} \w+ are generated; leave it ''$")]
    for options, message in cases:
        with pytest.raises(ValueError, match=message):
            build(**options)


@pytest.mark.parametrize("suite", ["gsm8k", "openenv"])
def test_other_suites_name_themselves_for_unknown_options(suite):
    with pytest.raises(ValueError, match=rf"unknown \['shuffle'\] for {suite}; valid: "):
        build_suite(DataConfig(name=suite, path="x", options={"shuffle": True}), seed=0)
