"""The humans' ceiling in a report: its columns, cells and captions.

A job logs, for its own label set (per reader subgroup the same keys under ``group.<name>.``;
:mod:`mcu_exp.ceiling.versus` lists them all), each figure with ``_ci_low``/``_ci_high``, a
percentile interval over program resamples:

* the humans' two bounds on AUC (score): ``ceiling.auc_score`` (lower: half panel against half
  panel, pessimistic) and ``ceiling.upper_auc_score`` (upper: the true understandability
  against a full panel's labels under the beta-binomial reader model); ``ceiling.f1`` (half
  panel) and ``ceiling.spearman`` (the ρ ceiling, Spearman–Brown to the full panel);
* the proxy against them on the same programs: ``vs_ceiling.lower`` and ``vs_ceiling.upper``
  (AUC_proxy − bound, paired; the proxy's AUC there is ``vs_ceiling.auc_score``) and its
  disattenuated ρ (``disattenuated.spearman``).

Runs logged before the bounds hold ``ceiling.*`` with intervals over reader splits (the same
half-panel estimate, so it reads as the lower bound) and a share of it (``share.auc_score``,
``share.spearman``); their share is shown, labelled "(old run)", only for a run with a share and
none of the proxy-against-bound keys. A run that logged no ceiling shows "—"; a ceiling the run
could not estimate (too few programs with two readers) was logged as NaN and reads ``undefined``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from mcu_exp.evaluation.ceiling_lines import CEILING, DISATTENUATED, HIGH, LOW, LOWER, SHARE, UPPER, VS
from mcu_exp.evaluation.registry import header, metric
from mcu_exp.names import UNDEFINED
from mcu_exp.report.columns import value, with_ci

SHARES = ("auc_score", "spearman")  # measures an old run logged a share of ceiling for
GROUP_METRIC = "auc_score"  # the bounds shown per reader group
MISSING = "—"
OLD = "(old run)"
FIGURE = "ceiling.png"
FIGURE_CAPTION = (
    "Each configuration's AUC (score) and Spearman ρ (dots) with its 95 % bootstrap CI (bars) "
    "against the humans' own ceiling on the same labels, 95 % CI over programs (program resamples). "
    "AUC (score): the lower bound (green: half panel against half panel, pessimistic; line: its "
    "estimate, shaded: its CI) and the upper bound (purple, dashed: the true understandability against "
    "a full panel's labels under the beta-binomial reader model); Spearman ρ: the ρ ceiling (√ of the "
    "Spearman–Brown reliability, extrapolated to the full panel). Dashed grey: chance. A configuration "
    "without a band logged no ceiling, or an undefined one, as its x label says; an old run's ceiling "
    "(logged before the bounds) is the half-panel one with its interval over reader splits."
)


@dataclass(frozen=True)
class Column:
    """A ceiling column: its header (``{m}``: the metric's short name), the key it shows with its
    interval, the metric whose format it takes, and whether it is a signed difference."""

    title: str
    key: str
    fmt: str
    signed: bool = False

    def header(self, name: str) -> str:
        """The header beside metric ``name``'s column."""
        return self.title.format(m=metric(name).short)


BESIDE: dict[str, tuple[Column, ...]] = {
    "auc_score": (
        Column("{m} on the ceiling's programs", VS + "auc_score", "auc_score"),
        Column("{m} lower bound", CEILING + LOWER, "auc_score"),
        Column("{m} upper bound", CEILING + UPPER, "auc_score"),
        Column("{m} − lower bound", VS + "lower", "auc_score", signed=True),
        Column("{m} − upper bound", VS + "upper", "auc_score", signed=True),
    ),
    "spearman": (
        Column("{m} ceiling", CEILING + "spearman", "spearman"),
        Column("disattenuated {m}", DISATTENUATED + "spearman", "spearman"),
    ),
    "f1": (Column("{m} lower bound", CEILING + "f1", "f1"),),
}
"""The main table's ceiling columns, each placed after its metric's own column (in this order)."""
DIFFERS_ONLY = VS + "auc_score"  # shown only where it differs from the metric on every program
GROUP_COLUMNS = (
    Column("AUC lower", CEILING + LOWER, "auc_score"),
    Column("AUC upper", CEILING + UPPER, "auc_score"),
    Column("AUC − lower", VS + "lower", "auc_score", signed=True),
    Column("AUC − upper", VS + "upper", "auc_score", signed=True),
    Column("disattenuated ρ", DISATTENUATED + "spearman", "spearman"),
)
"""The per-group table's ceiling columns (the group's name appended to each header)."""
CSV_KEYS = (
    CEILING + LOWER,
    CEILING + UPPER,
    CEILING + "second_panel_auc_score",
    VS + "auc_score",
    VS + "lower",
    VS + "second_panel",
    VS + "upper",
    CEILING + "f1",
    CEILING + "spearman",
    DISATTENUATED + "spearman",
    *(SHARE + name for name in SHARES),
)
"""The figures ``summary.csv`` keeps (each with its interval, a difference with ``_p_below``)."""
COUNTS = (CEILING + "programs", CEILING + "programs_left_out", DISATTENUATED + "flagged")
NEW_KEYS = (VS + "auc_score", VS + "lower", VS + "upper", DISATTENUATED + "spearman", CEILING + UPPER)


def ceiling_key(name: str) -> str:
    """The metric key of ``name``'s ceiling (lower bound for AUC and F1): ``ceiling.auc_score``."""
    return f"{CEILING}{name}"


def share_key(name: str) -> str:
    """The key of an old run's share of ``name``'s ceiling (``share.auc_score``)."""
    return f"{SHARE}{name}"


def share_header(name: str) -> str:
    """ "AUC (score) share of ceiling (old run)", "ρ share of ceiling (old run)"."""
    return f"{metric(name).short} share of ceiling {OLD}"


def old_run(row: pd.Series, prefix: str = "") -> bool:
    """Whether the row is a run logged before the bounds: a ceiling or a share of it, and neither
    the program bootstrap's count (``ceiling.resamples``) nor any key of the proxy against the
    bounds (each under ``prefix``, a reader group's ``group.<name>.``, or none)."""
    if any(value(row, f"{prefix}{k}") is not None for k in (*NEW_KEYS, CEILING + "resamples")):
        return False
    return any(value(row, f"{prefix}{k}") is not None for k in (ceiling_key(GROUP_METRIC), *map(share_key, SHARES)))


def figure_cell(column: Column, row: pd.Series, prefix: str = "") -> str:
    """One figure with its interval ("0.650 [0.560, 0.750]", a difference signed: "+0.010 [−…]"),
    "—" when the run logged none, ``undefined`` when it is."""

    def text(number: float | None) -> str:
        if number is None:
            return MISSING
        if math.isnan(number):
            return UNDEFINED
        shown = metric(column.fmt).format(number)
        return f"+{shown}" if column.signed and number >= 0 else shown

    key = f"{prefix}{column.key}"
    number, low, high = (value(row, c) for c in (key, key + LOW, key + HIGH))
    if number is None or math.isnan(number) or (low is None and high is None):
        return text(number)
    return f"{text(number)} [{text(low)}, {text(high)}]"


def columns(frame: pd.DataFrame, prefix: str = "") -> list[str]:
    """The ceiling columns of ``summary.csv`` that some run in ``frame`` logged under ``prefix``
    (``""``, or a reader group's ``group.<name>.``), each with its interval, a difference with
    its ``_p_below``; then the counts behind them."""
    found: list[str] = []
    for key in CSV_KEYS:
        if f"{prefix}{key}" in frame.columns:
            found += with_ci(key)
            if key.startswith(VS) and key != VS + "auc_score":
                found.append(f"{key}_p_below")
    return found + [key for key in COUNTS if f"{prefix}{key}" in frame.columns]


def group_columns(frame: pd.DataFrame) -> list[str]:
    """The keys (with intervals) :func:`group_cells` reads that some run logged, under any
    group's prefix or none: what the per-group table copies for each group."""
    keys = [*(c.key for c in GROUP_COLUMNS), share_key(GROUP_METRIC)]
    logged = [k for k in keys if any(c == k or c.endswith(f".{k}") for c in frame.columns)]
    return [column for key in logged for column in with_ci(key)]


def logged(frame: pd.DataFrame) -> bool:
    """Whether any row holds a ceiling (a value, or an undefined one)."""
    names = [ceiling_key(n) for n in ("auc_score", "spearman", "f1")]
    return any(value(row, c) is not None for _, row in frame.iterrows() for c in names if c in frame.columns)


def share_text(number: float | None) -> str:
    """An old run's share of the ceiling as a percentage ("38.5%", "-12.0%"), ``undefined`` or "—"."""
    if number is None:
        return MISSING
    if math.isnan(number):
        return UNDEFINED
    return f"{100 * number:.1f}%"


def share_cell(number: float | None, low: float | None = None, high: float | None = None) -> str:
    """A share with its interval ("38.5% [-10.0%, 90.1%]"); no interval when the run logged none."""
    text = share_text(number)
    if number is None or math.isnan(number) or (low is None and high is None):
        return text
    return f"{text} [{share_text(low)}, {share_text(high)}]"


def _differs(summary: pd.DataFrame, name: str) -> bool:
    """Whether some row's AUC on the ceiling's programs differs from its AUC on every program."""
    for _, row in summary.iterrows():
        there, everywhere = value(row, DIFFERS_ONLY), value(row, name)
        if there is None or math.isnan(there):
            continue
        if everywhere is None or not math.isclose(there, everywhere, abs_tol=1e-9):
            return True
    return False


def main_cells(summary: pd.DataFrame, name: str) -> dict[str, list[str]]:
    """The main table's ceiling columns for metric ``name`` (header → cells, :data:`BESIDE`),
    each only when some row logged it, then an old run's share of ceiling where one is; placed
    right after ``name``'s own column."""
    out: dict[str, list[str]] = {}
    for column in BESIDE.get(name, ()):
        if column.key not in summary.columns or all(value(row, column.key) is None for _, row in summary.iterrows()):
            continue
        if column.key == DIFFERS_ONLY and not _differs(summary, name):
            continue
        out[column.header(name)] = [figure_cell(column, row) for _, row in summary.iterrows()]
    old = [old_run(row) for _, row in summary.iterrows()]
    if name in SHARES and share_key(name) in summary.columns and any(old):
        out[share_header(name)] = [
            share_cell(*(value(row, c) for c in with_ci(share_key(name)))) if was else MISSING
            for was, (_, row) in zip(old, summary.iterrows(), strict=True)
        ]
    return out


def group_cells(row: pd.Series) -> dict[str, str]:
    """One per-group row's ceiling cells (:data:`GROUP_COLUMNS` the table holds, and an old run's
    share of ceiling where the table holds one), keyed by header; the caller appends the group's name."""
    out = {c.title: figure_cell(c, row) for c in GROUP_COLUMNS if c.key in row.index}
    if share_key(GROUP_METRIC) in row.index:
        shown = old_run(row)
        out[f"share {OLD}"] = (
            share_cell(*(value(row, c) for c in with_ci(share_key(GROUP_METRIC)))) if shown else MISSING
        )
    return out


def _old_sentence(frame: pd.DataFrame) -> str:
    """The captions' sentence on runs logged before the bounds; empty when there is none."""
    if not any(old_run(row) for _, row in frame.iterrows()):
        return ""
    return (
        f" Runs logged before the bounds {OLD}: their ceiling is the half-panel one with its interval over "
        "reader splits, and their share of ceiling is (AUC − 0.5)/(ceiling − 0.5) and ρ/ρ ceiling as they "
        "logged it (no longer computed: its interval is meaningless)."
    )


def caption(summary: pd.DataFrame) -> str:
    """The main table's sentence on the ceiling columns; empty when no run logged a ceiling."""
    if not logged(summary):
        return ""
    return (
        " Humans' ceiling on the same labels, [ ] = 95 % CI over programs (program resamples, paired for "
        "the differences): AUC (score) and F1 lower bound = half panel against half panel (pessimistic); "
        "upper bound = the true understandability against a full panel's labels under the beta-binomial "
        "reader model; AUC (score) − bound = the proxy's AUC (score) on the ceiling's programs (two or more "
        "readers) minus the bound on the same programs; ρ ceiling = √ of the Spearman–Brown reliability (full "
        "panel); disattenuated ρ = ρ/√reliability, clipped to [−1, 1]. '—': the run logged none; 'undefined': "
        "too few programs with two readers to split." + _old_sentence(summary)
    )


def group_logged(table: pd.DataFrame) -> bool:
    """Whether the per-group table holds some group's ceiling."""
    return not table.empty and ceiling_key(GROUP_METRIC) in table.columns and logged(table)


def group_caption(table: pd.DataFrame) -> str:
    """The per-group table's sentence on its ceiling columns; empty when none is shown."""
    if not group_logged(table):
        return ""
    return (
        f" AUC lower/upper <group>: the group's own bounds on {header(GROUP_METRIC)} (the threshold-free AUC, "
        "not the AUC of the labels beside it), half panel and reader model; AUC − lower/upper <group>: the "
        "run's AUC (score) on the group's ceiling programs minus each bound, paired; disattenuated ρ <group>: "
        "ρ/√reliability; [ ] = 95 % CI over programs; each group is read against its own ceiling ('undefined': "
        "too few programs with two of its readers)." + _old_sentence(table)
    )


def figure_rows(rows: pd.DataFrame, names: Sequence[str] = SHARES) -> bool:
    """Whether the ceiling figure has anything to draw: some row with a finite ceiling of ``names``."""
    for name in names:
        key = ceiling_key(name)
        if key in rows.columns and pd.to_numeric(rows[key], errors="coerce").notna().any():
            return True
    return False
