"""The humans' own noise ceiling in a report: its columns, cells and caption.

A job that estimates the human labels' reliability logs, for its own label set, the ceiling
of each alignment figure (``ceiling.auc_score``, ``ceiling.spearman``, ``ceiling.f1``, each
with ``_ci_low``/``_ci_high`` over the seeded splits of each program's readers) and a proxy's
share of it for the continuous measures (``share.auc_score`` = (AUC − 0.5)/(ceiling − 0.5),
``share.spearman`` = ρ/ρ_ceiling, with their intervals); per reader subgroup the same keys
under ``group.<name>.``. The AUC and F1 ceilings are half-panel (half A of the readers
against half B's label); the ρ ceiling is extrapolated to the full panel (Spearman–Brown,
then √reliability). A run that logged no ceiling shows "—"; a ceiling the run could not
estimate (fewer than 10 programs with two evaluations) was logged as NaN and reads
``undefined``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from mcu_exp.evaluation.registry import header, metric
from mcu_exp.names import UNDEFINED
from mcu_exp.report.columns import with_ci

CEILING_PREFIX = "ceiling."
SHARE_PREFIX = "share."
CEILINGS = ("auc_score", "spearman", "f1")  # alignment figures with a ceiling, in table order
SHARES = ("auc_score", "spearman")  # the continuous ones: also a share of their ceiling
EXTRAPOLATED = ("spearman",)  # Spearman–Brown to the full panel; the other ceilings are half-panel
GROUP_METRIC = "auc_score"  # the ceiling shown per reader group
MISSING = "—"
FIGURE = "ceiling.png"
FIGURE_CAPTION = (
    "Each configuration's AUC (score) and Spearman ρ (dots) with its 95 % bootstrap CI (bars) "
    "against the humans' own ceiling on the same labels (line: mean over seeded splits of each "
    "program's readers; shaded: its interval over the splits). The AUC (score) ceiling is "
    "half-panel (one half's mean against the other half's label), so it understates the full "
    "panel's; the ρ ceiling is extrapolated to the full panel (√ of the Spearman–Brown "
    "reliability). Dashed: chance. A configuration without a band logged no ceiling, or an "
    "undefined one, as its x label says."
)


def ceiling_key(name: str) -> str:
    """The metric key of ``name``'s ceiling (``ceiling.auc_score``)."""
    return f"{CEILING_PREFIX}{name}"


def share_key(name: str) -> str:
    """The metric key of a proxy's share of ``name``'s ceiling (``share.auc_score``)."""
    return f"{SHARE_PREFIX}{name}"


def ceiling_header(name: str) -> str:
    """ "AUC (score) ceiling", "ρ ceiling", "F1 ceiling"."""
    return f"{metric(name).short} ceiling"


def share_header(name: str) -> str:
    """ "AUC (score) share of ceiling", "ρ share of ceiling"."""
    return f"{metric(name).short} share of ceiling"


def columns(frame: pd.DataFrame, prefix: str = "") -> list[str]:
    """The ceiling and share columns (each with its CI bounds) that some run in ``frame``
    logged under ``prefix`` (``""``, or a reader group's ``group.<name>.``), table order."""
    found: list[str] = []
    for name in CEILINGS:
        for key in (ceiling_key(name), *((share_key(name),) if name in SHARES else ())):
            if f"{prefix}{key}" in frame.columns:
                found += with_ci(key)
    return found


def logged(frame: pd.DataFrame) -> bool:
    """Whether any row holds a ceiling (a value, or an undefined one)."""
    from mcu_exp.report.columns import value

    names = [ceiling_key(n) for n in CEILINGS]
    return any(value(row, c) is not None for _, row in frame.iterrows() for c in names if c in frame.columns)


def share_text(number: float | None) -> str:
    """A share of the ceiling as a percentage ("38.5%", "−12.0%"), ``undefined`` or "—"."""
    if number is None:
        return MISSING
    if math.isnan(number):
        return UNDEFINED
    return f"{100 * number:.1f}%"


def share_cell(number: float | None, low: float | None = None, high: float | None = None) -> str:
    """A share with its interval ("38.5% [−10.0%, 90.1%]"); no interval when the run logged none."""
    text = share_text(number)
    if number is None or math.isnan(number) or (low is None and high is None):
        return text
    return f"{text} [{share_text(low)}, {share_text(high)}]"


def main_cells(summary: pd.DataFrame, name: str) -> dict[str, list[str]]:
    """The main table's columns for ``name``'s ceiling and share (header → cells), empty when
    no row logged that ceiling; placed right after ``name``'s own column."""
    from mcu_exp.report.columns import cell, value

    key = ceiling_key(name)
    if key not in summary.columns or all(value(row, key) is None for _, row in summary.iterrows()):
        return {}
    out = {ceiling_header(name): [cell(name, *(value(row, c) for c in with_ci(key))) for _, row in summary.iterrows()]}
    if name in SHARES and share_key(name) in summary.columns:
        out[share_header(name)] = [
            share_cell(*(value(row, c) for c in with_ci(share_key(name)))) for _, row in summary.iterrows()
        ]
    return out


def group_cells(row: pd.Series) -> dict[str, str]:
    """One per-group row's ceiling cells (its AUC (score) ceiling and the share of it), keyed
    "AUC ceiling" and "share"; the caller appends the group's name."""
    from mcu_exp.report.columns import cell, value

    key, share = ceiling_key(GROUP_METRIC), share_key(GROUP_METRIC)
    return {
        "AUC ceiling": cell(GROUP_METRIC, *(value(row, c) for c in with_ci(key))),
        "share": share_cell(*(value(row, c) for c in with_ci(share))),
    }


def caption(summary: pd.DataFrame) -> str:
    """The main table's sentence on the ceiling columns; empty when no run logged a ceiling."""
    if not logged(summary):
        return ""
    return (
        " Ceilings: the humans' own alignment on the same labels, mean over seeded splits of each program's "
        "readers into halves [interval over the splits]: AUC (score) and F1 ceilings are half-panel (one "
        "half's statistic against the other half's label), the ρ ceiling is extrapolated to the full panel "
        "(√ of the Spearman–Brown reliability). Share of ceiling: (AUC − 0.5)/(ceiling − 0.5) and "
        "ρ/ρ ceiling, as the run computed them (docs/statistics.md). '—': the run logged no ceiling; "
        "'undefined': too few programs with two evaluations to split."
    )


def group_caption(table: pd.DataFrame) -> str:
    """The per-group table's sentence on its ceiling columns; empty when none is shown."""
    if table.empty or ceiling_key(GROUP_METRIC) not in table.columns or not logged(table):
        return ""
    return (
        f" AUC ceiling <group>: the group's own half-panel ceiling of {header(GROUP_METRIC)} (the "
        "threshold-free AUC, not the AUC of the labels beside it) [interval over splits]; share <group>: the "
        "run's AUC (score) share of it, (AUC − 0.5)/(ceiling − 0.5); each group is read against its own "
        "ceiling ('undefined': too few readers per program to split)."
    )


def figure_rows(rows: pd.DataFrame, names: Sequence[str] = SHARES) -> bool:
    """Whether the ceiling figure has anything to draw: some row with a finite ceiling of ``names``."""
    for name in names:
        key = ceiling_key(name)
        if key in rows.columns and pd.to_numeric(rows[key], errors="coerce").notna().any():
            return True
    return False
