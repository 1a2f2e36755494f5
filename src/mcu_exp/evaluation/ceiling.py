"""A proxy's alignment beside the humans' own noise ceiling (:mod:`mcu_exp.data.reliability`).

The share of ceiling says how much of what the human data allow a proxy reaches:
``share.auc_score = (AUC(score) − 0.5) / (ceiling.auc_score − 0.5)`` and
``share.spearman = ρ / ceiling.spearman``. Its interval combines the proxy's bootstrap
interval with the ceiling's interval over splits by their corners: the lowest share pairs the
proxy's lower bound with the ceiling's upper bound, the highest its upper bound with the
ceiling's lower bound (conservative: both spreads at their extremes at once). Where the
ceiling's interval reaches chance (0.5 for AUC, 0 for ρ) the share has no upper bound and is
undefined, as it is where the ceiling itself is.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

from mcu_exp.evaluation.registry import CHANCE_AUC, header, metric
from mcu_exp.names import ALL_READERS, RELIABILITY_FILE, UNDEFINED

if TYPE_CHECKING:
    from pathlib import Path

    from mcu_exp.config import EvaluationConfig, LabelsConfig
    from mcu_exp.data.reliability import Reliability
    from mcu_exp.data.types import Dataset
    from mcu_exp.evaluation.report import AlignmentReport

CEILING, SHARE = "ceiling.", "share."  # key prefixes, after any group.<name>. prefix
SHARED = {"auc_score": CHANCE_AUC, "spearman": 0.0}  # measures with a share of ceiling, and their chance value
SHORT = {"auc_score": "AUC (score)", "spearman": "ρ"}
LOW, HIGH = "_ci_low", "_ci_high"


def share(value: float, ceiling: float, chance: float) -> float:
    """``(value − chance) / (ceiling − chance)``; NaN unless the ceiling lies above chance."""
    if not all(math.isfinite(v) for v in (value, ceiling)) or ceiling <= chance:
        return math.nan
    return (value - chance) / (ceiling - chance)


def share_interval(interval: tuple[float, float], ceiling: tuple[float, float], chance: float) -> tuple[float, float]:
    """The share's interval from the proxy's ``interval`` and the ceiling's, by their corners
    (NaN, NaN when the ceiling's interval reaches ``chance`` or a bound is undefined)."""
    corners = [share(v, c, chance) for v in interval for c in ceiling]
    if not all(math.isfinite(s) for s in corners):
        return math.nan, math.nan
    return min(corners), max(corners)


def figures(report: AlignmentReport, ceiling: Reliability) -> dict[str, float]:
    """``ceiling.<figure>`` (every figure of the ceiling) and ``share.<m>`` with its interval
    for the measures of :data:`SHARED` the report has."""
    out = {f"{CEILING}{k}": float(v) for k, v in ceiling.figures.items()}
    for name, chance in SHARED.items():
        if name not in report.metrics:
            continue
        top = ceiling.figures[name]
        out[f"{SHARE}{name}"] = share(report.metrics[name], top, chance)
        low, high = share_interval(report.ci.get(name, (math.nan, math.nan)), ceiling.interval(name), chance)
        out[f"{SHARE}{name}{LOW}"], out[f"{SHARE}{name}{HIGH}"] = low, high
    return out


def with_ceilings(
    reports: Mapping[str, AlignmentReport], ceilings: Mapping[str, Reliability]
) -> dict[str, AlignmentReport]:
    """Each report with its own label set's ceiling and share of ceiling attached."""
    return {
        name: dataclasses.replace(rep, ceiling=figures(rep, ceilings[name])) if name in ceilings else rep
        for name, rep in reports.items()
    }


def estimate(found: Mapping[str, float], key: str, name: str) -> str:
    """``"0.653 [0.557, 0.742]"`` of ``found[key]`` in metric ``name``'s format; ``undefined``."""
    value = found.get(key, math.nan)
    if not math.isfinite(value):
        return UNDEFINED
    fmt = metric(name).format
    low, high = found.get(key + LOW, math.nan), found.get(key + HIGH, math.nan)
    bounds = f" [{fmt(low)}, {fmt(high)}]" if math.isfinite(low) and math.isfinite(high) else ""
    return f"{fmt(value)}{bounds}"


def percent(found: Mapping[str, float], key: str) -> str:
    """A share as ``"34% [−20%, 90%]"`` (``undefined`` when it is)."""
    value = found.get(key, math.nan)
    if not math.isfinite(value):
        return UNDEFINED
    low, high = found.get(key + LOW, math.nan), found.get(key + HIGH, math.nan)
    bounds = f" [{low:.0%}, {high:.0%}]" if math.isfinite(low) and math.isfinite(high) else " [undefined]"
    return f"{value:.0%}{bounds}"


def _why_undefined(found: Mapping[str, float]) -> str:
    return (
        f"undefined: {found.get(CEILING + 'programs', 0):.0f} programs with two or more readers "
        f"(at least 10 needed), {found.get(CEILING + 'programs_left_out', 0):.0f} with one left out"
    )


def verdict_clause(found: Mapping[str, float]) -> str:
    """The verdict's clause: the humans' own split-half AUC, and the proxy's share of it."""
    if not math.isfinite(found.get(CEILING + "auc_score", math.nan)):
        return f"the humans' own split-half AUC is {_why_undefined(found)}"
    clause = f"the humans' own split-half AUC is {estimate(found, CEILING + 'auc_score', 'auc_score')}"
    if SHARE + "auc_score" in found:
        clause += f", of which the proxy reaches {percent(found, SHARE + 'auc_score')}"
    return clause


def ceiling_lines(found: Mapping[str, float], splits: int | None = None) -> list[str]:
    """The block printed under a results table: the ceiling (half-panel and extrapolated
    figures, Krippendorff's α, programs used and left out) and the share of ceiling."""
    left_out = int(found.get(CEILING + "programs_left_out", 0))
    alpha = found.get(CEILING + "krippendorff_alpha", math.nan)
    alpha_text = f"{alpha:.3f}" if math.isfinite(alpha) else UNDEFINED
    lines = [
        f"Humans' ceiling: {f'{splits:,} ' if splits else ''}random split-halves of each program's readers, "
        "[ ] = spread over splits",
        f"  {found.get(CEILING + 'programs', 0):.0f} programs split, {left_out} with one reader left out; "
        f"Krippendorff's α = {alpha_text}",
    ]
    if not math.isfinite(found.get(CEILING + "auc_score", math.nan)):
        return [*lines, f"  {_why_undefined(found)}"]
    lines += [
        f"  half-panel: {header('auc_score')} {estimate(found, CEILING + 'auc_score', 'auc_score')}; "
        f"{header('f1')} {estimate(found, CEILING + 'f1', 'f1')}; "
        f"ρ {estimate(found, CEILING + 'split_half_rho', 'spearman')}",
        f"  full panel (Spearman–Brown): reliability {estimate(found, CEILING + 'reliability', 'spearman')}; "
        f"ceiling on ρ {estimate(found, CEILING + 'spearman', 'spearman')}",
    ]
    shares = [f"{SHORT[m]} {percent(found, SHARE + m)}" for m in SHARED if SHARE + m in found]
    if shares:
        lines.append("  share of ceiling: " + "; ".join(shares))
    return lines


def measure_line(found: Mapping[str, float]) -> str:
    """The line under the measure table: the ceiling each row's AUC and ρ are read against."""
    if not math.isfinite(found.get(CEILING + "auc_score", math.nan)):
        return f"  humans' ceiling: {_why_undefined(found)}"
    return (
        f"  humans' ceiling: {header('auc_score')} {estimate(found, CEILING + 'auc_score', 'auc_score')} "
        f"(half-panel), Spearman ρ {estimate(found, CEILING + 'spearman', 'spearman')} (full panel); "
        "a row's share of ceiling is (AUC − 0.5)/(ceiling − 0.5) and ρ/ρ_ceiling"
    )


def attach_ceilings(
    reports: Mapping[str, AlignmentReport], dataset: Dataset, labels: LabelsConfig, ev: EvaluationConfig, results: Path
) -> dict[str, AlignmentReport]:
    """The job's reports, each with its own label set's ceiling (all readers under the
    ``labels`` config, each subgroup its readers alone); ``reliability.csv`` written to
    ``results``."""
    from mcu_exp.data.reliability import reliabilities, reliability_table

    found = reliabilities(dataset, labels, ev, [g for g in reports if g != ALL_READERS])
    reliability_table(found).to_csv(results / RELIABILITY_FILE, index=False)
    return with_ceilings(reports, found)
