"""Answer extraction and normalisation on hand-written completions."""

import pytest

from mtrl.envs.math import answers_match, boxed_contents, extract_answer, normalize_number


@pytest.mark.parametrize("text, expected", [
    ("so the total is \\boxed{1,080}.", "1080"),
    ("48/2 = 24\n#### 72", "72"),
    ("I think 3 apples, no wait, 4.0", "4"),
    ("\\boxed{\\frac{1}{3}}", "1/3"),
    ("\\boxed{\\dfrac{3}{4}}", "0.75"),
    ("3/4", "0.75"),
    ("She earned $12.50 in total", "12.5"),
    ("-0", "0"),
    ("#### 1,234.00", "1234"),
    ("first \\boxed{5} then \\boxed{7}", "7"),  # the last box wins
    ("\\boxed{x} but the answer is 9", "9"),  # a box without a number falls through
    ("\\boxed{12} and 99 later", "12"),  # a box beats a later bare number
    ("#### 8 and \\boxed{6}", "6"),  # a box beats ####
    ("no numbers here", None),
    ("", None),
    ("\\boxed{3", "3"),  # unclosed box: the last number
])
def test_extract_answer(text, expected):
    assert extract_answer(text) == expected


def test_boxed_contents_balances_braces():
    assert boxed_contents("\\boxed{\\frac{1}{2}} and \\boxed{3}") == ["\\frac{1}{2}", "3"]
    assert boxed_contents("\\boxed{open") == []


@pytest.mark.parametrize("raw, canonical", [
    ("1080", "1080"), ("1,080", "1080"), ("5.50", "5.5"), ("2/4", "0.5"), ("1/0", None),
    ("-3", "-3"), ("0.125", "0.125"), ("2/3", "2/3"),
])
def test_normalize_number(raw, canonical):
    assert normalize_number(raw) == canonical


def test_answers_match_normalises_both_sides():
    assert answers_match("1080", "1,080")
    assert answers_match("0.5", "1/2")
    assert not answers_match(None, "3")
    assert not answers_match("3", "4")


def test_nested_and_many_unclosed_boxes():
    assert boxed_contents("\\boxed{a \\boxed{1} b}") == ["a \\boxed{1} b", "1"]
    assert boxed_contents("} \\boxed{2}") == ["2"]
    assert boxed_contents("\\boxed{" * 20_000 + "5") == []  # linear time, no answer box
