"""Human labels: per-evaluation ABU50 aggregated into one understandability label per program.

A participant understood a program (ABU50) when they answered at least half its questions
correctly; one who was asked no questions (``total`` 0) did not. A rule (``labels.rule``) turns
the ABU50 of a program's evaluators, optionally only those of one subgroup (``labels.group``)
and only those asked the questions (``labels.readers=tested``), into the program's label:
1 = understandable.
"""

from __future__ import annotations

import logging
import math
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pandas as pd

from mcu_exp.data.types import GROUPS, Dataset
from mcu_exp.registry import Registry

if TYPE_CHECKING:
    from mcu_exp.config import LabelsConfig

log = logging.getLogger(__name__)

ALL = "all"
TESTED = "tested"
READERS: tuple[str, ...] = (ALL, TESTED)
"""``labels.readers``: every evaluation, or only those whose participant was asked questions."""
TOLERANCE = 1e-9
"""Slack on ``min_fraction`` so that 1/3 written as 0.333333333 still means one third."""


def tested(evaluations: pd.DataFrame) -> pd.Series:
    """Whether each evaluation's participant was asked the questions (``total > 0``)."""
    return (evaluations["total"] > 0).fillna(False).astype(bool)


def abu50(evaluations: pd.DataFrame) -> pd.Series:
    """ABU50 of each evaluation: ``correct / total >= 0.5`` (exact for integer counts); False
    when ``total`` is 0 (not asked, scored as not understood like the Scalabrino source)."""
    return ((2 * evaluations["correct"] >= evaluations["total"]) & tested(evaluations)).astype(bool)


def share_correct(evaluations: pd.DataFrame) -> pd.Series:
    """``correct / total`` of each evaluation; 0 when ``total`` is 0 (nothing is divided)."""
    asked = tested(evaluations)
    share = evaluations["correct"].astype(float) / evaluations["total"].astype(float).where(asked)
    return share.where(asked, 0.0).astype(float)


def _mean_abu50(evaluations: pd.DataFrame) -> pd.Series:
    """Mean ABU50 over each program's evaluations."""
    return abu50(evaluations).astype(float).groupby(evaluations["program_id"]).mean()


# ``labels.rule``: each evaluation table → each program's score in [0, 1]; a plugin adds one
# with ``LABEL_RULES.add("mine", fn)``.
LABEL_RULES: Registry[Callable[[pd.DataFrame], pd.Series]] = Registry("label rule", key="labels.rule")
LABEL_RULES.add("mean_abu50", _mean_abu50)
RULES = LABEL_RULES
"""Per-program score rules; a program is labelled 1 when its score is >= ``min_fraction``."""


OBSERVED, LATENT = "observed", "latent"
TARGETS = (OBSERVED, LATENT)
"""``labels.target``: the rule's label of the answers, or a crossed reader × program model's."""
LATENT_RULES = ("median", "sign")
"""``labels.latent_rule``: the latent label is 1 above the programs' median, or above 0."""


@dataclass(frozen=True, eq=False)
class HumanLabels:
    """One human label per program, with the evidence behind it.

    ``labels`` (0/1), ``fraction`` (the rule's score, e.g. mean ABU50), ``n_evaluators``
    (evaluations counted) and ``correctness`` (mean ``correct / total`` over those evaluations,
    an untested one counting 0: see :func:`share_correct`) are indexed by program id, in
    dataset order; ``dropped`` lists the programs left without evaluators by the group and
    reader filters.
    """

    labels: pd.Series
    fraction: pd.Series
    n_evaluators: pd.Series
    dropped: list[str]
    group: str
    correctness: pd.Series
    rule: str = "mean_abu50"
    min_fraction: float = 0.5
    readers: str = ALL
    target: str = OBSERVED
    model: dict[str, float] = field(default_factory=dict)
    """With ``target`` latent: the fitted model's figures (``latent.reliability``, …)."""

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
        how = f"{self.rule} >= {self.min_fraction:g}"
        if self.target == LATENT:
            how = f"latent understandability, {self.rule}"
        return (
            f"human labels ({how}, group {self.group}, "
            f"readers {self.readers}): {b['positives']} of {b['n']} programs understandable "
            f"({rate}), {b['negatives']} not; {len(self.dropped)} dropped without evaluators"
        )

    def class_warning(self, min_per_class: int = 5) -> str | None:
        """A one-sentence warning when either class has fewer than ``min_per_class`` programs
        (F1, AUC and their bootstrap intervals then say little); None otherwise."""
        b = self.balance()
        return class_size_warning(int(b["positives"]), int(b["negatives"]), min_per_class)


def class_size_warning(positives: int, negatives: int, min_per_class: int = 5) -> str | None:
    """The class-size warning of any label set (all readers, a reader subgroup, a reference
    proxy's labels): one sentence when either class has fewer than ``min_per_class``
    programs; None otherwise."""
    counts = {"understandable": positives, "not understandable": negatives}
    small = [
        f"{n} program is {name}" if n == 1 else f"{n} programs are {name}"
        for name, n in counts.items()
        if n < min_per_class
    ]
    if not small:
        return None
    each = " each" if len(small) > 1 else ""
    return (
        f"only {' and only '.join(small)} (fewer than {min_per_class}{each}): "
        "F1/AUC and their confidence intervals are uninformative"
    )


def check_settings(rule: str, min_fraction: float, group: str, readers: str) -> None:
    """One-line ``ValueError`` naming the first ``labels.*`` setting out of range."""
    if rule not in RULES:
        raise ValueError(RULES.unknown_message(rule))
    if group != ALL and group not in GROUPS:
        raise ValueError(f"labels.group is {group!r}, expected one of: {', '.join((ALL, *GROUPS))}")
    if readers not in READERS:
        raise ValueError(f"labels.readers is {readers!r}, expected one of: {', '.join(READERS)}")
    if not 0.0 <= min_fraction <= 1.0:
        raise ValueError(f"labels.min_fraction is {min_fraction}, expected a number in [0, 1]")


def _per_program(values: pd.Series, kept: list[str], name: str) -> pd.Series:
    series = values.reindex(kept).rename(name)
    series.index.name = "program_id"
    return series


def label_evaluations(dataset: Dataset, group: str = ALL, readers: str = ALL) -> pd.DataFrame:
    """The evaluations a label set counts: those of subgroup ``group`` (``all``: every one) and,
    with ``readers=tested``, only those whose participant was asked the questions."""
    evaluations = dataset.evaluations
    if group != ALL:
        evaluations = evaluations[(evaluations["group"] == group).fillna(False).astype(bool)]
    if readers == TESTED:
        evaluations = evaluations[tested(evaluations)]
    return evaluations


# Label sets already made from each dataset object (frozen, compared by identity): the jobs of
# a sweep share one dataset (:func:`mcu_exp.data.load_dataset`) and ask for the same sets.
_MADE: weakref.WeakKeyDictionary[Dataset, dict[tuple[str, float, str, str], HumanLabels]] = weakref.WeakKeyDictionary()


def _labels(dataset: Dataset, rule: str, min_fraction: float, group: str, readers: str = ALL) -> HumanLabels:
    check_settings(rule, min_fraction, group, readers)
    made = _MADE.setdefault(dataset, {})
    key = (rule, min_fraction, group, readers)
    if key not in made:
        made[key] = _make_labels(dataset, rule, min_fraction, group, readers)
    return made[key]


def _make_labels(dataset: Dataset, rule: str, min_fraction: float, group: str, readers: str) -> HumanLabels:
    evaluations = label_evaluations(dataset, group, readers)
    score = RULES[rule](evaluations)
    by_program = evaluations["program_id"]
    kept = [pid for pid in dataset.program_ids if pid in score.index]
    fraction = _per_program(score, kept, "fraction").astype(float)
    labels = (fraction >= min_fraction - TOLERANCE).astype(int).rename("label")
    counts = evaluations.groupby(by_program).size()
    correctness = share_correct(evaluations).groupby(by_program).mean()
    return HumanLabels(
        labels=labels,
        fraction=fraction,
        n_evaluators=_per_program(counts, kept, "n_evaluators").astype(int),
        dropped=[pid for pid in dataset.program_ids if pid not in score.index],
        group=group,
        correctness=_per_program(correctness, kept, "correctness").astype(float),
        rule=rule,
        min_fraction=float(min_fraction),
        readers=readers,
    )


def human_labels(dataset: Dataset, cfg: LabelsConfig) -> HumanLabels:
    """Per-program human labels from a ``labels`` config (``rule``, ``min_fraction``, ``group``,
    ``readers``)."""
    return _labels(dataset, cfg.rule, float(cfg.min_fraction), cfg.group, cfg.readers)


def subgroup_labels(dataset: Dataset, cfg: LabelsConfig, groups: Iterable[str]) -> dict[str, HumanLabels]:
    """Labels from each subgroup's evaluators alone (``cfg.group`` is ignored).

    A subgroup with no evaluation in the dataset is left out (not an empty label set), with
    one info line for all of them: a dataset without reader groups gets no subgroup at all.
    """
    groups = list(groups)
    for g in groups:
        if g not in GROUPS:
            raise ValueError(f"reader subgroup {g!r} is not one of: {', '.join(GROUPS)}")
    present = set(dataset.evaluations["group"].dropna())
    absent = [g for g in groups if g not in present]
    if absent and not present:
        log.info("no reader group in the evaluations of dataset %s: subgroups not evaluated", dataset.name)
    elif absent:
        log.info(
            "no %s reader in the evaluations of dataset %s: those subgroups not evaluated",
            ", ".join(absent),
            dataset.name,
        )
    return {g: _labels(dataset, cfg.rule, float(cfg.min_fraction), g, cfg.readers) for g in groups if g in present}
