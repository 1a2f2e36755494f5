"""A job killed with SIGKILL leaves its MLflow run RUNNING; the next job on this host marks it KILLED."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from mcu_exp.config import TrackingConfig
from mcu_exp.names import TAG_DEBUG
from mcu_exp.tracking import mlflow_run
from support.fake_api import PLANTED_KEY, FakeServer
from support.mlflow_store import seed_store

pytestmark = pytest.mark.slow  # a job in a subprocess

REPO = Path(__file__).resolve().parents[3]


def wait_for_running_run(db: Path, proc: subprocess.Popen[str]) -> str:
    """The id of the job's run once it is RUNNING (the job is then held by the stalled server);
    the store is read with sqlite3 so that the test never races the job creating it."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()[0][-3000:]
        try:
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
                rows = conn.execute("SELECT run_uuid FROM runs WHERE status = 'RUNNING'").fetchall()
        except sqlite3.Error:  # no store or no schema yet
            rows = []
        if rows:
            return str(rows[0][0])
        time.sleep(0.5)
    raise AssertionError("the job never started its MLflow run")


def test_killed_job_run_is_marked_killed_by_the_next_job(
    fake_server: FakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    outputs = seed_store(tmp_path / "outputs")
    env = {**os.environ, "OPENAI_API_KEY": PLANTED_KEY, "MCU_EXP_OUTPUTS": str(outputs)}
    env.pop("MLFLOW_TRACKING_URI", None)
    fake_server.stall_after = 0  # every request is held: the job stays inside its run
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mcu_exp",
            "model=gpt-4o",
            f"model.base_url={fake_server.url}/v1",
            "model.requests_per_minute=null",
            "model.tokens_per_minute=null",
            "debug=quick",
            "dataset.limit=4",
            "proxy.k=4",
            "proxy.k_cal=2",
            "quiet=true",
            "model.timeout_s=600",
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        run_id = wait_for_running_run(outputs / "mlflow.db", proc)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
    client = MlflowClient(tracking_uri=f"sqlite:///{outputs / 'mlflow.db'}")
    assert client.get_run(run_id).data.tags["mcu.pid"] == str(proc.pid)
    assert client.get_run(run_id).info.status == "RUNNING"

    with mlflow_run(TrackingConfig(), str(outputs), "next job", {TAG_DEBUG: "true"}) as outer:
        stale = client.get_run(run_id)
        assert stale.info.status == "KILLED"
        assert str(proc.pid) in stale.data.tags["mcu.killed_reason"]
        with mlflow_run(TrackingConfig(), str(outputs), "nested job", {TAG_DEBUG: "true"}):
            pass  # a run whose process is alive (this one) is left alone
        assert client.get_run(outer.run_id).info.status == "RUNNING"
    assert client.get_run(outer.run_id).info.status == "FINISHED"
