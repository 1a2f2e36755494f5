"""How an alignment report shows the humans' noise ceiling and a proxy's share of it: the lines
under the alignment table and the measure table, and the verdict's clause.

The figures themselves (``ceiling.*``, ``share.*`` with their intervals) are computed in
:mod:`mcu_exp.ceiling.versus`; this module reads them from a flat mapping and names the key
prefixes and the measures that have a share of ceiling (:data:`SHARED`), with their chance value.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from mcu_exp.evaluation.registry import CHANCE_AUC, header, metric
from mcu_exp.names import UNDEFINED

CEILING, SHARE = "ceiling.", "share."  # key prefixes, after any group.<name>. prefix
SHARED = {"auc_score": CHANCE_AUC, "spearman": 0.0}  # measures with a share of ceiling, and their chance value
SHORT = {"auc_score": "AUC (score)", "spearman": "ρ"}
LOW, HIGH = "_ci_low", "_ci_high"


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
