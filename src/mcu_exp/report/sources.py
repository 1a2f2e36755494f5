"""Where a report reads each run's numbers from: its artifacts, not only MLflow's metrics.

A job logs a headline set of metrics to MLflow and every metric to the ``metrics.json``
artifact at its run's artifact root (a JSON object name → number, ``null`` for a metric
that has no value on the run's data); its sensitivity curves are the ``sensitivity_*.csv``
artifacts beside it. :class:`RunFiles` reads both through
:class:`mcu_exp.tracking.artifacts.RunArtifacts`: straight from ``<store>/mlartifacts`` for
a local store (wherever the store folder now lives), downloaded for a remote one, through
MLflow for older runs recorded with an absolute ``file:`` location.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from mcu_exp.names import (
    ALL_READERS,
    EPSILON_GRID,
    METRICS_FILE,
    RESULTS_DIR,
    THETA_GRID,
    THRESHOLD_GRID,
    current_metric_key,
    sensitivity_file,
)
from mcu_exp.tracking.artifacts import RunArtifacts

# The columns each figure reads from a grid's CSV (more are kept when the CSV has them).
GRID_COLUMNS: dict[str, tuple[str, ...]] = {
    THRESHOLD_GRID: (THRESHOLD_GRID, "f1", "auc_binary"),
    EPSILON_GRID: (EPSILON_GRID, "nominal", "coverage"),
    THETA_GRID: (THETA_GRID, "f1", "auc_binary"),
}


def warn(message: str) -> None:
    """One line on stderr: something the report left out, and why."""
    print(f"mcu-exp report: warning: {message}", file=sys.stderr)


def merged_metrics(logged: Mapping[str, float], saved: Mapping[str, Any]) -> dict[str, float]:
    """A run's MLflow metrics with its ``metrics.json`` over them: the file's value wins, a
    ``null`` reads as NaN (undefined), a non-number is left out. Keys an older run logged
    under a since-renamed prefix (``vs_p0.``) read under today's name."""
    merged = {current_metric_key(name): float(value) for name, value in logged.items()}
    for key, value in saved.items():
        name = current_metric_key(key)
        if value is None:
            merged[name] = math.nan
        elif isinstance(value, int | float) and not isinstance(value, bool):
            merged[name] = float(value)
    return merged


class RunFiles:
    """The artifacts of the runs a report compares, by run id. Files of remote stores are
    downloaded under ``dst/<run id>/``; local ones are read where they lie.

    A finished run with no artifact at all lost them (a moved or pruned ``mlartifacts/``, an
    emptied bucket): every job logs files. Such runs are in :attr:`gone` and each is named in a
    warning, so that its "—" cells are not read as a run from before a measure existed."""

    def __init__(self, client: Any, runs: Iterable[Any], dst: Path) -> None:
        self.dst = Path(dst)
        runs = list(runs)
        self.artifacts = {r.info.run_id: RunArtifacts(client, r.info.run_id, r.info.artifact_uri or "") for r in runs}
        self.gone: dict[str, str] = {}  # run id → its name, for runs whose artifacts are missing
        for run in runs:
            if run.info.status == "FINISHED" and not self._listing(run.info.run_id):
                self.gone[run.info.run_id] = run.info.run_name or ""
                where = self.artifacts[run.info.run_id].local or run.info.artifact_uri
                warn(
                    f"run {run.info.run_id} ({run.info.run_name or 'unnamed'}): its artifacts are missing "
                    f"(nothing at {where}); its cells read from them show — and it is left out of the "
                    "measures, comparisons and curves: restore its artifact folder to report them"
                )

    def _listing(self, run_id: str) -> set[str]:
        """The run's top-level artifacts; empty when they cannot be listed (a location that is gone)."""
        try:
            return self.artifacts[run_id].list()
        except Exception:  # noqa: BLE001 (MLflow raises several types for a location that is gone)
            return set()

    def bundles(self, run_ids: Iterable[str]) -> dict[str, str]:
        """Where each run's bundle lies (``bundle/run-bundle.zip``: a local path, else its
        artifact URI), for the runs that logged one; nothing is downloaded."""
        found = {}
        for run_id in run_ids:
            artifacts = self.artifacts.get(run_id)
            if artifacts is None or "bundle" not in self._listing(run_id):
                continue
            try:
                listed = artifacts.list("bundle")
            except Exception:  # noqa: BLE001 (as in _listing)
                continue
            if "bundle/run-bundle.zip" in listed:
                found[run_id] = (
                    str(artifacts.local / "bundle" / "run-bundle.zip")
                    if artifacts.local is not None
                    else f"{artifacts.client.get_run(run_id).info.artifact_uri}/bundle/run-bundle.zip"
                )
        return found

    def path(self, run_id: str, artifact_file: str) -> Path | None:
        """The local path of one artifact of a run; None when the run has no such file."""
        artifacts = self.artifacts.get(run_id)
        if artifacts is None:
            return None
        folder = self.dst / run_id
        if artifacts.local is None:  # MLflow downloads into it
            folder.mkdir(parents=True, exist_ok=True)
        return artifacts.get(artifact_file, folder)

    def table(self, run_id: str, artifact_file: str, index: str) -> pd.DataFrame | None:
        """One CSV artifact of a run (at its artifact root, else under ``results/``), indexed by
        its column ``index`` read as text; None, with a warning when the file is unreadable or
        lacks that column, when the run has no such file."""
        path = self.path(run_id, artifact_file) or self.path(run_id, f"{RESULTS_DIR}/{artifact_file}")
        if path is None:
            return None
        try:
            frame = pd.read_csv(path, dtype={index: str})
        except (OSError, ValueError) as exc:  # pandas' parser errors are ValueErrors
            warn(f"run {run_id}: {artifact_file} unreadable ({str(exc).splitlines()[0]}); left out")
            return None
        if index not in frame.columns:
            warn(f"run {run_id}: {artifact_file} has no {index} column; left out")
            return None
        return frame.set_index(index)

    def metrics(self, run: Any) -> dict[str, float]:
        """Every metric of ``run``: :func:`merged_metrics` of its MLflow metrics and its
        ``metrics.json`` (only the former when the run has no such file or it is unreadable)."""
        path = self.path(run.info.run_id, METRICS_FILE)
        saved: Any = {}
        if path is not None:
            try:
                saved = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                warn(f"run {run.info.run_id}: {METRICS_FILE} unreadable ({exc}); using its MLflow metrics only")
            if not isinstance(saved, dict):
                warn(f"run {run.info.run_id}: {METRICS_FILE} is not a JSON object; using its MLflow metrics only")
                saved = {}
        return merged_metrics(run.data.metrics, saved)

    def curves(self, run_ids: Sequence[str], grid: str) -> pd.DataFrame:
        """The all-readers rows of each run's ``sensitivity_<grid>.csv`` as one frame with a
        ``run_id`` column (and every column of :data:`GRID_COLUMNS`, NaN where a CSV lacks
        one); runs without the file have no rows."""
        required = list(GRID_COLUMNS[grid])
        frames = []
        for run_id in run_ids:
            path = self.path(run_id, sensitivity_file(grid))
            if path is None:
                continue
            try:
                frame = pd.read_csv(path)
            except (OSError, ValueError) as exc:  # pandas' parser errors are ValueErrors
                warn(f"run {run_id}: {sensitivity_file(grid)} unreadable ({exc}); no {grid} curve for it")
                continue
            if "group" in frame.columns:
                frame = frame[frame["group"].astype(str) == ALL_READERS].drop(columns="group")
            if frame.empty or grid not in frame.columns:
                continue
            extra = [c for c in required if c not in frame.columns]
            frames.append(frame.reindex(columns=[*frame.columns, *extra]).assign(run_id=run_id))
        if not frames:
            return pd.DataFrame(columns=[*required, "run_id"])
        return pd.concat(frames, ignore_index=True)
