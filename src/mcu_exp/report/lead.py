"""The report's opening: the answer first. Which configuration aligns best with the humans
(ranked by :mod:`mcu_exp.report.ranking`: ΔF1 vs always-1's lower bound, then AUC (score)'s),
does it beat the always-understandable baseline, and where it lies against the humans' two
bounds when the runs logged them (its AUC (score) minus the upper bound, paired); then every
configuration in that order, one line each. The HTML page and ``report.md`` open with it and
``mcu-exp report`` prints it."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import pandas as pd

from mcu_exp.evaluation.registry import PRIMARY, header
from mcu_exp.report import ranking
from mcu_exp.report.columns import cell
from mcu_exp.report.identity import row_label

BEST = "★"
UPPER_COLUMN = "AUC (score) − upper bound"  # the proxy's AUC minus the humans' upper bound, paired
SHARE_COLUMN = "share of AUC ceiling (old run)"  # runs logged before the bounds
VERDICT_CAPTION = (
    "verdict: ✓ F1 when F1's 95 % CI lies above the always-1 baseline (ΔF1's lower bound above 0), "
    "✓ AUC when the AUC's CI lies above chance (0.5); ✗ otherwise, ? when undefined."
)


@dataclass
class Lead:
    """The answer (one sentence), the best configuration's figures (lines), and the ranked table."""

    answer: str
    best: list[str] = field(default_factory=list)
    table: pd.DataFrame = field(default_factory=pd.DataFrame)
    caption: str = ""


def headlines(summary: pd.DataFrame) -> list[ranking.Headline]:
    """Each summary row's headline (:func:`mcu_exp.report.ranking.headline`), in row order."""
    return [ranking.headline(row.to_dict()) for _, row in summary.iterrows()]


def ranked_columns(summary: pd.DataFrame) -> pd.DataFrame:
    """The summary's headline numbers for ``summary.csv``: ``rank`` (1 = best), ΔF1 vs always-1
    with its bounds, and whether F1 beats always-1 and the AUC chance (empty when undefined)."""
    items = headlines(summary)
    rank = {position: i + 1 for i, position in enumerate(ranking.ranked(items))}
    return pd.DataFrame(
        {
            "rank": [rank[i] for i in range(len(items))],
            ranking.DELTA_F1: [h.delta_f1.value for h in items],
            f"{ranking.DELTA_F1}_ci_low": [h.delta_f1.low for h in items],
            f"{ranking.DELTA_F1}_ci_high": [h.delta_f1.high for h in items],
            "f1_beats_always": [h.beats_always for h in items],
            "auc_beats_chance": [h.beats_chance for h in items],
        },
        index=summary.index,
    )


def lead(summary: pd.DataFrame, keys: Sequence[str]) -> Lead:
    """The opening of a report over ``summary`` (:func:`mcu_exp.report.tables.summary_table`)."""
    if summary.empty:
        return Lead("No configuration to rank.")
    items = headlines(summary)
    shared = [k for k in keys if summary[k].astype(str).nunique() == 1] if len(summary) > 1 else []
    labels = [row_label(row, keys, skip=shared) for _, row in summary.iterrows()]
    order = ranking.ranked(items)
    auc_names = {h.auc_name for h in items}
    auc_header = header(ranking.SCORE_AUC) if auc_names == {ranking.SCORE_AUC} else "AUC (score, else labels)"
    with_upper = any(h.vs_upper is not None for h in items)
    with_share = any(h.share is not None for h in items)
    rows = []
    for place, i in enumerate(order, 1):
        item = items[i]
        row = {
            "rank": f"{place} {BEST}" if place == 1 else str(place),
            "configuration": labels[i],
            "MCC": cell(ranking.MCC, item.mcc.value, item.mcc.low, item.mcc.high),
            "High": _high(item),
            header(PRIMARY): cell(PRIMARY, item.f1.value, item.f1.low, item.f1.high),
            f"{header(PRIMARY)} always-1": cell(PRIMARY, item.always_f1),
            f"Δ{header(PRIMARY)} vs always-1": ranking.delta_text(item),
            auc_header: cell(item.auc_name, item.auc.value, item.auc.low, item.auc.high),
        }
        if with_upper:
            row[UPPER_COLUMN] = "—" if item.vs_upper is None else ranking.signed_text(ranking.SCORE_AUC, item.vs_upper)
        if with_share:
            row[SHARE_COLUMN] = "—" if item.share is None else _share(item.share)
        row["verdict"] = ranking.verdict_marks(item)
        rows.append(row)
    best = items[order[0]]
    lines = [
        f"Best configuration: {row_label(summary.iloc[order[0]], keys)}",
        f"{header(PRIMARY)} {ranking.value_text(PRIMARY, best.f1)} against the always-understandable baseline's "
        f"{cell(PRIMARY, best.always_f1)}: Δ{header(PRIMARY)} {ranking.delta_text(best)}; "
        f"{header(best.auc_name)} {ranking.value_text(best.auc_name, best.auc)}",
    ]
    if best.ceiling is not None:
        text = ranking.ceiling_text(best)
        lines.append(text[0].upper() + text[1:])
    common = f"Every row: {row_label(summary.iloc[0], shared)}. " if shared else ""
    caption = common + (
        "Every configuration, best first: ranked by MCC's lower bound (Matthews' correlation of the labels with "
        "the humans', chance-corrected: a labeller that marks nearly every program alike cannot win it), then by "
        "the AUC's lower bound; ★ marks the best. High: the share of programs labelled High, ! when all but "
        f"≤{ranking.NEAR_CONSTANT} are labelled alike. ΔF1 vs always-1: F1's 95 % CI minus the baseline on the "
        "same labels, paired. " + VERDICT_CAPTION
    )
    if with_upper:
        caption += (
            f" {UPPER_COLUMN}: the proxy's AUC (score) on the programs with two or more readers minus the humans' "
            "upper bound (beta-binomial reader model) on the same programs, paired, [95 % CI over programs]."
        )
    if with_share:
        caption += (
            f" {SHARE_COLUMN}: (AUC − 0.5)/(ceiling − 0.5) as a run logged before the bounds computed it; "
            "no longer computed (its interval is meaningless)."
        )
    return Lead(ranking.answer(labels, items), lines, pd.DataFrame(rows), caption)


def _high(item: ranking.Headline) -> str:
    """The share of programs labelled High ("—" for a run that logged none), ``!`` when nearly constant."""
    if not math.isfinite(item.labelled_high):
        return "—"
    return f"{item.labelled_high:.0%}" + ("!" if item.near_constant else "")


def _share(share: ranking.Interval) -> str:
    """A share of the ceiling as "53.3% [−50.0%, 120.0%]"."""
    from mcu_exp.report.ceiling import share_cell

    return share_cell(share.value, share.low, share.high)


def print_lead(item: Lead, width: int = 160) -> None:
    """The ranked table, what its rows share and the answer on the terminal (rich; ``width``
    when the output is no terminal)."""
    import shutil
    import sys

    from rich.console import Console
    from rich.table import Table

    table = Table(title="Which configuration aligns best with the humans", title_justify="left")
    for column in item.table.columns:
        table.add_column(str(column), justify="left" if column in ("configuration", "verdict") else "right")
    for row in item.table.itertuples(index=False):
        table.add_row(*(str(v) for v in row))
    columns = shutil.get_terminal_size((width, 24)).columns if sys.stdout.isatty() else width
    console = Console(width=max(100, min(200, columns)), highlight=False)
    if not item.table.empty:
        console.print(table)
    if item.caption.startswith("Every row: "):
        console.print(item.caption.partition(". ")[0] + ".")
    console.print(item.answer)
