"""The per-group table a job prints under its results: for all readers and each reader
subgroup, the programs per human class, F1, AUC (labels) and AUC (score) with their CIs, the
class-size warning of every label set, and how many intervals the table holds. Each label set's
own ceiling, on the same programs as the proxy's figures, is a table of its own
(:func:`mcu_exp.evaluation.ceiling_lines.render_ceiling_table`).

Every interval is an unadjusted 95 % interval (the one each number would have alone); read
side by side, some of a family of G groups × M metrics will miss by chance, so the caption
states the family size and the per-interval level a Bonferroni adjustment would need.
"""

from __future__ import annotations

import io

from rich.console import Console
from rich.table import Table

from mcu_exp.evaluation.alignment_report import CI_DESCRIPTIONS, AlignmentReport, format_interval, format_value
from mcu_exp.evaluation.registry import header

GROUP_METRICS = ("f1", "auc_binary", "auc_score")  # shown per group, when the report has them


def class_counts(report: AlignmentReport) -> tuple[int, int]:
    """(understandable, not understandable) programs of the label set a report scored."""
    m = report.metrics
    return int(m["tp"] + m["fn"]), int(m["tn"] + m["fp"])


def family_caption(rows: int, metrics: int, confidence: float, noun: str = "group") -> str:
    """The multiplicity sentence of a table of ``rows`` rows (each a ``noun``) × ``metrics``
    intervals: they are unadjusted, how many there are, and the per-interval level a Bonferroni
    adjustment would need."""
    size = rows * metrics
    level = 100.0 * (1.0 - (1.0 - confidence) / size) if size else 100.0 * confidence
    return (
        f"{100.0 * confidence:g} % CIs, unadjusted for multiplicity: a family of {rows} "
        f"{noun if rows == 1 else noun + 's'} × {metrics} metrics = {size} intervals "
        f"(Bonferroni would use {level:.2f} % each)"
    )


def _cell(report: AlignmentReport, name: str) -> str:
    """ "68.5% [60.9%, 72.2%]"; ``undefined`` alone when the value is."""
    text = format_value(name, report.metrics[name])
    interval = report.ci.get(name)
    return text if text == "undefined" or interval is None else f"{text} {format_interval(name, interval)}"


def render_group_table(
    reports: dict[str, AlignmentReport], warnings: dict[str, str | None], title: str = "Per reader group"
) -> str:
    """``reports`` (label set → report; all readers first) as a text table 100 columns wide,
    with the family caption and each label set's class-size warning under it."""
    first = next(iter(reports.values()))
    shown = [name for name in GROUP_METRICS if name in first.metrics]
    family = [g for g in reports if g != next(iter(reports))] or list(reports)
    caption = (
        f"value [{100.0 * first.confidence:g} % CI]; n: programs (understandable / not); "
        f"{family_caption(len(family), len(shown), first.confidence)}; "
        f"{first.resamples} {CI_DESCRIPTIONS[first.ci_method]}"
        f"{' on all programs' if first.ci_method == 'recalibrate' else ''}, seed {first.seed}"
    )
    table = Table(title=title, caption=caption)
    table.add_column("group", justify="left")
    table.add_column("n (1 / 0)", justify="right")
    for name in shown:
        table.add_column(header(name), justify="right")
    for group, report in reports.items():
        positives, negatives = class_counts(report)
        cells = [_cell(report, name) for name in shown]
        table.add_row(group, f"{report.n} ({positives} / {negatives})", *cells)
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        width=100,
        color_system=None,
        force_terminal=False,
        force_jupyter=False,
        soft_wrap=False,
    )
    console.print(table)
    for group, warning in warnings.items():
        if warning:
            console.print(f"warning: {group}: {warning}", markup=False, highlight=False)
    return buffer.getvalue()
