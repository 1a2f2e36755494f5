"""A job's files: the per-program table, metrics, sensitivity grids and their plots.

Everything lands in ``<run dir>/results/``, which is logged to MLflow as the run's
artifacts; the curves are also returned as metric series (step = grid index) so the MLflow
UI charts them.
"""

from __future__ import annotations

import json
import logging
import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from omegaconf import DictConfig

from mcu_exp.data import HumanLabels
from mcu_exp.evaluation import DegenerateMetricWarning, epsilon_sweep, similarity_sweep, threshold_sweep
from mcu_exp.proxies.base import ProxyOutcome

log = logging.getLogger(__name__)

SERIES_COLUMNS = ("f1", "precision", "recall", "auc_binary")


@dataclass
class Artifacts:
    """Where the files are, and the metric series to log."""

    folder: Path
    series: dict[str, list[float]] = field(default_factory=dict)


def per_program_table(outcome: ProxyOutcome, labels: HumanLabels) -> pd.DataFrame:
    """Program id, human label (and its evidence), the proxy's score and label, proxy columns."""
    table = outcome.table.copy()
    human = pd.DataFrame(
        {
            "human_label": labels.labels,
            "human_fraction": labels.fraction,
            "n_evaluators": labels.n_evaluators,
        }
    )
    front = ["human_label", "human_fraction", "n_evaluators", "score", "label"]
    merged = human.join(table, how="right")
    rest = [c for c in merged.columns if c not in front]
    merged = merged[front + rest]
    merged.index.name = "program_id"
    return merged


def sensitivity(
    cfg: DictConfig, outcome: ProxyOutcome, groups: dict[str, HumanLabels]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """F1/precision/recall/AUC over a threshold grid and coverage over an ε grid, per group.

    The threshold grid spans the observed α_test range (plus the calibrated τ) and is the
    same for every group, so a metric series' step means the same threshold everywhere.
    """
    alpha_test = pd.Series(outcome.alpha_test, index=outcome.table.index)
    lo, hi = float(alpha_test.min()), float(alpha_test.max())
    points = np.linspace(lo, hi, int(cfg.evaluation.threshold_grid))
    tau = outcome.params.get("tau")
    if tau is not None and math.isfinite(float(tau)):
        points = np.unique(np.append(points, float(tau)))
    thresholds, epsilons = [], []
    for name, labels in groups.items():
        common = [p for p in alpha_test.index if p in labels.labels.index]
        if not common:
            continue
        y = labels.labels.loc[common].to_numpy()
        a = alpha_test.loc[common].to_numpy()
        frame = threshold_sweep(y, a, grid=points, n_points=2)
        frame = frame[np.isin(frame["threshold"].to_numpy(), points)].reset_index(drop=True)
        frame.insert(0, "group", name)
        frame.insert(1, "n", len(common))
        thresholds.append(frame)
        eps = epsilon_sweep(
            outcome.alpha_cal, a, list(cfg.evaluation.epsilon_grid), outcome.quantile, y_true=y
        )
        eps.insert(0, "group", name)
        eps.insert(1, "n", len(common))
        epsilons.append(eps)
    return pd.concat(thresholds, ignore_index=True), pd.concat(epsilons, ignore_index=True)


def theta_sensitivity(cfg: DictConfig, outcome: ProxyOutcome, groups: dict[str, HumanLabels]) -> pd.DataFrame:
    """P2's fixed rule High iff SSC_meta(test) ≥ θ over ``evaluation.theta_grid``, per group."""
    similarity = outcome.table["ssc_meta_test"].astype(float)
    frames = []
    for name, labels in groups.items():
        common = [p for p in similarity.index if p in labels.labels.index]
        if not common:
            continue
        frame = similarity_sweep(labels.labels.loc[common].to_numpy(), similarity.loc[common].to_numpy(),
                                 list(cfg.evaluation.theta_grid))
        frame.insert(0, "group", name)
        frame.insert(1, "n", len(common))
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def grid_series(frame: pd.DataFrame, name: str, x: str, per_group: tuple[str, ...],
                overall: tuple[str, ...] = ()) -> dict[str, list[float]]:
    """Metric series ``sens.<name>.<column>[.<group>]`` from a sweep frame (step = grid index):
    the grid itself as ``sens.<name>.value``, ``overall`` columns for all readers only, and
    ``per_group`` columns for all readers and each subgroup."""
    series: dict[str, list[float]] = {}
    for group, rows in frame.groupby("group", sort=False):
        suffix = "" if group == "all" else f".{group}"
        if group == "all":
            series[f"sens.{name}.value"] = rows[x].tolist()
            for col in overall:
                series[f"sens.{name}.{col}"] = rows[col].tolist()
        for col in per_group:
            series[f"sens.{name}.{col}{suffix}"] = rows[col].tolist()
    return series


def sensitivity_series(thr: pd.DataFrame, eps: pd.DataFrame) -> dict[str, list[float]]:
    """Metric series for MLflow: ``sens.threshold.<metric>[.<group>]`` and ``sens.epsilon.…``."""
    return {
        **grid_series(thr, "threshold", "threshold", SERIES_COLUMNS),
        **grid_series(eps, "epsilon", "epsilon", ("f1", "auc_binary"), overall=("nominal", "coverage", "tau")),
    }


def write_outputs(
    cfg: DictConfig,
    run_dir: Path,
    outcome: ProxyOutcome,
    groups: dict[str, HumanLabels],
    reports: dict[str, Any],
) -> Artifacts:
    """Write the job's result files; return them with the metric series to log."""
    from mcu_exp.report.plots import plot_coverage, plot_threshold_curves

    folder = run_dir / "results"
    folder.mkdir(parents=True, exist_ok=True)
    per_program_table(outcome, groups["all"]).to_csv(folder / "per_program.csv")
    summary = pd.concat([rep.to_frame().reset_index().assign(group=name) for name, rep in reports.items()],
                        ignore_index=True)
    summary.to_csv(folder / "alignment.csv", index=False)
    for name, frame in outcome.records.items():
        frame.to_csv(folder / f"{name}.csv", index=False)
    (folder / "specs.json").write_text(json.dumps(outcome.specs, indent=2, sort_keys=True, default=str))
    artifacts = Artifacts(folder=folder)
    if outcome.alpha_test is not None and outcome.alpha_cal is not None:
        with warnings.catch_warnings():  # grid ends label every program alike, by design
            warnings.simplefilter("ignore", DegenerateMetricWarning)
            thr, eps = sensitivity(cfg, outcome, groups)
        thr.to_csv(folder / "sensitivity_threshold.csv", index=False)
        eps.to_csv(folder / "sensitivity_epsilon.csv", index=False)
        if cfg.evaluation.plots:
            plot_threshold_curves(thr, folder / "sensitivity_threshold.png", tau=outcome.params.get("tau"))
            plot_coverage(eps, folder / "coverage_epsilon.png")
        artifacts.series = sensitivity_series(thr, eps)
    if "ssc_meta_test" in outcome.table.columns:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DegenerateMetricWarning)
            theta = theta_sensitivity(cfg, outcome, groups)
        theta.to_csv(folder / "sensitivity_theta.csv", index=False)
        if cfg.evaluation.plots:
            plot_threshold_curves(theta, folder / "sensitivity_theta.png", tau=float(cfg.decision.theta),
                                  x="theta", xlabel="θ on SSC_meta(test) (High iff SSC_meta ≥ θ)")
        artifacts.series.update(grid_series(theta, "theta", "theta", SERIES_COLUMNS))
    return artifacts
