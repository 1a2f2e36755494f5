"""A job's results reach the MLflow store in as few ``log_batch`` calls as MLflow allows
(``RunLogger.batched``), with what separate calls would have left in the run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from mcu_exp.tracking.mlflow_run import RunLogger
from support.mlflow_store import seed_store


class CountingClient(MlflowClient):
    """MLflow's client, counting its ``log_batch`` calls."""

    calls = 0

    def log_batch(self, run_id: str, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
        type(self).calls += 1
        super().log_batch(run_id, *args, **kwargs)


def _logger(tmp_path: Path) -> tuple[CountingClient, RunLogger]:
    client = CountingClient(tracking_uri=f"sqlite:///{seed_store(tmp_path) / 'mlflow.db'}")  # a migrated store
    experiment = client.create_experiment("batched", artifact_location=str(tmp_path / "artifacts"))
    run = client.create_run(experiment)
    CountingClient.calls = 0
    return client, RunLogger(client, run.info.run_id, client.tracking_uri)


def test_metrics_params_and_tags_go_out_together_at_the_end(tmp_path: Path) -> None:
    client, tracker = _logger(tmp_path)
    metrics = {f"m{i}": float(i) for i in range(1500)}
    with tracker.batched():
        tracker.log_metrics_and_series(metrics, {"curve": [(0, 0.5), (1, 0.25)]})
        tracker.log_params({f"p{i}": str(i) for i in range(150)})
        tracker.set_tags({"verdict": "first", "other": "x"})
        tracker.set_tags({"verdict": "last"})
        assert client.get_run(str(tracker.run_id)).data.metrics == {}  # nothing written yet
    assert CountingClient.calls == 2  # 1502 metrics, 150 params, 2 tags: two calls (eight unbatched)
    data = client.get_run(str(tracker.run_id)).data
    assert data.metrics == {**metrics, "curve": 0.25}
    assert [m.value for m in client.get_metric_history(str(tracker.run_id), "curve")] == [0.5, 0.25]
    assert data.params == {f"p{i}": str(i) for i in range(150)}
    assert data.tags["verdict"] == "last" and data.tags["other"] == "x"


def test_a_param_changed_inside_is_refused_as_without_batching(tmp_path: Path) -> None:
    _, tracker = _logger(tmp_path)
    with pytest.raises(MlflowException), tracker.batched():
        tracker.log_params({"a": "1"})
        tracker.log_params({"a": "2"})
