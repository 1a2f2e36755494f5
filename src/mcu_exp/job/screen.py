"""What a job prints: its data and labels before anything runs, and its tables at the end."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcu_exp import names
from mcu_exp.config import Config
from mcu_exp.data import Dataset, HumanLabels
from mcu_exp.evaluation import render_table
from mcu_exp.evaluation.ceiling_lines import measure_line, render_ceiling_table
from mcu_exp.evaluation.groups_table import render_group_table
from mcu_exp.job.measures import render_measures
from mcu_exp.job.record import JobResults
from mcu_exp.proxies.base import Proxy
from mcu_exp.tracking import RunLogger, ui_command
from mcu_exp.tracking.artifacts import run_address


def print_inputs(dataset: Dataset, labels: HumanLabels, class_warning: str | None) -> None:
    """The dataset's size and where its files were found, how the human labels were made, and
    their class-size warning."""
    print(f"Dataset {dataset.name}: {len(dataset.programs)} programs, {len(dataset.evaluations)} evaluations")
    if dataset.source:
        print(f"  data: {dataset.source}")
    print(labels.describe().capitalize())
    if class_warning:
        print(f"warning: {class_warning}")


def print_results(done: JobResults, cfg: Config, reference: Proxy | None) -> None:
    """The results table against all readers, the per-group table, the table against the
    reference proxy's labels, the measure table with the humans' ceiling, the decision, and the
    proxy's own lines."""
    main, small = done.main, done.small
    print(
        render_table(
            main,
            title=f"{done.title} vs human labels ({cfg.labels.group}, n={main.n})",
        )
    )
    if len(done.reports) > 1:
        shown = {k: v for k, v in small.items() if k in done.reports and k != names.ALL_READERS}
        print(render_group_table(done.reports, shown, title=f"{done.title} per reader group"))
        ceilings = {name: rep.ceiling for name, rep in done.reports.items() if "ceiling.programs" in rep.ceiling}
        if len(ceilings) > 1:
            title = f"{done.title} against the humans' ceiling, per reader group"
            print(render_ceiling_table(ceilings, title, main.confidence))
    if done.vs_ref is not None and reference is not None:
        print(
            render_table(
                done.vs_ref,
                title=f"{done.title} vs {reference.name.upper()} labels (cross-proxy reliability, n={done.vs_ref.n})",
            )
        )
        if small.get("reference"):
            print(f"warning: {reference.name.upper()} labels: {small['reference']}")
    if done.measures is not None:
        print(render_measures(done.measures))
        print(measure_line(main.ceiling))
    print_decision(done.outcome.metrics)
    for line in done.outcome.report:
        print(line)


def print_where(run_dir: Path, tracker: RunLogger, bundle_line: str | None) -> None:
    """Where the job's files, its MLflow run and its bundle are."""
    print(f"Outputs: {run_dir}")
    if tracker.active and tracker.uri is not None:
        print(f"MLflow run {tracker.run_id} in {tracker.uri}")
        print(f"  open the UI: {ui_command(tracker.uri)}")
        if tracker.experiment_id is not None:
            print(f"  then: {run_address(tracker.uri, tracker.experiment_id, str(tracker.run_id))}")
    if bundle_line:
        print(bundle_line)


def print_decision(metrics: dict[str, Any]) -> None:
    """The calibrated threshold and the test coverage, each with the phrase that says what it
    is, when the proxy calibrated one."""
    if "tau" not in metrics:
        return
    kept = metrics.get("calibration_fraction", float("nan"))
    print(
        f"  τ = {metrics['tau']:.4f}: the calibrated threshold on the nonconformity score α; a program is "
        f"High when its α_test ≤ τ ({kept:.1%} of the calibration scores lie at or below it)"
    )
    if "coverage" in metrics:
        low, high = metrics.get("coverage_ci_low", float("nan")), metrics.get("coverage_ci_high", float("nan"))
        print(
            f"  coverage = {metrics['coverage']:.4f} [{low:.4f}, {high:.4f}]: the share of test scores at or "
            f"below τ (95 % Clopper–Pearson interval); calibration aims at 1 − ε = "
            f"{metrics.get('nominal_coverage', float('nan')):.4f}"
        )


def cache_line(stats: Mapping[str, float]) -> str | None:
    """``1,000 of 1,000 samples from the cache`` when any generated sample of the job came from
    the generation cache (``stats``: :meth:`mcu_exp.proxies.stages.Generators.stats`), else None."""
    hits = int(stats.get("generation_cache_hits", 0))
    total = hits + int(stats.get("generation_cache_misses", 0))
    if hits <= 0:
        return None
    return f"{hits:,} of {total:,} samples from the cache"
