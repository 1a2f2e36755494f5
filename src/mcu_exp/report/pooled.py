"""One proxy's alignment pooled across the human studies: the grouping of runs, the pooled
figures, their text, files and forest plot, shared by the end of a sweep over datasets
(:mod:`mcu_exp.report.pooled_sweep`) and ``mcu-exp report`` (:mod:`mcu_exp.report.pooled_report`).

Runs are grouped by every configuration parameter but the dataset's (``dataset.*``; the
parameters that cannot change a result, :data:`mcu_exp.report.identity.NOT_CONFIGURATION`,
``result.*`` among them, are left out too, so runs launched apart still meet); a group whose runs
cover two or more datasets gets a pooled row (:mod:`mcu_exp.evaluation.pooling`: a random-effects
meta-analysis of the Spearman ρ against each dataset's mean correctness on Fisher's z, and of the
disattenuated ρ/√reliability beside it) with each dataset's ρ, AUC (score) and ceiling.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcu_exp.evaluation.pooling import PooledCorrelation, pool_correlations, pool_disattenuated
from mcu_exp.report.identity import DERIVED, is_configuration, param_columns, row_label, varying_keys

POOLED_PREFIX = "pooled."
DATASET_PARAMS = "dataset."  # what differs between a configuration's datasets
DATASET_KEY = "dataset.name"
TEXT_WIDTH = 100  # columns of the closing sentence, as the sweep's summary wraps its own
HEAD = "Pooled across datasets (random effects on Fisher's z, Paule–Mandel τ², statsmodels):\n"


@dataclass(frozen=True)
class DatasetRow:
    """One dataset's figures in a pooled group, as its job logged them (NaN where absent)."""

    name: str
    n: int
    rho: float
    rho_ci: tuple[float, float]
    auc: float
    auc_ci: tuple[float, float]
    reliability: float
    rho_ceiling: float
    lower: float
    upper: float


def num(x: float) -> str:
    """A figure to three decimals, "undefined" when NaN."""
    return f"{x:.3f}" if math.isfinite(x) else "undefined"


def with_ci(x: float, low: float, high: float) -> str:
    """ "0.243 [0.043, 0.443]"; "undefined" when the figure is."""
    return f"{num(x)} [{num(low)}, {num(high)}]" if math.isfinite(x) else "undefined"


def dataset_row(name: str, metrics: Mapping[str, float]) -> DatasetRow:
    """A job's metrics as one dataset's row."""

    def get(key: str) -> float:
        value = metrics.get(key, math.nan)
        return math.nan if value is None else float(value)

    return DatasetRow(
        name=name,
        n=int(get("n")) if math.isfinite(get("n")) else 0,
        rho=get("spearman"),
        rho_ci=(get("spearman_ci_low"), get("spearman_ci_high")),
        auc=get("auc_score"),
        auc_ci=(get("auc_score_ci_low"), get("auc_score_ci_high")),
        reliability=get("ceiling.reliability"),
        rho_ceiling=get("ceiling.spearman"),
        lower=get("ceiling.auc_score"),
        upper=get("ceiling.upper_auc_score"),
    )


def configuration_key(params: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """A run's configuration without its dataset: every param that can change a result but ``dataset.*``."""
    return tuple(sorted((k, v) for k, v in params.items() if not k.startswith(DATASET_PARAMS) and is_configuration(k)))


def dataset_groups(children: Sequence[Any]) -> list[list[Any]]:
    """The runs grouped by :func:`configuration_key`; only groups with two or more datasets,
    each dataset once (a repeated dataset keeps its first run: pass the newest first)."""
    groups: dict[tuple[tuple[str, str], ...], list[Any]] = {}
    for run in children:
        params = run.data.params
        if DATASET_KEY not in params:
            continue
        key = configuration_key(params)
        groups.setdefault(key, []).append(run)
    found = []
    for runs in groups.values():
        by_name: dict[str, Any] = {}
        for run in runs:
            by_name.setdefault(run.data.params[DATASET_KEY], run)
        if len(by_name) >= 2:
            found.append(list(by_name.values()))
    return found


@dataclass(frozen=True)
class PooledGroup:
    """One configuration over its datasets: the rows, the pooled ρ and the pooled disattenuated ρ."""

    label: str
    rows: list[DatasetRow]
    pooled: PooledCorrelation
    disattenuated: PooledCorrelation

    def metrics(self, prefix: str = POOLED_PREFIX) -> dict[str, float]:
        """The pooled figures as parent-run metrics (undefined ones NaN)."""
        out: dict[str, float] = {}
        for name, pool in (("rho", self.pooled), ("disattenuated", self.disattenuated)):
            out[f"{prefix}{name}"] = pool.rho
            out[f"{prefix}{name}_ci_low"], out[f"{prefix}{name}_ci_high"] = pool.ci_low, pool.ci_high
        pool = self.pooled
        out.update(
            {
                f"{prefix}k": float(pool.k),
                f"{prefix}tau2": pool.tau2,
                f"{prefix}i2": pool.i2,
                f"{prefix}q_p": pool.q_p,
                f"{prefix}pi_low": pool.pi_low,
                f"{prefix}pi_high": pool.pi_high,
            }
        )
        return out

    def sentence(self) -> str:
        """The closing sentence: the pooled figure, its interval and its prediction interval."""
        pool = self.pooled
        if pool.reason is not None:
            return f"No pooled estimate for {self.label}: {pool.reason}."
        pi = (
            f"a new dataset's ρ would lie in [{pool.pi_low:.3f}, {pool.pi_high:.3f}]"
            if pool.pi_reason is None
            else f"no prediction interval ({pool.pi_reason})"
        )
        return (
            f"Pooled over {pool.k} datasets, {self.label}'s Spearman ρ with the humans' mean correctness is "
            f"{pool.rho:.3f} [{pool.ci_low:.3f}, {pool.ci_high:.3f}] (τ² {pool.tau2:.3g}, I² {pool.i2:.0%}); {pi}."
        )

    def text(self) -> str:
        """The printed block: the configuration, one line per dataset, the pooled rows, the sentence."""
        lines = [
            f"{self.label}:",
            f"  {'dataset':<12} {'n':>4}  {'ρ [95 % CI]':<24} {'AUC (score) [95 % CI]':<24} {'ρ ceiling':>9}",
        ]
        for r in self.rows:
            lines.append(
                f"  {r.name:<12} {r.n:>4}  {with_ci(r.rho, *r.rho_ci):<24} "
                f"{with_ci(r.auc, *r.auc_ci):<24} {num(r.rho_ceiling):>9}"
            )
        for name, pool in (("pooled ρ", self.pooled), ("pooled ρ/√rel", self.disattenuated)):
            value = with_ci(pool.rho, pool.ci_low, pool.ci_high) if pool.reason is None else "undefined"
            lines.append(f"  {name:<17} {value}" + (f"  ({pool.reason})" if pool.reason else ""))
        for name, why in self.pooled.excluded:
            lines.append(f"  left out of the pool: {name}: {why}")
        return "\n".join(lines) + "\n" + textwrap.fill(self.sentence(), TEXT_WIDTH) + "\n"


def pool_group(label: str, rows: list[DatasetRow], confidence: float = 0.95) -> PooledGroup:
    """The pooled ρ and disattenuated ρ of one configuration's datasets."""
    alpha = 1.0 - confidence
    plain = pool_correlations([(r.name, r.rho, r.n) for r in rows], alpha=alpha)
    reliable = [(r.name, r.rho, r.n, r.reliability if math.isfinite(r.reliability) else None) for r in rows]
    return PooledGroup(label, rows, plain, pool_disattenuated(reliable, alpha=alpha))


def forest_figure(group: PooledGroup) -> Any:
    """One row per dataset (ρ with its 95 % interval from the pool's Fisher-z variance, its
    ρ ceiling marked ×), the pooled diamond and its prediction interval."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pool = group.pooled
    estimates = {d.name: d for d in pool.datasets}
    names = [r.name for r in group.rows]
    fig, ax = plt.subplots(figsize=(10, 1.2 + 0.5 * (len(names) + 2)))
    for i, row in enumerate(group.rows):
        y = len(names) - i
        est = estimates.get(row.name)
        if est is not None:
            ax.errorbar(est.rho, y, xerr=[[est.rho - est.ci_low], [est.ci_high - est.rho]], fmt="s", color="C0")
        if math.isfinite(row.rho_ceiling):
            ax.plot(row.rho_ceiling, y, "x", color="C2", label="humans' ceiling on ρ" if i == 0 else None)
    if pool.reason is None:
        ax.fill(
            [pool.ci_low, pool.rho, pool.ci_high, pool.rho],
            [0, 0.2, 0, -0.2],
            color="C3",
            label=f"pooled ρ {pool.rho:.3f} [{pool.ci_low:.3f}, {pool.ci_high:.3f}]",
        )
        if pool.pi_reason is None:
            ax.plot([pool.pi_low, pool.pi_high], [-0.45, -0.45], color="C3", lw=1, label="prediction interval")
    ax.axvline(0.0, color="grey", lw=0.8, ls="--")
    ax.set_yticks([len(names) - i for i in range(len(names))] + [0], [*names, "pooled"])
    ax.set_xlabel("Spearman ρ of the proxy's score with the humans' mean correctness (95 % CI)")
    ax.set_xlim(-1, 1)
    ax.set_title(group.label, fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    return fig


def group_labels(groups: Sequence[Sequence[Any]]) -> list[str]:
    """Each group's configuration in words, as the report's rows name theirs: model and proxy,
    then what else differs between the groups (a section's own settings that go with its name
    left out; :func:`mcu_exp.report.identity.varying_keys`)."""
    import pandas as pd

    records = []
    for runs in groups:
        params = runs[0].data.params
        record = {column: params.get(key) for column, key in DERIVED.items() if column != "dataset"}
        record.update({k: v for k, v in param_columns(params).items() if not k.startswith("params." + DATASET_PARAMS)})
        records.append(record)
    frame = pd.DataFrame(records)
    keys = varying_keys(frame)
    return [row_label(row, keys) for _, row in frame.iterrows()]


def pool_runs(groups: Sequence[Sequence[Any]], metrics: Callable[[Any], Mapping[str, float]]) -> list[PooledGroup]:
    """Each group of :func:`dataset_groups` pooled, ``metrics(run)`` giving a run's metrics, at
    the runs' ``evaluation.confidence``."""
    found = []
    for label, runs in zip(group_labels(groups), groups, strict=True):
        rows = [dataset_row(r.data.params[DATASET_KEY], metrics(r)) for r in runs]
        found.append(pool_group(label, rows, float(runs[0].data.params.get("evaluation.confidence", 0.95))))
    return found


def write_group(found: PooledGroup, folder: Path) -> bytes:
    """``pooled.csv``, ``pooled_disattenuated.csv`` and ``forest.png`` of one group into
    ``folder`` (made); the PNG's bytes."""
    import matplotlib.pyplot as plt

    folder.mkdir(parents=True, exist_ok=True)
    found.pooled.to_frame().to_csv(folder / "pooled.csv", index=False)
    found.disattenuated.to_frame().to_csv(folder / "pooled_disattenuated.csv", index=False)
    fig = forest_figure(found)
    try:
        fig.savefig(folder / "forest.png", dpi=100)
    finally:
        plt.close(fig)
    return (folder / "forest.png").read_bytes()


def pooled_text(found: Sequence[PooledGroup]) -> str:
    """The printed section: its heading and each group's block ("" when no group)."""
    return HEAD + "".join(g.text() for g in found) if found else ""
