"""Judge verdicts (P3): every phrasing a model uses, and the unreadable ones kept apart."""

from __future__ import annotations

import pytest

from mcu_exp.scoring.parsing import CORRECT, INCORRECT, UNPARSEABLE, parse_verdict


@pytest.mark.parametrize(
    "text",
    [
        "CORRECT",
        "correct",
        "Correct.",
        "correct!",
        "**Correct**",
        "`CORRECT`",
        "  CORRECT\n",
        "The summary is correct.",
        "The summary is correct",
        "Answer: CORRECT",
        "Verdict: **correct**",
        "Final answer: Correct",
        "CORRECT or INCORRECT: CORRECT",
        "Correct - it describes the loop well",
        "The summary correctly reflects the method's intent.",
        "It is not incorrect.",
        "I would say the summary is correct.",
        "Yes, it is correct.",
        "# Correct",
        "Correct, although it could mention the exception.",
    ],
)
def test_correct(text: str) -> None:
    assert parse_verdict(text) == CORRECT


@pytest.mark.parametrize(
    "text",
    [
        "INCORRECT",
        "incorrect",
        "incorrect.",
        "Incorrect!",
        "**Incorrect**",
        "**INCORRECT**.",
        "INCORRECT - because the method also writes the file",
        "INCORRECT: it is correct only for lists",
        "not correct",
        "Not correct.",
        "The summary is not correct.",
        "It isn't correct.",
        "It isn’t correct",
        "It isnt correct",
        "The summary does not correctly reflect the intent.",
        "No, the summary is incorrect.",
        "The summary is not entirely correct.",
        "The summary is partially correct.",
        "Answer: Incorrect",
        "CORRECT or INCORRECT? INCORRECT",
        "The summary describes it incorrectly.",
        "never correct",
        "Verdict - INCORRECT",
    ],
)
def test_incorrect(text: str) -> None:
    assert parse_verdict(text) == INCORRECT


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "Yes",
        "No",
        "The method sorts a list.",
        "Correctness: high",
        "It is correct in part but incorrect elsewhere in a way",  # no leading verdict; mentions disagree
        "The first half is correct, the second half is incorrect.",
        "CORRECT or INCORRECT",
        "I cannot tell.",
    ],
)
def test_unparseable_is_its_own_class(text: str) -> None:
    assert parse_verdict(text) == UNPARSEABLE


@pytest.mark.parametrize(
    "text",
    [
        "I would not say it is correct",
        "I don't think the summary is correct",
        "it is not really correct",
        "I do not believe the summary is correct.",
        "I wouldn't call this summary correct.",
        "I can't say that the summary is correct.",
        "The summary cannot be correct.",
        "I don't really think that this summary is fully correct.",
        "I do not think it's correct",
    ],
)
def test_a_negation_at_a_distance_makes_it_incorrect(text: str) -> None:
    assert parse_verdict(text) == INCORRECT


@pytest.mark.parametrize(
    "text",
    [
        "correct",
        "The summary is correct.",
        "CORRECT: it does not crash",
        "I don't think it is incorrect.",
        "I do not think it's not correct.",
        "It does not crash and the summary is correct.",
        "I do not think so. The summary is correct.",
        "It does not mention the cache; the summary is correct.",
        "I don't think it misses anything, but the summary is correct.",
        "No, it is correct.",
        "It does not say what it returns and is otherwise correct.",
    ],
)
def test_a_negation_in_another_clause_leaves_it_correct(text: str) -> None:
    assert parse_verdict(text) == CORRECT


def test_a_leading_verdict_wins_over_later_mentions() -> None:
    assert parse_verdict("Correct. An incorrect reading would miss the loop.") == CORRECT
    assert parse_verdict("Incorrect. The summary is correct about the loop only.") == INCORRECT


def test_none_is_unparseable() -> None:
    assert parse_verdict(None) == UNPARSEABLE  # type: ignore[arg-type]
