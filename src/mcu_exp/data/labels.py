"""Human labels: per-evaluation ABU50 aggregated into one understandability label per program.

A participant understood a program (ABU50) when they answered at least half its questions
correctly. A rule (``labels.rule``) turns the ABU50 of a program's evaluators, optionally only
those of one subgroup (``labels.group``), into the program's label: 1 = understandable.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd

from mcu_exp.data.types import GROUPS, Dataset

if TYPE_CHECKING:
    from mcu_exp.config import LabelsConfig

ALL = "all"
TOLERANCE = 1e-9
"""Slack on ``min_fraction`` so that 1/3 written as 0.333333333 still means one third."""


def abu50(evaluations: pd.DataFrame) -> pd.Series:
    """ABU50 of each evaluation: ``correct / total >= 0.5`` (computed exactly in integers)."""
    return (2 * evaluations["correct"] >= evaluations["total"]).astype(bool)


def _mean_abu50(evaluations: pd.DataFrame) -> pd.Series:
    """Mean ABU50 over each program's evaluations."""
    return abu50(evaluations).astype(float).groupby(evaluations["program_id"]).mean()


RULES: dict[str, Callable[[pd.DataFrame], pd.Series]] = {"mean_abu50": _mean_abu50}
"""Per-program score rules; a program is labelled 1 when its score is >= ``min_fraction``."""


@dataclass(frozen=True, eq=False)
class HumanLabels:
    """One human label per program, with the evidence behind it.

    ``labels`` (0/1), ``fraction`` (the rule's score, e.g. mean ABU50) and ``n_evaluators``
    (evaluations counted) are indexed by program id, in dataset order; ``dropped`` lists the
    programs left without evaluators by the group filter.
    """

    labels: pd.Series
    fraction: pd.Series
    n_evaluators: pd.Series
    dropped: list[str]
    group: str
    rule: str = "mean_abu50"
    min_fraction: float = 0.5

    def balance(self) -> dict[str, float]:
        """Class balance: ``n``, ``positives``, ``negatives``, ``positive_rate`` (NaN if n=0)."""
        n = len(self.labels)
        positives = int(self.labels.sum())
        return {
            "n": n,
            "positives": positives,
            "negatives": n - positives,
            "positive_rate": positives / n if n else math.nan,
        }

    def describe(self) -> str:
        """One line for a console: how many programs are understandable under which rule."""
        b = self.balance()
        rate = f"{100 * b['positive_rate']:.1f}%" if b["n"] else "n/a"
        return (
            f"human labels ({self.rule} >= {self.min_fraction:g}, group {self.group}): "
            f"{b['positives']} of {b['n']} programs understandable ({rate}), "
            f"{b['negatives']} not; {len(self.dropped)} dropped without evaluators"
        )


def _labels(dataset: Dataset, rule: str, min_fraction: float, group: str) -> HumanLabels:
    if rule not in RULES:
        raise ValueError(f"labels.rule is {rule!r}, expected one of: {', '.join(sorted(RULES))}")
    if group != ALL and group not in GROUPS:
        raise ValueError(f"labels.group is {group!r}, expected one of: {', '.join((ALL, *GROUPS))}")
    if not 0.0 <= min_fraction <= 1.0:
        raise ValueError(f"labels.min_fraction is {min_fraction}, expected a number in [0, 1]")
    evaluations = dataset.evaluations
    if group != ALL:
        evaluations = evaluations[(evaluations["group"] == group).fillna(False).astype(bool)]
    score = RULES[rule](evaluations)
    counts = evaluations.groupby("program_id").size()
    kept = [pid for pid in dataset.program_ids if pid in score.index]
    fraction = score.reindex(kept).astype(float).rename("fraction")
    fraction.index.name = "program_id"
    labels = (fraction >= min_fraction - TOLERANCE).astype(int).rename("label")
    n_evaluators = counts.reindex(kept).astype(int).rename("n_evaluators")
    n_evaluators.index.name = "program_id"
    dropped = [pid for pid in dataset.program_ids if pid not in score.index]
    return HumanLabels(
        labels=labels,
        fraction=fraction,
        n_evaluators=n_evaluators,
        dropped=dropped,
        group=group,
        rule=rule,
        min_fraction=float(min_fraction),
    )


def human_labels(dataset: Dataset, cfg: LabelsConfig) -> HumanLabels:
    """Per-program human labels from a ``labels`` config (``rule``, ``min_fraction``, ``group``)."""
    return _labels(dataset, rule=cfg.rule, min_fraction=float(cfg.min_fraction), group=cfg.group)


def subgroup_labels(dataset: Dataset, cfg: LabelsConfig, groups: Iterable[str]) -> dict[str, HumanLabels]:
    """Labels from each subgroup's evaluators alone (``cfg.group`` is ignored)."""
    return {g: _labels(dataset, cfg.rule, float(cfg.min_fraction), g) for g in groups}
