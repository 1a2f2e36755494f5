"""A fresh SQLite MLflow store costs ~3 s to create (MLflow runs its schema migrations);
jobs in subprocess tests each start with an empty outputs folder and would pay that every
time. :func:`seed_store` copies one store, created once per test process by MLflow itself,
into a new outputs folder: the same schema a job would have created, at the cost of a copy.

A job's decision-independent results (the humans' ceiling, the measure table's bootstraps, the
code-metric baselines: :mod:`mcu_exp.result_cache`) cost seconds on a fresh outputs folder, the
same seconds in every test whose jobs read the same programs. :func:`seed_store` (and
:func:`share_results`) makes the folder's ``cache/results`` a link to one folder that every test
of this test run shares: an entry is keyed by its inputs and the source of the code that
computes it, written atomically, and read back bit for bit, so a job gets what it would have
computed; only the first test to need a value pays for it. Tests of the result cache itself
use folders of their own; those of full disks pass ``results=False`` (their jobs must write
there)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

STORE = "mlflow.db"
RESULTS_ENV = "MCU_EXP_TEST_RESULTS"
_template: Path | None = None
_results: Path | None = None


def _created_once() -> Path:
    global _template
    if _template is None:
        from mlflow.tracking import MlflowClient

        folder = Path(tempfile.mkdtemp(prefix="mlflow-template-"))
        MlflowClient(tracking_uri=f"sqlite:///{folder / STORE}").search_experiments()
        _template = folder / STORE
    return _template


def seed_store(outputs: Path, results: bool = True) -> Path:
    """``outputs`` (created) holding an empty, migrated MLflow store, and with ``results`` the
    test run's shared result cache (:func:`share_results`); returns ``outputs``."""
    outputs.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(_created_once(), outputs / STORE)
    if results:
        share_results(outputs)
    return outputs


def share_results(outputs: Path) -> Path:
    """Make ``outputs/cache/results`` (the result cache of a job on the default ``cache.dir``)
    a link to this test run's one results folder, ``$MCU_EXP_TEST_RESULTS`` (set by
    tests/conftest.py under the session's temporary folder, which both xdist workers share),
    else one folder per test process; returns ``outputs``. Nothing else of the cache is shared:
    generations and scores stay the test's own."""
    from mcu_exp.result_cache import RESULTS_DIR

    global _results
    if _results is None:
        named = os.environ.get(RESULTS_ENV)
        _results = Path(named) if named else Path(tempfile.mkdtemp(prefix="mcu-exp-test-results-"))
    shared = _results
    shared.mkdir(parents=True, exist_ok=True)
    link = outputs / "cache" / RESULTS_DIR
    link.parent.mkdir(parents=True, exist_ok=True)
    if not (link.exists() or link.is_symlink()):  # a folder of its own, or already linked
        link.symlink_to(shared, target_is_directory=True)
    return outputs


def all_metrics(client: object, run: object) -> dict[str, float]:
    """Every metric a job computed: its ``metrics.json`` artifact (MLflow holds the headline
    set only), an undefined one (null there) as NaN."""
    import json

    from mcu_exp import names
    from mcu_exp.tracking.artifacts import RunArtifacts

    info = run.info  # type: ignore[attr-defined]
    with tempfile.TemporaryDirectory() as tmp:
        path = RunArtifacts(client, info.run_id, info.artifact_uri).get(names.METRICS_FILE, Path(tmp))
        assert path is not None, f"run {info.run_id} has no {names.METRICS_FILE}"
        return {k: float("nan") if v is None else float(v) for k, v in json.loads(path.read_text()).items()}


def table_run(tmp_path: Path) -> tuple[Any, str, Any]:
    """A fresh local store with one run in an experiment ``tables``: its client, the run's id
    and the run's :class:`~mcu_exp.tracking.artifacts.RunArtifacts`."""
    from mlflow.tracking import MlflowClient

    from mcu_exp.tracking.artifacts import RunArtifacts, experiment_location

    outputs = seed_store(tmp_path / "outputs")
    client = MlflowClient(tracking_uri=f"sqlite:///{outputs / 'mlflow.db'}")
    run = client.create_run(client.create_experiment("tables", artifact_location=experiment_location("tables")))
    return client, run.info.run_id, RunArtifacts(client, run.info.run_id, run.info.artifact_uri)
