"""How an alignment report shows the humans' ceiling and the proxy against it: the block under
the results table, the verdict's clause, the line under the measure table and the per-group
ceiling table.

The figures (computed in :mod:`mcu_exp.ceiling.versus`) arrive as a flat mapping under the key
prefixes named here: ``ceiling.*`` (the two bounds, Spearman–Brown, α, counts), ``vs_ceiling.*``
(the proxy's AUC on the ceiling's programs and its paired differences to each bound) and
``disattenuated.*``. Every "[ ]" printed is a 95 % (the run's level) interval over programs; the
split-to-split variation of the half-panel figures is printed as "± Monte Carlo error".
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping

from mcu_exp.evaluation.registry import CHANCE_AUC, header, metric
from mcu_exp.names import UNDEFINED

CEILING, VS, DISATTENUATED = "ceiling.", "vs_ceiling.", "disattenuated."  # key prefixes, after any group.<name>.
CONCORDANCE = "concordance."  # within-reader pairwise concordance (all readers)
LATENT = "latent."  # labels.target=latent: the crossed reader × program model's figures
SHARE = "share."  # runs before the bounds logged a share of ceiling here (read, never written)
LOW, HIGH, MC = "_ci_low", "_ci_high", "_mc"
BOUND_KEYS = {"half_panel": "lower", "second_panel": "second_panel", "upper": "upper"}
"""The program bootstrap's bound names → their key under ``vs_ceiling.``."""
LOWER, UPPER = "auc_score", "upper_auc_score"  # the two bounds on AUC (score), under ``ceiling.``
LOWER_NAME = "lower bound, pessimistic (half panel vs half panel)"
UPPER_NAME = "upper bound (beta-binomial reader model)"


def value(found: Mapping[str, float], key: str) -> float:
    """``found[key]``, NaN when absent."""
    return float(found.get(key, math.nan))


def estimate(found: Mapping[str, float], key: str, name: str, signed: bool = False) -> str:
    """``"0.653 [0.545, 0.760]"`` of ``found[key]`` in metric ``name``'s format (``signed``: with
    a sign, for differences); ``undefined`` when it is."""
    point = value(found, key)
    if not math.isfinite(point):
        return UNDEFINED

    def fmt(x: float) -> str:
        text = metric(name).format(x)
        return f"+{text}" if signed and x >= 0 else text

    low, high = value(found, key + LOW), value(found, key + HIGH)
    bounds = f" [{fmt(low)}, {fmt(high)}]" if math.isfinite(low) and math.isfinite(high) else ""
    return f"{fmt(point)}{bounds}"


def _mc(found: Mapping[str, float], key: str, name: str) -> str:
    error = value(found, key + MC)
    return f" ±{metric(name).format(error)}" if math.isfinite(error) and error > 0 else ""


def _probability(p: float) -> str:
    if not math.isfinite(p):
        return UNDEFINED
    return "<1%" if 0 < p < 0.01 else ">99%" if 0.99 < p < 1 else f"{p:.0%}"


def _why_undefined(found: Mapping[str, float]) -> str:
    return (
        f"undefined: {value(found, CEILING + 'programs'):.0f} programs with two or more readers "
        f"(at least 10 needed, in both classes), {value(found, CEILING + 'programs_left_out'):.0f} with one left out"
    )


def defined(found: Mapping[str, float]) -> bool:
    """Whether the lower bound is a number (enough programs to split)."""
    return math.isfinite(value(found, CEILING + LOWER))


def position(proxy: float, lower: float, upper: float) -> str:
    """Where a proxy's AUC lies among chance (0.5), the lower and the upper bound."""
    if proxy <= CHANCE_AUC:
        return "at or below chance"
    if math.isfinite(lower) and proxy < lower:
        return "between chance and the lower bound"
    if math.isfinite(upper) and proxy < upper:
        return "between the lower and the upper bound" if math.isfinite(lower) else "below the upper bound"
    return "at or above the upper bound" if math.isfinite(upper) else "above the lower bound"


def difference(found: Mapping[str, float], bound: str) -> str:
    """``"−0.041 [−0.212, +0.128], P(below) 68%"``: the proxy's AUC minus a bound, paired."""
    key = f"{VS}{bound}"
    text = estimate(found, key, "auc_score", signed=True)
    if text == UNDEFINED:
        return text
    return f"{text}, P(below) {_probability(value(found, key + '_p_below'))}"


def latent_target(found: Mapping[str, float]) -> bool:
    """Whether the figures are a latent target's model (``labels.target=latent``), not bounds."""
    return math.isfinite(value(found, LATENT + "reliability")) and not math.isfinite(value(found, CEILING + LOWER))


def latent_lines(found: Mapping[str, float]) -> list[str]:
    """The block under a results table under ``labels.target=latent``: what the target is and
    how reliable its per-program values are."""
    return [
        "Humans' target: latent understandability (crossed reader × program binomial model,",
        f"statsmodels' BinomialBayesMixedGLM): {value(found, LATENT + 'programs'):.0f} programs, "
        f"{value(found, LATENT + 'readers'):.0f} readers, {value(found, LATENT + 'questions'):,.0f} answers",
        f"  reliability of the latent values {value(found, LATENT + 'reliability'):.3f}; program SD "
        f"{value(found, LATENT + 'program_sd'):.3f}, reader SD {value(found, LATENT + 'reader_sd'):.3f} (logit)",
        "  the half-panel and reader-model bounds describe observed labels (labels.target=observed)",
    ]


def verdict_clause(found: Mapping[str, float]) -> str:
    """The verdict's clause: where the proxy's AUC (score) lies between chance and the humans'
    two bounds, with the paired differences; the bounds alone when the proxy has no score."""
    auc = header("auc_score")
    if latent_target(found):
        return f"the latent target's reliability is {value(found, LATENT + 'reliability'):.3f}"
    if not defined(found):
        return f"the humans' ceiling is {_why_undefined(found)}"
    lower = estimate(found, CEILING + LOWER, "auc_score")
    upper = estimate(found, CEILING + UPPER, "auc_score")
    if not math.isfinite(value(found, VS + "auc_score")):
        return f"the humans' bounds on {auc} are {lower} (half panel, pessimistic) and {upper} (reader model)"
    where = position(value(found, VS + "auc_score"), value(found, CEILING + LOWER), value(found, CEILING + UPPER))
    lower_point = metric("auc_score").format(value(found, CEILING + LOWER))
    clause = (
        f"against the humans' bounds its point estimate lies {where}: {auc} − lower bound ({lower_point}, half panel) = "
        f"{estimate(found, VS + 'lower', 'auc_score', signed=True)}"
    )
    if math.isfinite(value(found, CEILING + UPPER)):
        upper_point = metric("auc_score").format(value(found, CEILING + UPPER))
        clause += (
            f", − upper bound ({upper_point}, reader model) = {estimate(found, VS + 'upper', 'auc_score', signed=True)}"
        )
    return clause


def ceiling_lines(found: Mapping[str, float]) -> list[str]:
    """The block printed under a results table (each line within 100 columns): both bounds with
    their intervals over programs, the Spearman–Brown figures, Krippendorff's α (naming its
    variable), the programs used and left out, and the proxy's paired differences and
    disattenuated ρ on the same programs."""
    resamples, inner = value(found, CEILING + "resamples"), value(found, CEILING + "inner_splits")
    splits = value(found, CEILING + "splits")
    how = (
        f"{resamples:,.0f} program resamples × {inner:,.0f} reader splits"
        if math.isfinite(resamples) and math.isfinite(inner)
        else "program resamples"
    )
    if latent_target(found):
        return latent_lines(found)
    alpha = value(found, CEILING + "krippendorff_alpha")
    lines = [
        f"Humans' ceiling: [ ] = 95 % CI over programs ({how}),",
        f"± = Monte Carlo error over splits; {value(found, CEILING + 'programs'):.0f} programs with two or more "
        f"readers, {value(found, CEILING + 'programs_left_out'):.0f} with one left out",
        f"  Krippendorff's α of the readers' ABU50 = {f'{alpha:.3f}' if math.isfinite(alpha) else UNDEFINED}",
    ]
    if not defined(found):
        return [*lines, f"  {_why_undefined(found)}"]
    split_text = f", {splits:,.0f} splits" if math.isfinite(splits) else ""
    auc = header("auc_score")
    lines += [
        f"  {LOWER_NAME[:-1]}{split_text}):",
        f"    {auc} {estimate(found, CEILING + LOWER, 'auc_score')}{_mc(found, CEILING + LOWER, 'auc_score')}; "
        f"{header('f1')} {estimate(found, CEILING + 'f1', 'f1')}",
        f"    ρ of mean correctness {estimate(found, CEILING + 'split_half_rho', 'spearman')}; "
        "full panel (Spearman–Brown):",
        f"    reliability {estimate(found, CEILING + 'reliability', 'spearman')}, "
        f"ceiling on ρ {estimate(found, CEILING + 'spearman', 'spearman')}",
    ]
    if math.isfinite(value(found, CEILING + UPPER)):
        lines += [
            f"  {UPPER_NAME[:-1]}, ICC {estimate(found, CEILING + 'model_icc', 'spearman')}):",
            f"    {auc} of the true understandability {estimate(found, CEILING + UPPER, 'auc_score')}",
            f"    of a second full panel {estimate(found, CEILING + 'second_panel_auc_score', 'auc_score')}",
        ]
    else:
        lines.append(f"  {UPPER_NAME}: defined for labels.rule=mean_abu50 only")
    if math.isfinite(value(found, VS + "auc_score")):
        flagged = value(found, DISATTENUATED + "flagged") == 1
        lines += [
            f"  proxy on the same programs, paired: {auc} {estimate(found, VS + 'auc_score', 'auc_score')}",
            f"    − lower bound {difference(found, 'lower')}",
            f"    − upper bound {difference(found, 'upper')}",
            f"    disattenuated ρ = ρ/√reliability {estimate(found, DISATTENUATED + 'spearman', 'spearman')}"
            + (" (reliability's CI reaches 0)" if flagged else ""),
        ]
    if math.isfinite(value(found, CONCORDANCE + "proxy")):
        triples = value(found, CONCORDANCE + "proxy_triples")
        lines += [
            f"  within-reader concordance on {triples:,.0f} pairs a reader got differently right",
            f"  ([ ] over programs and readers): proxy {estimate(found, CONCORDANCE + 'proxy', 'spearman')} "
            f"vs chance 0.500;",
            f"    reader-pair ceiling {estimate(found, CONCORDANCE + 'ceiling', 'spearman')}",
        ]
    return lines


def measure_line(found: Mapping[str, float]) -> str:
    """The lines under the measure table: the bounds each row's AUC and ρ are read against."""
    if latent_target(found):
        return f"  humans' target: latent understandability, reliability {value(found, LATENT + 'reliability'):.3f}"
    if not defined(found):
        return f"  humans' ceiling: {_why_undefined(found)}"
    return (
        f"  humans' bounds on {header('auc_score')}: {estimate(found, CEILING + LOWER, 'auc_score')} (half panel, "
        f"pessimistic) to {estimate(found, CEILING + UPPER, 'auc_score')} (reader model);\n"
        f"  on Spearman ρ: {estimate(found, CEILING + 'spearman', 'spearman')} (full panel, Spearman–Brown)"
    )


GROUP_COLUMNS = (
    ("AUC (score)", VS + "auc_score", False),
    ("lower bound", CEILING + LOWER, False),
    ("upper bound", CEILING + UPPER, False),
    ("AUC − lower", VS + "lower", True),
    ("AUC − upper", VS + "upper", True),
    ("disattenuated ρ", DISATTENUATED + "spearman", False),
)


def render_ceiling_table(ceilings: Mapping[str, Mapping[str, float]], title: str, confidence: float) -> str:
    """Each label set's ceiling and the proxy against it, on the same programs: programs used
    (and left out for having one reader), the proxy's AUC (score) on them, both bounds, the
    paired differences and the disattenuated ρ, each with its interval over programs."""
    from rich.console import Console
    from rich.table import Table

    caption = (
        f"[ ] = {100.0 * confidence:g} % CI over programs (stratified program resamples, paired for the "
        "differences); every figure of a row on the same programs: those with two or more of the group's "
        "readers; lower bound: half panel vs half panel (pessimistic); upper bound: true understandability "
        "vs a full panel's labels under the beta-binomial reader model"
    )
    table = Table(title=title, caption=caption)
    table.add_column("group", justify="left", no_wrap=True)
    table.add_column("programs (left out)", justify="right", no_wrap=True)
    for name, _, _ in GROUP_COLUMNS:
        table.add_column(name, justify="right", no_wrap=True)
    for group, found in ceilings.items():
        used = f"{value(found, CEILING + 'programs'):.0f} ({value(found, CEILING + 'programs_left_out'):.0f})"
        cells = [
            estimate(found, key, "spearman" if "spearman" in key else "auc_score", signed)
            for _, key, signed in GROUP_COLUMNS
        ]
        table.add_row(group, used, *cells)
    buffer = io.StringIO()
    console = Console(
        file=buffer, width=200, color_system=None, force_terminal=False, force_jupyter=False, soft_wrap=False
    )
    console.print(table)
    return buffer.getvalue()
