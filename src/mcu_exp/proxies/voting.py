"""Majority votes with explicit tie rules, shared by P0 (answers) and P3 (verdicts).

Tie rules are conservative throughout: a tie never counts in the model's favour, and
neither does an answer the parser could not read.

- A summary's verdict (P3) is the majority of its *parseable* judgments; a tie between
  CORRECT and INCORRECT is INCORRECT; no parseable judgment at all leaves the summary
  UNPARSEABLE (it has no verdict).
- A program (P3) is High iff strictly more than half of *all* its summaries are CORRECT: a
  summary without a verdict counts as not CORRECT (score = CORRECT / all summaries; a tie is
  Low). A program whose share of summaries with a verdict is below ``proxy.min_verdict_share``
  is flagged ``too_few_verdicts`` (its label stands, and with a minimum of at most 1/2 it is
  necessarily Low).
- A question's answer (P0) is the option chosen most often over *every* sample of every
  rotation, where the samples without a readable answer form a block of their own that the
  winning option must strictly outnumber (so they count as not correct); a tie for the top,
  with another option or with that block, leaves the question unanswered (answered
  wrongly). A question, or a program over all its questions' samples, whose share of
  samples with an answer is below ``proxy.min_answer_share`` is flagged ``too_few_answers``.
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

    score = CORRECT summaries / all summaries (a summary without a verdict counts as not
    CORRECT; 0 when there are none); label = 1 iff score > 1/2 (a tie is Low).
    """
    verdicts = list(verdicts)
    if not verdicts:
        return 0, 0.0
    score = sum(v == CORRECT for v in verdicts) / len(verdicts)
    return int(score > 0.5), score


def decided_share(verdicts: Iterable[str]) -> float:
    """The share of summaries with a verdict (CORRECT or INCORRECT); 0 when there are none."""
    verdicts = list(verdicts)
    if not verdicts:
        return 0.0
    return sum(v in (CORRECT, INCORRECT) for v in verdicts) / len(verdicts)


def too_few(share: float, minimum: float) -> bool:
    """Whether a share of readable answers or verdicts falls below the required ``minimum``."""
    return bool(share < minimum)


def plurality(votes: Iterable[T], abstentions: int = 0) -> tuple[T | None, bool]:
    """``(winner, tied)``: the vote cast most often, if it strictly outnumbers every other vote
    and the ``abstentions`` (samples without a readable vote); else ``(None, tied)`` with
    ``tied`` True when the top count is shared (with another vote or with the abstentions)."""
    ranked = Counter(votes).most_common()
    if not ranked:
        return None, False
    top, count = ranked[0]
    runner_up = max(ranked[1][1] if len(ranked) > 1 else 0, int(abstentions))
    if count > runner_up:
        return top, False
    return None, count == runner_up
