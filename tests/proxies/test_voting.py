"""Majority votes and their tie rules."""

from __future__ import annotations

from mcu_exp.proxies.voting import decided_share, majority, plurality, program_high, summary_verdict, too_few
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


def test_program_high_needs_a_strict_majority_of_all_summaries() -> None:
    assert program_high([CORRECT, CORRECT, INCORRECT]) == (1, 2 / 3)
    assert program_high([CORRECT, INCORRECT]) == (0, 0.5)  # tie → Low
    assert program_high([UNPARSEABLE]) == (0, 0.0)
    assert program_high([]) == (0, 0.0)
    assert program_high([INCORRECT, INCORRECT, CORRECT]) == (0, 1 / 3)


def test_a_summary_without_verdict_counts_as_not_correct() -> None:
    assert program_high([CORRECT, UNPARSEABLE, UNPARSEABLE]) == (0, 1 / 3)
    assert program_high([CORRECT] + [UNPARSEABLE] * 19) == (0, 1 / 20)  # one verdict of 20 is not enough
    assert program_high([CORRECT, CORRECT, UNPARSEABLE]) == (1, 2 / 3)
    assert program_high([CORRECT, CORRECT, UNPARSEABLE, INCORRECT]) == (0, 0.5)


def test_the_share_of_summaries_with_a_verdict_and_its_minimum() -> None:
    assert decided_share([CORRECT, INCORRECT, UNPARSEABLE, UNPARSEABLE]) == 0.5
    assert decided_share([]) == 0.0
    assert not too_few(0.5, 0.5) and too_few(0.45, 0.5)  # the minimum itself is enough
    assert not too_few(0.0, 0.0) and too_few(0.99, 1.0)


def test_plurality_counts_abstentions_against_every_vote() -> None:
    assert plurality([2, 2, 3]) == (2, False)
    assert plurality([2, 2, 3], abstentions=1) == (2, False)
    assert plurality([2, 2, 3], abstentions=2) == (None, True)  # tie with the abstentions
    assert plurality([2, 2, 3], abstentions=5) == (None, False)  # outvoted by them
    assert plurality([2, 3]) == (None, True)
    assert plurality([], abstentions=3) == (None, False)
