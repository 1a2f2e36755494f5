"""``mcu-exp report``'s "Pooled across datasets" section: the selected runs that share a
configuration but differ in dataset, pooled as at the end of a sweep over datasets
(:mod:`mcu_exp.report.pooled`), whether or not one sweep ran them.

Each group with two or more datasets gives one row per dataset (its ρ, AUC (score) and ceiling
on ρ) and two pooled rows (ρ and ρ/√reliability, with interval, τ², I² and prediction
interval), a forest plot, and the folder ``pooled/<k>/`` (``pooled.csv``,
``pooled_disattenuated.csv``, ``forest.png``) beside the report's other files. No group, no
section.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from mcu_exp.evaluation.pooling import PooledCorrelation
from mcu_exp.report.html import Figure, Section
from mcu_exp.report.pooled import PooledGroup, dataset_groups, num, pool_runs, with_ci, write_group

TITLE = "Pooled across datasets"
FOLDER = "pooled"  # in the report's folder: pooled/<k>/
CAPTION = (
    "Runs that share every configuration parameter but the dataset's (dataset.*), the newest run per dataset; "
    "ρ: Spearman's with the humans' mean correctness per program, [95 % CI] as each run computed it; ceiling on ρ: "
    "the humans' own (half panel, Spearman–Brown). Pooled rows: random-effects meta-analysis on Fisher's z "
    "(var 1.06/(n − 3), Paule–Mandel τ², statsmodels), ρ/√reliability the disattenuated ρ pooled the same way; "
    "prediction interval: where a new dataset's ρ would lie (needs 3 datasets). A dataset whose ρ is undefined is "
    "left out of the pool and named below. Pooling assumes one human target variable (docs/datasets.md)."
)


@dataclass(frozen=True)
class PooledPart:
    """The section (table, caption, notes) and its forest plots (``forest_<k>.png``)."""

    section: Section
    figures: list[Figure]


def pooled_groups(runs: Sequence[Any], metrics: Callable[[Any], Mapping[str, float]]) -> list[PooledGroup]:
    """The finished runs pooled per configuration, the newest run of each dataset; datasets and
    groups in the order their runs started (k of ``pooled/<k>/``)."""
    started = {r.info.run_id: r.info.start_time or 0 for r in runs}
    finished = sorted((r for r in runs if r.info.status == "FINISHED"), key=lambda r: -started[r.info.run_id])
    groups = sorted(
        (sorted(g, key=lambda r: started[r.info.run_id]) for g in dataset_groups(finished)),
        key=lambda g: started[g[0].info.run_id],
    )
    return pool_runs(groups, metrics) if groups else []


def _pooled_row(label: str, name: str, pool: PooledCorrelation) -> dict[str, Any]:
    defined = pool.reason is None
    return {
        "configuration": label,
        "dataset": name,
        "n": str(sum(d.n for d in pool.datasets)) if defined else "",
        "ρ": with_ci(pool.rho, pool.ci_low, pool.ci_high),
        "AUC (score)": "",
        "ceiling on ρ": "",
        "τ²": f"{pool.tau2:.3g}" if defined else "",
        "I²": f"{pool.i2:.0%}" if defined else "",
        "prediction interval": f"[{num(pool.pi_low)}, {num(pool.pi_high)}]" if pool.pi_reason is None else "undefined",
    }


def pooled_table(found: Sequence[PooledGroup]) -> pd.DataFrame:
    """One row per dataset of each group, then its pooled ρ and pooled ρ/√reliability."""
    rows: list[dict[str, Any]] = []
    for group in found:
        for r in group.rows:
            rows.append(
                {
                    "configuration": group.label,
                    "dataset": r.name,
                    "n": str(r.n),
                    "ρ": with_ci(r.rho, *r.rho_ci),
                    "AUC (score)": with_ci(r.auc, *r.auc_ci),
                    "ceiling on ρ": num(r.rho_ceiling),
                    "τ²": "",
                    "I²": "",
                    "prediction interval": "",
                }
            )
        rows.append(_pooled_row(group.label, "pooled ρ", group.pooled))
        rows.append(_pooled_row(group.label, "pooled ρ/√reliability", group.disattenuated))
    return pd.DataFrame(rows)


def pooled_notes(found: Sequence[PooledGroup]) -> list[str]:
    """Each group's sentence, and each dataset left out of a pool with the reason."""
    notes = []
    for group in found:
        notes.append(group.sentence())
        plain = dict(group.pooled.excluded)
        notes += [f"{group.label}: left out of the pool: {name}: {why}" for name, why in plain.items()]
        notes += [
            f"{group.label}: left out of the ρ/√reliability pool: {name}: {why}"
            for name, why in group.disattenuated.excluded
            if name not in plain
        ]
    return notes


def figure_caption(k: int, group: PooledGroup) -> str:
    """The forest plot's caption."""
    return (
        f"{group.label}: each dataset's ρ with its 95 % interval on Fisher's z, × the humans' ceiling on ρ, the "
        f"pooled diamond and the prediction interval (files: {FOLDER}/{k}/)."
    )


def pooled_part(found: Sequence[PooledGroup], out: Path) -> PooledPart | None:
    """The section of ``found``, its files written to ``out/pooled/<k>/``; None when no group."""
    if not found:
        return None
    figures = [
        Figure(f"forest_{k}.png", write_group(group, out / FOLDER / str(k)), figure_caption(k, group))
        for k, group in enumerate(found)
    ]
    return PooledPart(Section(TITLE, pooled_table(found), CAPTION, pooled_notes(found)), figures)
