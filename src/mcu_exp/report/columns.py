"""Column names the report's frames share: metrics with their CI bounds, the per-row
undefined metrics and notes (used by :mod:`tables` to build and :mod:`display` to show), and
what one cell of such a column reads (:func:`value`) and shows (:func:`cell`)."""

from __future__ import annotations

import math

import pandas as pd

from mcu_exp.evaluation.alignment_report import CI_HIGH, CI_LOW, format_value
from mcu_exp.evaluation.registry import INTERVAL_KINDS, metric_names
from mcu_exp.names import TAG_CLASS_WARNING, TAG_VERDICT, UNDEFINED, VS_REFERENCE_PREFIX

UNDEFINED_COLUMN = "undefined"  # the metrics a run logged as NaN (undefined on its data), "; "-joined in CSVs
NOTE_COLUMNS = {
    "class_warning": TAG_CLASS_WARNING,
    "reference_class_warning": f"{TAG_CLASS_WARNING}.reference",
    "verdict": TAG_VERDICT,
}  # run tags kept per row
BASELINE_PREFIX = "baseline_"
GROUP_WARNING = "class_warning."  # + a reader group (or "reference"): that label set's class-size warning


def main_metrics() -> list[str]:
    """Every registered rate and AUC, in table order: the summary's metric columns."""
    return metric_names(INTERVAL_KINDS)


def with_ci(name: str) -> list[str]:
    """A metric's column and its CI bounds' columns."""
    return [name, f"{name}{CI_LOW}", f"{name}{CI_HIGH}"]


def vs_reference_metrics(frame: pd.DataFrame) -> list[str]:
    """The "against the reference proxy" metrics the runs logged (``vs_reference.f1`` …), CI bounds left out."""
    names = [c for c in frame.columns if c.startswith(VS_REFERENCE_PREFIX) and not c.endswith((CI_LOW, CI_HIGH))]
    order = {m: i for i, m in enumerate(main_metrics())}
    return sorted(names, key=lambda c: (order.get(c[len(VS_REFERENCE_PREFIX) :], len(order)), c))


MISSING = "—"


def value(row: pd.Series, column: str) -> float | None:
    """``column`` of a table row: a number, NaN when the run logged it undefined, None when
    the run has no such metric."""
    raw = row.get(column)
    if raw is None or pd.isna(raw):
        return math.nan if column in (row.get(UNDEFINED_COLUMN) or ()) else None
    return float(raw)


def _text(name: str, number: float | None) -> str:
    if number is None:
        return MISSING
    if math.isnan(number):
        return UNDEFINED
    return format_value(name, number)


def cell(name: str, number: float | None, low: float | None = None, high: float | None = None) -> str:
    """A metric with its CI as text, in the metric's registered format; each of the three
    reads ``undefined`` when NaN; no CI when the run logged no bound."""
    text = _text(name, number)
    if number is None or math.isnan(number) or (low is None and high is None):
        return text
    return f"{text} [{_text(name, low)}, {_text(name, high)}]"
