"""The plain-sentence verdict printed under a results table.

Two questions a reader asks first: does the proxy's F1 beat labelling every program
understandable (the always-1 baseline), and does its ranking separate the classes better
than chance? "Beats" means the whole confidence interval lies above the baseline; an
interval that contains the baseline does not beat it, whatever the point value. The
ranking question uses AUC(score) when the proxy has a continuous score, else AUC(labels);
it separates the classes when the interval excludes 0.5.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from mcu_exp.evaluation.registry import CHANCE_AUC, PRIMARY, header, metric

if TYPE_CHECKING:
    from mcu_exp.evaluation.report import AlignmentReport

ALWAYS = "always_positive"


def _defined(*values: float | None) -> bool:
    return all(v is not None and math.isfinite(v) for v in values)


def _fmt(name: str, value: float) -> str:
    return metric(name).format(value)


def f1_clause(report: AlignmentReport) -> str:
    """Whether F1's interval lies above the always-understandable baseline's F1."""
    value = report.metrics.get(PRIMARY)
    low, high = report.ci.get(PRIMARY, (math.nan, math.nan))
    base = report.baselines[ALWAYS].get(PRIMARY)
    if not _defined(value, low, high, base):
        return f"{header(PRIMARY)} is undefined here, so it cannot be compared with the always-understandable baseline"
    assert value is not None and base is not None
    shown = f"{header(PRIMARY)} {_fmt(PRIMARY, value)} [{_fmt(PRIMARY, low)}, {_fmt(PRIMARY, high)}]"
    if low > base:
        return f"{shown} beats the always-understandable baseline ({_fmt(PRIMARY, base)}, below the CI)"
    if high < base:
        return f"{shown} is worse than the always-understandable baseline ({_fmt(PRIMARY, base)}, above the CI)"
    return f"{shown} does not beat the always-understandable baseline ({_fmt(PRIMARY, base)} lies inside the CI)"


def auc_clause(report: AlignmentReport) -> str:
    """Whether the AUC interval (of the score when there is one) excludes chance."""
    name = "auc_score" if "auc_score" in report.metrics else "auc_binary"
    value = report.metrics.get(name)
    low, high = report.ci.get(name, (math.nan, math.nan))
    if not _defined(value, low, high):
        return f"{header(name)} is undefined"
    assert value is not None
    shown = f"{header(name)} {_fmt(name, value)} [{_fmt(name, low)}, {_fmt(name, high)}]"
    if low > CHANCE_AUC:
        return f"{shown} excludes 0.5: the proxy ranks understandable programs higher than chance"
    if high < CHANCE_AUC:
        return f"{shown} lies below 0.5: the proxy ranks them in reverse"
    return f"{shown} includes 0.5: no evidence the proxy separates the classes better than chance"


def verdict(report: AlignmentReport) -> str:
    """One sentence: the F1 clause and the AUC clause, at the report's confidence."""
    level = f"{100.0 * report.confidence:g} %"
    return f"Verdict ({level} CIs): {f1_clause(report)}; {auc_clause(report)}."
