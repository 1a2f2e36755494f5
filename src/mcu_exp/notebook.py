"""One finished job's results in a notebook, from a local store without a server.

``MlflowClient("sqlite:///…/mlflow.db").list_artifacts(run_id)`` fails on this project's local
stores ("When an mlflow-artifacts URI was supplied, the tracking URI must be a valid http or
https URI"): their runs record artifact locations relative to the store
(:mod:`mcu_exp.tracking.artifacts`), which only a server or this project's own readers
resolve. :func:`load_run` is that reader for a notebook::

    import mcu_exp
    run = mcu_exp.load_run("4f1c…")        # $MLFLOW_TRACKING_URI, else outputs/mlflow.db
    run.per_program.head()                  # one row per program: human label, score, label, …
    run.metrics["f1_minus_always_ci_low"]   # every metric of metrics.json
    run.config["decision"]["epsilon"]       # the resolved config the job ran with

It works the same on a tracking server (``tracking_uri="http://…"``), downloading the files.
:func:`load_sweep` reads a sweep's ranked table (one row per job) from its parent run's id.
"""

from __future__ import annotations

import contextlib
import json
import math
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcu_exp.names import CONFIG_FILE, METRICS_FILE, PER_PROGRAM_FILE, PROGRAM_ID, RESULTS_DIR


class RunNotFound(LookupError):
    """A run :func:`load_run` cannot read; the message is one line."""


@dataclass(frozen=True)
class LoadedRun:
    """A finished job: its per-program table (index ``program_id``), every metric
    (``metrics.json`` over the run's MLflow metrics; undefined ones NaN), the resolved config
    (``config.yaml``; the flat MLflow params when the run has none), params and tags."""

    run_id: str
    name: str
    experiment: str
    status: str
    per_program: Any  # pandas.DataFrame
    metrics: dict[str, float]
    config: dict[str, Any]
    params: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)


def _artifact(artifacts: Any, name: str, dst: Path) -> Path | None:
    """A run file at the artifact root or under ``results/``."""
    found: Path | None = artifacts.get(name, dst) or artifacts.get(f"{RESULTS_DIR}/{name}", dst)
    return found


def load_run(run_id: str, tracking_uri: str | None = None) -> LoadedRun:
    """Run ``run_id`` of the store at ``tracking_uri`` (default: ``$MLFLOW_TRACKING_URI``,
    else ``<outputs>/mlflow.db`` as ``mcu-exp report`` finds it): a local SQLite store is read
    directly, no server needed; a server's files are downloaded. :class:`RunNotFound` when the
    store, the run or its per-program table is missing."""
    import pandas as pd

    from mcu_exp.report.build import default_tracking_uri
    from mcu_exp.tracking.artifacts import RunArtifacts, RunLookupError, fetch_run
    from mcu_exp.yaml_limits import safe_load

    uri = tracking_uri or default_tracking_uri()
    try:
        client, run = fetch_run(uri, run_id)
    except RunLookupError as exc:
        raise RunNotFound(f"run {run_id!r} in {uri}: {exc}") from None
    artifacts = RunArtifacts(client, run_id, run.info.artifact_uri)
    with tempfile.TemporaryDirectory(prefix="mcu-load-") as tmp:
        table = _artifact(artifacts, PER_PROGRAM_FILE, Path(tmp))
        if table is None:
            raise RunNotFound(f"run {run_id} has no {PER_PROGRAM_FILE} (is it a finished job of mcu-exp?)")
        per_program = pd.read_csv(table, dtype={PROGRAM_ID: str}).set_index(PROGRAM_ID)
        metrics: dict[str, float] = dict(run.data.metrics)
        saved = _artifact(artifacts, METRICS_FILE, Path(tmp))
        if saved is not None:
            metrics.update({k: math.nan if v is None else float(v) for k, v in json.loads(saved.read_text()).items()})
        config_file = _artifact(artifacts, CONFIG_FILE, Path(tmp))
        config = (
            safe_load(config_file.read_text(), f"run {run_id}: {CONFIG_FILE}")
            if config_file is not None
            else dict(run.data.params)
        )
    experiment = client.get_experiment(run.info.experiment_id)
    return LoadedRun(
        run_id=run_id,
        name=str(run.info.run_name or run_id),
        experiment=str(experiment.name) if experiment is not None else "",
        status=str(run.info.status),
        per_program=per_program,
        metrics=metrics,
        config=config if isinstance(config, dict) else {},
        params=dict(run.data.params),
        tags=dict(run.data.tags),
    )


def load_sweep(parent_id: str, tracking_uri: str | None = None) -> Any:
    """The ranked table of the sweep whose parent run is ``parent_id``, as a DataFrame: one row
    per job, best first (:func:`mcu_exp.report.sweep_summary.summary_frame`, the rows the end of
    the sweep printed and logged as ``sweep_summary.csv``), numbers as value/low/high columns, with
    each job's MLflow ``run_id`` beside its name; rebuilt from the store (``tracking_uri`` as in
    :func:`load_run`), so a sweep read while its jobs run shows them as they are. A job that
    stopped before opening a run has a FAILED row when the sweep's folder is on this machine.
    :class:`RunNotFound` when the run is missing or is no sweep's parent."""
    from mcu_exp.names import KIND_SWEEP, TAG_KIND
    from mcu_exp.report import sweep_summary
    from mcu_exp.report.build import default_tracking_uri
    from mcu_exp.tracking.artifacts import RunLookupError, fetch_run
    from mcu_exp.tracking.sweep import PARENT_FILE, PARENT_TAG, failed_jobs

    uri = tracking_uri or default_tracking_uri()
    try:
        client, run = fetch_run(uri, parent_id)
    except RunLookupError as exc:
        raise RunNotFound(f"run {parent_id!r} in {uri}: {exc}") from None
    kind = run.data.tags.get(TAG_KIND)
    if kind != KIND_SWEEP:
        raise RunNotFound(
            f"run {parent_id} is no sweep's parent run (tag {TAG_KIND} is {kind!r}, expected {KIND_SWEEP!r}); "
            "mcu_exp.load_run reads a single job"
        )
    children = list(
        client.search_runs(
            [run.info.experiment_id], filter_string=f"tags.`{PARENT_TAG}` = '{parent_id}'", max_results=5000
        )
    )
    folder = Path(run.data.tags.get("mcu.sweep_dir", ""))
    varying: list[str] = []
    with contextlib.suppress(OSError, ValueError):
        varying = list(json.loads((folder / PARENT_FILE).read_text()).get("varying", []))
    failed = failed_jobs(folder) if folder.is_dir() and str(folder) != "." else {}
    metrics = {r.info.run_id: sweep_summary.job_metrics(client, r) for r in children}
    return sweep_summary.summary_frame(children, metrics, failed, folder, varying)  # run_id beside run
