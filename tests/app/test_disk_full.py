"""A full disk under the cache or the outputs: the job stops with one line saying so (no
traceback), and its MLflow run ends FAILED, not RUNNING, though the store is on that disk."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from mcu_exp.config import TrackingConfig
from mcu_exp.llm.cache import open_generation_cache
from mcu_exp.llm.contract import Sample
from mcu_exp.store.faults import StoreFault, disk_full_message
from mcu_exp.tracking import mlflow_run
from mcu_exp.tracking.reserve import RESERVE_DIR
from support.mlflow_store import seed_store
from support.small_disk import fill, small_disk


@pytest.fixture
def outputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An outputs folder with its MLflow store on a 2 MiB disk (the store takes about half)."""
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    with small_disk(tmp_path / "disk") as disk:
        yield seed_store(disk / "outputs", results=False)  # every write on the small disk


def only_run(outputs: Path) -> object:
    client = MlflowClient(tracking_uri=f"sqlite:///{outputs / 'mlflow.db'}")
    (run,) = [r for e in client.search_experiments() for r in client.search_runs([e.experiment_id])]
    return run


def test_a_run_whose_job_fills_the_disk_ends_failed(outputs: Path) -> None:
    with pytest.raises(StoreFault) as caught, mlflow_run(TrackingConfig(), str(outputs), "fills the disk", {}):
        cache = open_generation_cache(outputs / "cache")
        fill(outputs.parent)  # what the job's outputs did
        cache.put_many([(f"k{i}", Sample("x" * 4000, "stop", 1, 1), {"index": i}) for i in range(100)])
    assert "the disk is full" in str(caught.value) and "\n" not in str(caught.value)
    run = only_run(outputs)
    assert run.info.status == "FAILED"  # was RUNNING: the store could not take the end
    assert "the disk is full" in run.data.tags["mcu.error"]
    assert not list((outputs / RESERVE_DIR).iterdir())  # the room kept was given back


def test_a_full_disk_reads_as_such_whoever_reports_it(tmp_path: Path) -> None:
    written = tmp_path / "results" / "per_program.csv"
    message = disk_full_message(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(written)))
    assert message is not None and message.startswith(f"the disk is full writing {written} (")
    assert f"df -h {written.parent}" in message and "\n" not in message
    try:
        raise RuntimeError("(sqlite3.OperationalError) database or disk is full\n[SQL: INSERT …]")
    except RuntimeError as exc:  # as MLflow's store wraps SQLite's error
        wrapped = disk_full_message(exc)
    assert wrapped is not None and "\n" not in wrapped and "free space" in wrapped
    assert disk_full_message(OSError(errno.EACCES, "Permission denied")) is None
