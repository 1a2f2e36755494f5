"""Multiple-choice answers (P0): letters, cues, quoted option text; out-of-range letters rejected."""

from __future__ import annotations

import pytest

from mcu_exp.scoring.parsing import option_letters, parse_choice

OPTIONS = ["Returns the minimum value", "Returns the maximum value", "Throws an exception", "Nothing"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("B", 1),
        ("b", 1),
        ("B.", 1),
        ("(B)", 1),
        ("b)", 1),
        ("[B]", 1),
        ("**B**", 1),
        ("B) Returns the maximum", 1),
        ("Answer: B", 1),
        ("answer: b", 1),
        ("The answer is B.", 1),
        ("The answer is: C", 2),
        ("The correct answer is (D).", 3),
        ("I think the answer is (d)", 3),
        ("Option A", 0),
        ("option c", 2),
        ("A", 0),
        ("a", 0),
        ("A.", 0),
        ("A. Returns the minimum value", 0),
        ("C: throws", 2),
        ("D. Nothing", 3),
        ("B is correct because the loop keeps the largest.", 1),
        ("C the method throws", 2),
        ("Returns the maximum value", 1),
        ("It returns the minimum value.", 0),
        ("throws an exception", 2),
        ("The choice is B", 1),
        ("  \n B \n", 1),
    ],
)
def test_readable_answers(text: str, expected: int) -> None:
    assert parse_choice(text, OPTIONS) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "E",
        "(F)",
        "Answer: E",
        "The answer is Z.",  # letters beyond the four options
        "A method that returns something",
        "I am not sure",
        "Yes.",
        "answers are hard",
        "the answer is a list of values",
        "Returns the",
        "It does one thing or another",
    ],
)
def test_unreadable_answers(text: str) -> None:
    assert parse_choice(text, OPTIONS) is None


def test_a_letter_beyond_the_options_is_unparseable_even_for_fewer_options() -> None:
    assert parse_choice("C", ["yes", "no"]) is None
    assert parse_choice("B", ["yes", "no"]) == 1


def test_option_text_inside_another_keeps_the_longer_option() -> None:
    options = ["3", "23", "3456", "1"]
    assert parse_choice("23", options) == 1
    assert parse_choice("It expects 3456", options) == 2


def test_option_text_matching_two_unrelated_options_is_unparseable() -> None:
    assert parse_choice("Returns the minimum value or throws an exception", OPTIONS) is None


def test_quoted_option_text_matches_despite_quotes() -> None:
    options = ['" &"', '", "', '" and"', '" |"']
    assert parse_choice('" and"', options) == 2


def test_letters() -> None:
    assert option_letters(4) == "ABCD"
    with pytest.raises(ValueError, match="1..26"):
        option_letters(27)
