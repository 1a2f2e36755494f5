"""A job's files: the per-program table, metrics, sensitivity grids and their plots.

Everything lands in ``<run dir>/results/``, which is logged to MLflow as the run's
artifacts; the headline curves are also returned as metric series (step = grid value × 1000)
so the MLflow UI charts them against the threshold, ε or θ.
"""

from __future__ import annotations

import json
import logging
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from mcu_exp import names
from mcu_exp.config import EvaluationConfig
from mcu_exp.data import HumanLabels
from mcu_exp.evaluation import DegenerateMetricWarning
from mcu_exp.evaluation.sensitivity import decision_grids, grid_series, theta_grid
from mcu_exp.proxies.base import ProxyOutcome
from mcu_exp.redact import redact_tree
from mcu_exp.registry import plugin_record

log = logging.getLogger(__name__)


@dataclass
class Artifacts:
    """Where the files are, and the metric series to log."""

    folder: Path
    series: dict[str, list[tuple[int, float]]] = field(default_factory=dict)  # name → (step, value)


def per_program_table(outcome: ProxyOutcome, labels: HumanLabels) -> pd.DataFrame:
    """Program id, human label (and its evidence), the proxy's score and label, proxy columns."""
    table = outcome.table.copy()
    human = pd.DataFrame(
        {
            names.HUMAN_LABEL: labels.labels,
            names.HUMAN_FRACTION: labels.fraction,
            names.N_EVALUATORS: labels.n_evaluators,
        }
    )
    front = list(names.PER_PROGRAM_FRONT)
    merged = human.join(table, how="right")
    rest = [c for c in merged.columns if c not in front]
    merged = merged[front + rest]
    merged.index.name = names.PROGRAM_ID
    return merged


def scores_table(outcome: ProxyOutcome, labels: HumanLabels) -> pd.DataFrame | None:
    """The arrays the decision rule used (``alpha_cal``, ``alpha_test``, ``similarity_test``…,
    named as :class:`mcu_exp.calibration.Scores`), with the human label: the one input
    ``mcu-exp tune`` and other re-analyses need, whatever the proxy. None for uncalibrated proxies."""
    if outcome.scores is None:
        return None
    index = outcome.table.index
    frame = pd.DataFrame({name: getattr(outcome.scores, name) for name in outcome.scores.offered()}, index=index)
    frame.insert(0, names.HUMAN_LABEL, labels.labels.reindex(index))
    frame.index.name = names.PROGRAM_ID
    return frame


def write_outputs(
    ev: EvaluationConfig,
    run_dir: Path,
    outcome: ProxyOutcome,
    groups: dict[str, HumanLabels],
    reports: dict[str, Any],
    cache_dir: Path | None = None,
) -> Artifacts:
    """Write the job's result files; return them with the metric series to log (the figures are
    drawn from these files, :mod:`mcu_exp.report.job_figures`). ``cache_dir``: where the ε grid,
    which the decision does not change, is kept per input."""
    folder = run_dir / names.RESULTS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    per_program_table(outcome, groups[names.ALL_READERS]).to_csv(folder / names.PER_PROGRAM_FILE)
    summary = pd.concat(
        [rep.to_frame().reset_index().assign(group=name) for name, rep in reports.items()], ignore_index=True
    )
    summary.to_csv(folder / names.ALIGNMENT_FILE, index=False)
    for name, frame in outcome.records.items():
        frame.to_csv(folder / names.records_file(name), index=False)
    scores_frame = scores_table(outcome, groups[names.ALL_READERS])
    if scores_frame is not None:
        scores_frame.to_csv(folder / names.SCORES_FILE)
    specs = redact_tree(json.loads(json.dumps(outcome.specs, default=str)))  # no token, no URL password
    plugins = plugin_record()
    if plugins:  # the plugin packages loaded and what they replaced (absent: none installed)
        specs["plugins"] = plugins
    (folder / names.SPECS_FILE).write_text(json.dumps(specs, indent=2, sort_keys=True))
    artifacts = Artifacts(folder=folder)
    scores = outcome.scores
    labels = {name: group.labels for name, group in groups.items()}
    if scores is not None and scores.alpha_test is not None and scores.alpha_cal is not None:
        alpha_test = pd.Series(scores.alpha_test, index=outcome.table.index)
        tau = outcome.params.get("tau")
        with warnings.catch_warnings():  # grid ends label every program alike, by design
            warnings.simplefilter("ignore", DegenerateMetricWarning)
            thr, eps = decision_grids(
                scores.alpha_cal,
                alpha_test,
                labels,
                threshold_points=ev.threshold_grid,
                epsilons=ev.epsilon_grid,
                quantile_rule=outcome.quantile,
                tau=None if tau is None else float(tau),
                cache_dir=cache_dir,
            )
        thr.to_csv(folder / names.sensitivity_file(names.THRESHOLD_GRID), index=False)
        eps.to_csv(folder / names.sensitivity_file(names.EPSILON_GRID), index=False)
        artifacts.series = {**grid_series(thr, names.THRESHOLD_GRID), **grid_series(eps, names.EPSILON_GRID)}
    if scores is not None and scores.similarity_test is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DegenerateMetricWarning)
            similarity = pd.Series(scores.similarity_test, index=outcome.table.index, dtype=float)
            theta = theta_grid(similarity, labels, ev.theta_grid)
        theta.to_csv(folder / names.sensitivity_file(names.THETA_GRID), index=False)
        artifacts.series.update(grid_series(theta, names.THETA_GRID))
    return artifacts
