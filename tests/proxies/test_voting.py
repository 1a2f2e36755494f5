"""Majority votes and their tie rules."""

from __future__ import annotations

from mcu_exp.proxies.voting import majority, program_high, summary_verdict
from mcu_exp.scoring.parsing import CORRECT, INCORRECT, UNPARSEABLE


def test_majority_and_ties() -> None:
    assert majority([1, 2, 2, 3]) == 2
    assert majority([1, 1, 2, 2]) is None
    assert majority([1, 1, 2, 2], tie=-1) == -1
    assert majority([]) is None
    assert majority(["x"]) == "x"


def test_summary_verdict_ignores_unparseable_judgments() -> None:
    votes = [CORRECT, UNPARSEABLE, UNPARSEABLE, UNPARSEABLE, INCORRECT, CORRECT]
    assert summary_verdict(votes) == CORRECT


def test_summary_tie_is_incorrect() -> None:
    assert summary_verdict([CORRECT, INCORRECT]) == INCORRECT
    assert summary_verdict([CORRECT, INCORRECT, UNPARSEABLE]) == INCORRECT


def test_summary_without_parseable_judgment_has_no_verdict() -> None:
    assert summary_verdict([UNPARSEABLE, UNPARSEABLE]) == UNPARSEABLE
    assert summary_verdict([]) == UNPARSEABLE


def test_program_high_needs_a_strict_majority_of_decided_summaries() -> None:
    assert program_high([CORRECT, CORRECT, INCORRECT]) == (1, 2 / 3)
    assert program_high([CORRECT, INCORRECT]) == (0, 0.5)  # tie → Low
    assert program_high([CORRECT, UNPARSEABLE, UNPARSEABLE]) == (1, 1.0)  # undecided summaries left out
    assert program_high([UNPARSEABLE]) == (0, 0.0)
    assert program_high([INCORRECT, INCORRECT, CORRECT]) == (0, 1 / 3)
