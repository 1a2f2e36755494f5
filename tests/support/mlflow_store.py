"""A fresh SQLite MLflow store costs ~3 s to create (MLflow runs its schema migrations);
jobs in subprocess tests each start with an empty outputs folder and would pay that every
time. :func:`seed_store` copies one store, created once per test process by MLflow itself,
into a new outputs folder: the same schema a job would have created, at the cost of a copy."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

STORE = "mlflow.db"
_template: Path | None = None


def _created_once() -> Path:
    global _template
    if _template is None:
        from mlflow.tracking import MlflowClient

        folder = Path(tempfile.mkdtemp(prefix="mlflow-template-"))
        MlflowClient(tracking_uri=f"sqlite:///{folder / STORE}").search_experiments()
        _template = folder / STORE
    return _template


def seed_store(outputs: Path) -> Path:
    """``outputs`` (created) holding an empty, migrated MLflow store; returns ``outputs``."""
    outputs.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(_created_once(), outputs / STORE)
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
