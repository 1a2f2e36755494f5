"""What ``mcu-exp compare`` prints: the comparison table (rich, no colour), the humans'
ceiling beside it, the parameters that differ and the notes on how the intervals and tests
were made."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from mcu_exp.names import UNDEFINED

if TYPE_CHECKING:
    from mcu_exp.compare.sides import Source


def _undefined(x: float) -> bool:
    return isinstance(x, float) and math.isnan(x)


def rate(x: float) -> str:
    """A rate such as F1, as a percentage."""
    return UNDEFINED if _undefined(x) else f"{100 * x:.1f}%"


def points(x: float) -> str:
    """A difference of rates, in percentage points."""
    return UNDEFINED if _undefined(x) else f"{100 * x:+.1f}"


def number(x: float) -> str:
    """An AUC or PRR."""
    return UNDEFINED if _undefined(x) else f"{x:.3f}"


def signed(x: float) -> str:
    """A difference of AUCs or PRRs."""
    return UNDEFINED if _undefined(x) else f"{x:+.3f}"


def p_value(p: float) -> str:
    """A p-value: 3 decimals, or 2 significant digits below 0.001."""
    if _undefined(p):
        return UNDEFINED
    return f"{p:.3f}" if p >= 0.001 else f"{p:.1e}"


def cells(cmp: Any) -> list[list[str]]:
    """The table's rows (metric, A, B, A − B [CI], paired test) of a
    :class:`mcu_exp.evaluation.paired.Comparison`; the last says which labels the intervals use."""
    from mcu_exp.evaluation.paired import EXACT

    df, dacc, da, dp = cmp.delta_f1, cmp.delta_accuracy, cmp.delta_auc, cmp.delta_prr
    mc, dl = cmp.mcnemar, cmp.delong
    variant = "exact binomial" if mc.method == EXACT else "χ² with continuity correction"
    delong = (
        f"DeLong z = {UNDEFINED if _undefined(dl.z) else f'{dl.z:+.2f}'}, p = {p_value(dl.p)}"
        if dl is not None
        else "DeLong: needs both scores"
    )
    return [
        ["F1", rate(cmp.f1_a), rate(cmp.f1_b), f"{points(df.value)} pts [{points(df.low)}, {points(df.high)}]", ""],
        [
            "McNemar (accuracy)",
            rate(cmp.accuracy_a),
            rate(cmp.accuracy_b),
            f"{points(dacc.value)} pts [{points(dacc.low)}, {points(dacc.high)}]",
            f"b = {mc.b}, c = {mc.c}, p = {p_value(mc.p)} ({variant})",
        ],
        [
            "AUC (score)",
            number(cmp.auc_a),
            number(cmp.auc_b),
            f"{signed(da.value)} [{signed(da.low)}, {signed(da.high)}]",
            delong,
        ],
        ["PRR", number(cmp.prr_a), number(cmp.prr_b), f"{signed(dp.value)} [{signed(dp.low)}, {signed(dp.high)}]", ""],
        ["labels in the CIs", cmp.labels_a, cmp.labels_b, "", ""],
    ]


def notes(cmp: Any, a: Source, b: Source, only_a: int, only_b: int) -> list[str]:
    """The lines under the table: sources, programs, how the intervals and tests were made."""
    from mcu_exp.evaluation.paired_recalibration import RECALIBRATED

    pct = round(100 * cmp.confidence)

    def labels_line(side: str, labels: str, note: str) -> str:
        if labels == RECALIBRATED:
            return (
                f"{side} recalibrated ({note}): τ recomputed from alpha_cal on each resample's programs, then "
                "its programs relabelled, as in the run's own intervals."
            )
        return f"{side} labels fixed ({note}): each program keeps the run's label in every resample."

    lines = [
        f"A: {a.where}",
        f"B: {b.where}",
        f"n = {cmp.n} shared programs ({cmp.n_pos} understood, {cmp.n - cmp.n_pos} not)"
        + (f"; left out: {only_a} scored only by A, {only_b} only by B" if only_a or only_b else "")
        + ".",
        f"[{pct} % CI]: {cmp.resamples} paired bootstrap resamples of the programs, stratified by human class, "
        f"seed {cmp.seed}; unadjusted for multiplicity: the table is a family of 4 intervals (ΔF1, Δaccuracy, "
        "ΔAUC, ΔPRR) and 2 tests (McNemar, DeLong), and its p-values are unadjusted too.",
        labels_line("A", cmp.labels_a, cmp.note_a),
        labels_line("B", cmp.labels_b, cmp.note_b),
        "McNemar compares the labels' accuracy: b = A right and B wrong, c = A wrong and B right "
        "(exact binomial when b + c < 25, else χ² with continuity correction max(|b − c| − 1, 0)²/(b + c)).",
        "PRR: prediction rejection ratio of the score (reject lowest score first; 1 = like the humans, 0 = random).",
    ]
    missing = [side for side, score in (("A", cmp.auc_a), ("B", cmp.auc_b)) if _undefined(score)]
    if missing and cmp.delong is None:
        lines.append(
            f"AUC (score), DeLong and PRR need a finite score for every shared program; "
            f"{' and '.join(missing)} {'has' if len(missing) == 1 else 'have'} none."
        )
    if cmp.delta_f1.undefined_share > 0:
        lines.append(f"ΔF1 undefined in {100 * cmp.delta_f1.undefined_share:.1f}% of the resamples (left out).")
    return lines


def render(cmp: Any, a: Source, b: Source, only_a: int = 0, only_b: int = 0) -> str:
    """The comparison as a text table (rich, no colour) with its notes."""
    import io

    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from mcu_exp.compare import ceiling, params

    table = Table(title=f"A = {a.name}, B = {b.name}")
    for header in ("", "A", "B", f"A − B [{round(100 * cmp.confidence)} % CI]", "paired test"):
        table.add_column(header, justify="left" if header in ("", "paired test") else "right")
    for row in cells(cmp):
        table.add_row(*(escape(text) for text in row))  # "[undefined, undefined]" is text, not rich markup
    buffer = io.StringIO()
    console = Console(file=buffer, width=140, color_system=None, force_terminal=False, soft_wrap=False)
    console.print(table)
    ceilings = ceiling.rows(a.ceiling, b.ceiling)
    if ceilings:
        below = Table(title="The humans' ceiling on each run's labels, and the run against it")
        for header in ("", "A", "B"):
            below.add_column(header, justify="left" if not header else "right", no_wrap=True)
        for row in ceilings:
            below.add_row(*(escape(text) for text in row))
        console.print(below)
    lines = [
        *params.lines(a.params, b.params),
        *notes(cmp, a, b, only_a, only_b),
        *ceiling.notes(a.ceiling, b.ceiling, a.labels, b.labels),
    ]
    return buffer.getvalue() + "\n".join(lines) + "\n"
