"""Column names the report's frames share: metrics with their CI bounds, the per-row
undefined metrics and notes (used by :mod:`tables` to build and :mod:`display` to show)."""

from __future__ import annotations

import pandas as pd

from mcu_exp.evaluation.registry import INTERVAL_KINDS, metric_names
from mcu_exp.evaluation.report import CI_HIGH, CI_LOW
from mcu_exp.names import TAG_CLASS_WARNING, TAG_VERDICT, VS_REFERENCE_PREFIX

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
