"""A proxy's alignment beside the humans' own noise ceiling (:mod:`mcu_exp.ceiling.split_half`).

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

from mcu_exp.evaluation.ceiling_lines import CEILING, HIGH, LOW, SHARE, SHARED
from mcu_exp.names import ALL_READERS, RELIABILITY_FILE

if TYPE_CHECKING:
    from pathlib import Path

    from mcu_exp.ceiling.split_half import Reliability
    from mcu_exp.config import EvaluationConfig, LabelsConfig
    from mcu_exp.data.types import Dataset
    from mcu_exp.evaluation.alignment_report import AlignmentReport


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


def attach_ceilings(
    reports: Mapping[str, AlignmentReport], dataset: Dataset, labels: LabelsConfig, ev: EvaluationConfig, results: Path
) -> dict[str, AlignmentReport]:
    """The job's reports, each with its own label set's ceiling (all readers under the
    ``labels`` config, each subgroup its readers alone); ``reliability.csv`` written to
    ``results``."""
    from mcu_exp.ceiling.split_half import reliabilities, reliability_table

    found = reliabilities(dataset, labels, ev, [g for g in reports if g != ALL_READERS])
    reliability_table(found).to_csv(results / RELIABILITY_FILE, index=False)
    return with_ceilings(reports, found)
