"""The ``scorer`` section's value checked before a job runs: a scorer kind that exists."""

from __future__ import annotations

from collections.abc import Iterator

from mcu_exp.config import ScorerConfig
from mcu_exp.scoring.factory import SCORERS


def scorer_problems(scorer: ScorerConfig) -> Iterator[str]:
    """An unknown ``scorer.kind``, as a ``key=value: what is expected`` message."""
    if scorer.kind not in SCORERS:
        yield SCORERS.unknown_message(scorer.kind)
