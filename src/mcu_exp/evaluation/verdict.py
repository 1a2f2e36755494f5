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
from typing import Protocol

from mcu_exp.evaluation.baselines import ALWAYS
from mcu_exp.evaluation.registry import CHANCE_AUC, PRIMARY, header, metric


class AlignmentReport(Protocol):
    """What the verdict reads of a report (:class:`mcu_exp.evaluation.alignment_report.AlignmentReport`,
    which asks this module for its verdict): its metrics, their intervals and confidence, its
    baselines and the humans' ceiling beside it."""

    @property
    def metrics(self) -> dict[str, float]: ...
    @property
    def ci(self) -> dict[str, tuple[float, float]]: ...
    @property
    def baselines(self) -> dict[str, dict[str, float]]: ...
    @property
    def confidence(self) -> float: ...
    @property
    def ceiling(self) -> dict[str, float]: ...


def _estimate(report: AlignmentReport, name: str) -> tuple[str, float, float] | None:
    """``"F1 68.5% [60.9%, 72.2%]"`` and the interval bounds of metric ``name``; None when the
    value or a bound is undefined."""
    value = report.metrics.get(name)
    low, high = report.ci.get(name, (math.nan, math.nan))
    if value is None or not all(math.isfinite(v) for v in (value, low, high)):
        return None
    fmt = metric(name).format
    return f"{header(name)} {fmt(value)} [{fmt(low)}, {fmt(high)}]", low, high


BEATS, INSIDE, BELOW = 1.0, 0.0, -1.0  # where an interval lies against its reference value


def _side(low: float, high: float, reference: float) -> float:
    """BEATS when the interval lies above ``reference``, BELOW when under it, else INSIDE."""
    return BEATS if low > reference else BELOW if high < reference else INSIDE


def outcomes(report: AlignmentReport) -> dict[str, float]:
    """The verdict as numbers for MLflow: ``verdict.f1_vs_always`` (1: F1's interval lies
    above the always-understandable baseline, 0: contains it, −1: below it) and
    ``verdict.auc_vs_chance`` (the same for the AUC interval against 0.5); NaN when undefined."""
    out = {"verdict.f1_vs_always": math.nan, "verdict.auc_vs_chance": math.nan}
    estimate = _estimate(report, PRIMARY)
    base = report.baselines[ALWAYS].get(PRIMARY)
    if estimate is not None and base is not None and math.isfinite(base):
        out["verdict.f1_vs_always"] = _side(estimate[1], estimate[2], base)
    estimate = _estimate(report, "auc_score" if "auc_score" in report.metrics else "auc_binary")
    if estimate is not None:
        out["verdict.auc_vs_chance"] = _side(estimate[1], estimate[2], CHANCE_AUC)
    return out


def f1_clause(report: AlignmentReport) -> str:
    """Whether F1's interval lies above the always-understandable baseline's F1."""
    estimate = _estimate(report, PRIMARY)
    base = report.baselines[ALWAYS].get(PRIMARY)
    if estimate is None or base is None or not math.isfinite(base):
        return f"{header(PRIMARY)} is undefined here, so it cannot be compared with the always-understandable baseline"
    shown, low, high = estimate
    base_text = metric(PRIMARY).format(base)
    side = _side(low, high, base)
    if side == BEATS:
        return f"{shown} beats the always-understandable baseline ({base_text}, below the CI)"
    if side == BELOW:
        return f"{shown} is worse than the always-understandable baseline ({base_text}, above the CI)"
    return f"{shown} does not beat the always-understandable baseline ({base_text} lies inside the CI)"


def auc_clause(report: AlignmentReport) -> str:
    """Whether the AUC interval (of the score when there is one) excludes chance."""
    name = "auc_score" if "auc_score" in report.metrics else "auc_binary"
    estimate = _estimate(report, name)
    if estimate is None:
        return f"{header(name)} is undefined"
    shown, low, high = estimate
    side = _side(low, high, CHANCE_AUC)
    if side == BEATS:
        return f"{shown} excludes 0.5: the proxy ranks understandable programs higher than chance"
    if side == BELOW:
        return f"{shown} lies below 0.5: the proxy ranks them in reverse"
    return f"{shown} includes 0.5: no evidence the proxy separates the classes better than chance"


def verdict(report: AlignmentReport) -> str:
    """One sentence: the F1 clause and the AUC clause, at the report's confidence, and the
    humans' own ceiling when the report has one."""
    level = f"{100.0 * report.confidence:g} %"
    ceiling = ""
    if report.ceiling:
        from mcu_exp.evaluation.ceiling_lines import verdict_clause

        ceiling = f"; {verdict_clause(report.ceiling)}"
        humans, base = report.ceiling.get("ceiling.f1", math.nan), report.baselines[ALWAYS].get(PRIMARY, math.nan)
        if math.isfinite(humans) and base is not None and math.isfinite(base) and humans < base:
            fmt = metric(PRIMARY).format
            ceiling += (
                f"; the humans' own half-panel {header(PRIMARY)} ({fmt(humans)}) lies below always-1's ({fmt(base)}), "
                "so beating always-1 is a bar the humans do not clear"
            )
    return f"Verdict ({level} CIs): {f1_clause(report)}; {auc_clause(report)}{ceiling}."
