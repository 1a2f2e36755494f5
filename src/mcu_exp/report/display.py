"""The comparison tables as text: cells, captions and the notes under each table.

A metric cell is "67.7% [58.1%, 77.4%]" (value, 95 % CI), ``undefined`` where the run
logged the metric as NaN (an AUC with one class, a precision with no predicted positive…;
a CI bound alike), and "—" where the run never logged it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from mcu_exp.evaluation.alignment_report import AUC_PERMUTATION_P, baseline_key
from mcu_exp.evaluation.baselines import ALWAYS, RANDOM
from mcu_exp.evaluation.registry import HEADLINE, PRIMARY, header, metric
from mcu_exp.markdown import md_text
from mcu_exp.names import ALL_READERS, UNDEFINED, VS_REFERENCE_PREFIX
from mcu_exp.report import ceiling
from mcu_exp.report.columns import MISSING, cell, main_metrics, value, vs_reference_metrics, with_ci
from mcu_exp.report.identity import PARAM_PREFIX, key_header, key_text, row_label
from mcu_exp.report.ranking import headline, verdict_marks

BASELINE_HEADERS = {ALWAYS: "always-1", RANDOM: "random"}  # after the metric's header
RULE_TEXT = {"mean_abu50": "mean ABU50"}  # labels.rule → words


def _cells(table: pd.DataFrame, column: str, name: str | None = None) -> list[str]:
    return [cell(name or column, *(value(row, c) for c in with_ci(column))) for _, row in table.iterrows()]


def _shown(table: pd.DataFrame, column: str) -> bool:
    """Whether any row has ``column`` (a value, or undefined)."""
    return any(value(row, column) is not None for _, row in table.iterrows())


def count_text(number: float | None) -> str:
    """A count (n, runs) as an integer, ``undefined`` or "—"."""
    if number is None:
        return MISSING
    return UNDEFINED if math.isnan(number) else f"{number:.0f}"


def p_text(number: float | None) -> str:
    """A p-value with 4 decimals, ``undefined`` or "—"."""
    if number is None:
        return MISSING
    return UNDEFINED if math.isnan(number) else f"{number:.4f}"


def display_table(summary: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """:func:`~mcu_exp.report.tables.summary_table` as text cells: the keys, runs, n, the verdict
    ("✗ F1 · ✓ AUC", :func:`mcu_exp.report.ranking.verdict_marks`), each
    metric with its CI ("67.7% [58.1%, 77.4%]", AUCs with 3 decimals), the baselines of the
    headline metric (F1) right after it (so they sit beside it, not at the far end of a wide
    table), and "F1 vs reference" (…) columns when the runs logged them; headers and formats come
    from the metric registry."""
    table = pd.DataFrame({key_header(k): [key_text(k, v) for v in summary[k]] for k in keys})
    table["runs"] = [count_text(float(v)) for v in summary["runs"]]
    table["n"] = [count_text(value(row, "n")) for _, row in summary.iterrows()]
    table["verdict"] = [verdict_marks(headline(row.to_dict())) for _, row in summary.iterrows()]
    for name in main_metrics():
        if name in summary.columns and _shown(summary, name):
            table[header(name)] = _cells(summary, name)
        if name == PRIMARY:
            for baseline, suffix in BASELINE_HEADERS.items():
                column = baseline_key(baseline, PRIMARY)
                if column in summary.columns:
                    table[f"{header(PRIMARY)} {suffix}"] = [
                        cell(PRIMARY, value(row, column)) for _, row in summary.iterrows()
                    ]
        for column, cells in ceiling.main_cells(summary, name).items():
            table[column] = cells
    if AUC_PERMUTATION_P in summary.columns and _shown(summary, AUC_PERMUTATION_P):
        table["p (AUC score vs 0.5)"] = [p_text(value(row, AUC_PERMUTATION_P)) for _, row in summary.iterrows()]
    for column in vs_reference_metrics(summary):
        short = column[len(VS_REFERENCE_PREFIX) :]
        table[f"{header(short)} vs reference"] = _cells(summary, column, short)
    return table


FIRST_PANEL = "F1 and AUC against the baselines"
SECOND_PANEL = "Other metrics"


def main_panels(table: pd.DataFrame, keys: Sequence[str]) -> list[tuple[str, list[str]]]:
    """:func:`display_table`'s columns as two narrower tables for the page: the row's identity
    (keys, runs, n, verdict) with F1, its baselines, the AUCs and their ceilings; then the keys
    with every other metric. One table when the second would be empty."""
    ident = [key_header(k) for k in keys]
    front = [c for c in (*ident, "runs", "n", "verdict") if c in table.columns]
    first = [c for c in table.columns if c not in front and (c.startswith(header(PRIMARY)) or c.startswith("AUC"))]
    rest = [c for c in table.columns if c not in front and c not in first]
    if not rest:
        return []
    return [(FIRST_PANEL, [*front, *first]), (SECOND_PANEL, [*ident, *rest])]


def display_subgroups(table: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """:func:`~mcu_exp.report.tables.subgroup_table` as text: one row per configuration, its
    run count, then per reader group the number of programs (``n <group>``) and the headline
    metrics (F1 and AUC), each column named after the group whose labels it holds."""
    if table.empty:
        return table
    out: dict[tuple[str, ...], dict[str, str]] = {}
    with_ceiling = ceiling.group_logged(table)
    for _, row in table.iterrows():
        ident = tuple(key_text(k, row[k]) for k in keys)
        cells = out.setdefault(ident, {"runs": count_text(value(row, "runs"))} if "runs" in row else {})
        cells[f"n {row['group']}"] = count_text(value(row, "n"))
        for name in HEADLINE:
            cells[f"{metric(name).short} {row['group']}"] = cell(name, *(value(row, c) for c in with_ci(name)))
        if with_ceiling:
            cells.update({f"{head} {row['group']}": text for head, text in ceiling.group_cells(row).items()})
    rows = [{**{key_header(k): v for k, v in zip(keys, ident, strict=True)}, **cells} for ident, cells in out.items()]
    return pd.DataFrame(rows).fillna(MISSING)


def subgroup_notes(table: pd.DataFrame, keys: Sequence[str]) -> list[str]:
    """Notes under the per-group table: each (configuration, group) whose labels have a class
    too small to say much (the same < ``evaluation.min_per_class`` test as the main labels)."""
    if table.empty or "class_warning" not in table.columns:
        return []
    return [
        f"{row_label(row, keys)} · {row['group']}: class size warning: {row['class_warning']}"
        for _, row in table.iterrows()
        if row.get("class_warning")
    ]


def subgroup_family(table: pd.DataFrame) -> str:
    """The multiplicity sentence of the per-group table: its intervals are unadjusted, and how
    many a reader compares (configurations × groups × metrics)."""
    size = 0 if table.empty else len(table) * len(HEADLINE)
    return (
        f"95 % CIs, unadjusted for multiplicity: a family of {size} intervals "
        f"({len(table)} configuration × group rows × {len(HEADLINE)} metrics)"
    )


def group_sizes(table: pd.DataFrame) -> str:
    """ "all 50, bachelor 50, …": programs per reader group (the largest n seen per group)."""
    if table.empty:
        return ""
    sizes = table.groupby("group", sort=False)["n"].max()
    return ", ".join(f"{g} {int(n)}" for g, n in sizes.items() if pd.notna(n))


def _one(rows: pd.DataFrame, column: str) -> Any:
    """The single value of ``column`` in ``rows``; None when absent, "" when it varies."""
    if column not in rows.columns or rows[column].isna().all():
        return None
    values = list(dict.fromkeys(rows[column].astype(str)))
    return rows[column].iloc[0] if len(values) == 1 else ""


def label_rule(rows: pd.DataFrame) -> str:
    """How the human labels were made, in words: "mean ABU50 ≥ 0.5"."""
    rule, fraction = _one(rows, f"{PARAM_PREFIX}labels.rule"), _one(rows, f"{PARAM_PREFIX}labels.min_fraction")
    if rule is None or fraction is None:
        return "not recorded"
    if rule == "" or fraction == "":
        return "per row (see the label columns)"
    return f"{RULE_TEXT.get(str(rule), str(rule))} ≥ {key_text('', fraction)}"


def scope(rows: pd.DataFrame) -> str:
    """What the metrics are measured against: "readers: all; label: mean ABU50 ≥ 0.5"
    ("readers: all, tested only" under ``labels.readers=tested``)."""
    group = _one(rows, "labels_group")
    readers = "per row (see the reader group column)" if group == "" else str(group or ALL_READERS)
    tested = _one(rows, f"{PARAM_PREFIX}labels.readers")
    if tested == "":
        readers += " (tested or all: see the readers column)"
    elif tested == "tested":
        readers += ", tested only"
    return f"readers: {readers}; label: {label_rule(rows)}"


def row_notes(summary: pd.DataFrame, keys: Sequence[str]) -> list[str]:
    """Notes under the main table: reruns, and each row's class-size warning (the verdict is a
    column of the table, its sentence in ``summary.csv``)."""
    notes = []
    reruns = int((summary["runs"] > 1).sum()) if "runs" in summary.columns else 0
    if reruns:
        notes.append(
            f"{reruns} {'row' if reruns == 1 else 'rows'} had reruns; the newest is shown "
            "(the runs column counts them)."
        )
    for _, row in summary.iterrows():
        label = row_label(row, keys)
        if row.get("class_warning"):
            notes.append(f"{label}: class size warning: {row['class_warning']}")
        if row.get("reference_class_warning"):
            notes.append(
                f"{label}: class size warning on the reference proxy's labels: {row['reference_class_warning']}"
            )
    return notes


def name_settings_note(columns: Sequence[str], most: int = 6) -> str:
    """The note naming the settings that vary only with their section's name (a model's
    backend, an expert pool's members), not shown as columns: each param key, or a count
    per section when it has more than ``most`` of them."""
    sections: dict[str, list[str]] = {}
    for column in columns:
        key = column[len(PARAM_PREFIX) :] if column.startswith(PARAM_PREFIX) else column
        sections.setdefault(key.split(".", 1)[0], []).append(key)
    parts = [
        ", ".join(keys) if len(keys) <= most else f"{len(keys)} {section}.* settings"
        for section, keys in sections.items()
    ]
    return (
        f"Also differing, with the model, proxy or expert pool named in the row (in summary.csv): {'; '.join(parts)}."
        if parts
        else ""
    )


def to_markdown(table: pd.DataFrame) -> str:
    """A GitHub-flavoured Markdown table (cells escaped by :func:`~mcu_exp.markdown.md_text`:
    pipes, HTML, emphasis); text left, numbers right."""
    esc = md_text
    head = "| " + " | ".join(esc(c) for c in table.columns) + " |"
    align = ["---" if i < 1 or not _numeric_column(table.iloc[:, i]) else "---:" for i in range(table.shape[1])]
    lines = [head, "| " + " | ".join(align) + " |"]
    for row in table.itertuples(index=False):
        lines.append("| " + " | ".join(esc(v) for v in row) + " |")
    return "\n".join(lines) + "\n"


def _numeric_column(column: pd.Series) -> bool:
    text = column.astype(str)
    return bool(len(text)) and bool(text.str.match(rf"^([\d.\-—]|{UNDEFINED})").all())
