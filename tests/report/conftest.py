"""A real stand-in sweep (Hydra's multirun, no model) in its own MLflow store, shared by the report
tests of a module; and an empty MLflow store for tests that log their own runs."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from support.mlflow_runs import Store
from support.sweeps import Sweep, sweep_in_process


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    """A fresh SQLite MLflow store per test module (each test logs to an experiment of its own)."""
    from support.mlflow_store import seed_store

    outputs = seed_store(tmp_path_factory.mktemp("mlflow") / "outputs")
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("MLFLOW_TRACKING_URI", raising=False)
        yield Store(outputs, f"sqlite:///{outputs / 'mlflow.db'}")


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Sweep:
    """Two models × two ε through the paper grid's config (narrowed on the command line), swept
    in this process: the reports read its runs (the command's own sweeps run in tests/app and
    tests/tracking)."""
    from mlflow.tracking import MlflowClient

    from support.mlflow_store import seed_store

    outputs = seed_store(tmp_path_factory.mktemp("sweep") / "outputs")
    sweep_in_process(outputs, "experiment=paper_grid", "model=gpt-4o,qwen3-14b", "decision.epsilon=0.05,0.2")
    uri = f"sqlite:///{outputs / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    runs = client.search_runs([client.get_experiment_by_name("mcu_exp").experiment_id])
    runs = [r for r in runs if r.data.tags.get("mcu.kind") == "job"]  # the jobs, not the sweep's parent run
    tags = {r.data.tags["mcu.sweep"] for r in runs}
    assert len(runs) == 4 and len(tags) == 1
    return Sweep(outputs, uri, tags.pop())
