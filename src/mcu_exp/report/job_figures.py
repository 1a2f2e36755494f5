"""A job's own figures, drawn from the files it wrote: by the job itself once its
``metrics.json`` is written, or later, for a sweep's jobs, by ``mcu-exp figures``; one code
path, so both draw the same figures.

``evaluation.plots`` decides when they are drawn: ``true`` in the job, ``false`` never by the job,
unset (the default) in a single run's job but not in a sweep's (each job's figures cost more CPU
than its decision-only evaluation; the sweep's report draws the figures that compare its jobs).
Everything here reads a job's ``results/`` folder: the sensitivity grids' CSVs, ``rejection.csv``,
``metrics.json`` (τ, the baselines, the humans' F1 band, the PRR) and ``config.yaml`` (ε, θ, the
names in the titles). The job's twins figure (``pairs.png``) is drawn only by the job.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from mcu_exp import names


def _number(metrics: dict[str, Any], key: str) -> float:
    value = metrics.get(key)
    return math.nan if value is None else float(value)


def _config(results: Path) -> dict[str, Any]:
    import yaml

    from mcu_exp.yaml_limits import safe_load

    path = results / names.CONFIG_FILE
    if not path.is_file():
        return {}
    try:
        loaded = safe_load(path.read_text(encoding="utf-8"), str(path))
    except (OSError, yaml.YAMLError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def _title(config: dict[str, Any]) -> str:
    """``model · proxy · ε=… · scorer`` from the job's config (what the job's own figures say)."""

    def name(section: str) -> str:
        found = config.get(section)
        return str(found.get("name", "")) if isinstance(found, dict) else ""

    decision = config.get("decision") if isinstance(config.get("decision"), dict) else {}
    parts = [name("model"), name("proxy")]
    if isinstance(decision, dict) and "epsilon" in decision:
        parts.append(f"ε={decision['epsilon']}")
    parts.append(name("scorer"))
    return " · ".join(p for p in parts if p)


def draw_job_figures(results: Path) -> list[Path]:
    """Draw every figure the job's files allow into ``results`` (a job's ``results/`` folder);
    the paths drawn, in order."""
    from mcu_exp.report.plots import plot_coverage, plot_epsilon_curves, plot_threshold_curves
    from mcu_exp.report.rejection_plot import plot_rejection
    from mcu_exp.tracking import headline_figure

    metrics_file = results / names.METRICS_FILE
    metrics: dict[str, Any] = json.loads(metrics_file.read_text(encoding="utf-8")) if metrics_file.is_file() else {}
    config = _config(results)
    decision = config.get("decision") if isinstance(config.get("decision"), dict) else {}
    title = _title(config)
    always = _number(metrics, "baseline_always_f1")
    drawn: list[Path] = []
    grid = results / names.sensitivity_file(names.THRESHOLD_GRID)
    if grid.is_file():
        tau = _number(metrics, "tau")
        path = results / "sensitivity_threshold.png"
        plot_threshold_curves(
            pd.read_csv(grid), path, tau=tau if math.isfinite(tau) else None, title=title, always_f1=always
        )
        drawn.append(path)
    grid = results / names.sensitivity_file(names.EPSILON_GRID)
    if grid.is_file():
        eps = pd.read_csv(grid)
        band = tuple(_number(metrics, f"ceiling.f1{s}") for s in ("", "_ci_low", "_ci_high"))
        epsilon = decision.get("epsilon") if isinstance(decision, dict) else None
        path = results / "sensitivity_epsilon.png"
        plot_epsilon_curves(
            eps,
            path,
            title=f"{title}: F1 against ε" if title else "",
            baselines={"always-1": always, "random": _number(metrics, "baseline_random_f1")},
            ceiling_f1=band if all(math.isfinite(v) for v in band) else None,
            epsilon=None if epsilon is None else float(epsilon),
        )
        plot_coverage(eps, results / "coverage_epsilon.png")
        drawn += [path, results / "coverage_epsilon.png"]
    grid = results / names.sensitivity_file(names.THETA_GRID)
    if grid.is_file():
        theta = decision.get("theta") if isinstance(decision, dict) else None
        path = results / "sensitivity_theta.png"
        plot_threshold_curves(
            pd.read_csv(grid),
            path,
            tau=None if theta is None else float(theta),
            x="theta",
            xlabel="θ on SSC_meta(test) (High iff SSC_meta ≥ θ)",
            title=title,
            always_f1=always,
        )
        drawn.append(path)
    curves, prr = results / names.REJECTION_FILE, _number(metrics, "prr")
    if curves.is_file() and math.isfinite(prr):
        drawn.append(plot_rejection(pd.read_csv(curves), prr, results / "rejection.png"))
    if metrics:
        drawn.append(headline_figure.draw(metrics, results / headline_figure.FILE))
    return drawn


def job_results(paths: list[Path]) -> list[Path]:
    """The ``results/`` folders under ``paths`` (a job folder, its ``results/``, or a sweep or
    outputs folder holding many), each once, in path order."""
    found: list[Path] = []
    for path in paths:
        if (path / names.METRICS_FILE).is_file():
            found.append(path)
        elif (path / names.RESULTS_DIR / names.METRICS_FILE).is_file():
            found.append(path / names.RESULTS_DIR)
        else:
            found += sorted(p.parent for p in path.glob(f"**/{names.RESULTS_DIR}/{names.METRICS_FILE}"))
    return list(dict.fromkeys(found))
