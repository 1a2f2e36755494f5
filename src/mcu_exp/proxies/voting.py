"""Majority votes with explicit tie rules, shared by P0 (answers) and P3 (verdicts).

Tie rules are conservative throughout: a tie never counts in the model's favour.

- A summary's verdict (P3) is the majority of its *parseable* judgments; a tie between
  CORRECT and INCORRECT is INCORRECT; no parseable judgment at all leaves the summary
  UNPARSEABLE (it has no verdict).
- A program (P3) is High iff strictly more than half of its summaries *with a verdict* are
  CORRECT (a tie is Low; no summary with a verdict is Low, flagged in the records).
- A question's answer (P0) is the option chosen most often over every parseable sample of
  every rotation; a tie for the top leaves the question unanswered (so answered wrongly).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable
from typing import TypeVar

from mcu_exp.scoring.parsing import CORRECT, INCORRECT, UNPARSEABLE

T = TypeVar("T", bound=Hashable)


def majority(votes: Iterable[T], tie: T | None = None) -> T | None:
    """The most frequent vote; ``tie`` when several share the top count, None when there are no votes."""
    counts = Counter(votes).most_common()
    if not counts:
        return None
    if len(counts) > 1 and counts[0][1] == counts[1][1]:
        return tie
    return counts[0][0]


def summary_verdict(judgments: Iterable[str]) -> str:
    """CORRECT / INCORRECT by majority of the parseable judgments (tie → INCORRECT), else UNPARSEABLE."""
    parseable = [j for j in judgments if j in (CORRECT, INCORRECT)]
    if not parseable:
        return UNPARSEABLE
    result = majority(parseable, tie=INCORRECT)
    return INCORRECT if result is None else result


def program_high(verdicts: Iterable[str]) -> tuple[int, float]:
    """``(label, score)`` of a program from its summaries' verdicts.

    score = share of CORRECT among the summaries with a verdict (0 when none has one);
    label = 1 iff score > 1/2 (a tie is Low).
    """
    decided = [v for v in verdicts if v in (CORRECT, INCORRECT)]
    if not decided:
        return 0, 0.0
    score = sum(v == CORRECT for v in decided) / len(decided)
    return int(score > 0.5), score
