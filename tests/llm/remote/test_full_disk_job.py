"""A whole job on a disk that fills: one line saying so, no traceback, its MLflow run FAILED."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from support.fake_api import PLANTED_KEY, FakeServer
from support.mlflow_store import seed_store
from support.small_disk import fill, small_disk

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.slow  # a job in a subprocess
def test_a_job_on_a_full_disk_is_one_line_and_its_run_ends_failed(
    fake_server: FakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    with small_disk(tmp_path / "disk") as disk:
        outputs = seed_store(disk / "outputs", results=False)  # every write on the small disk
        fill(disk, leave=300_000)  # room to start, not to finish
        env = {**os.environ, "OPENAI_API_KEY": PLANTED_KEY, "MCU_EXP_OUTPUTS": str(outputs)}
        res = subprocess.run(
            [
                sys.executable,
                "-m",
                "mcu_exp",
                "model=gpt-4o",
                f"model.base_url={fake_server.url}/v1",
                "model.requests_per_minute=null",
                "model.tokens_per_minute=null",
                "debug=quick",
                "scorer=rougel",
                "dataset.limit=4",
                "proxy.k=4",
                "proxy.k_cal=2",
                "quiet=true",
                "evaluation.plots=false",
            ],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        (disk / "filler").unlink()
        client = MlflowClient(tracking_uri=f"sqlite:///{outputs / 'mlflow.db'}")
        statuses = [r.info.status for e in client.search_experiments() for r in client.search_runs([e.experiment_id])]
    errors = [line for line in res.stderr.splitlines() if line.startswith("mcu-exp: error: ")]
    assert res.returncode == 1 and len(errors) == 1 and "the disk is full" in errors[0], res.stderr[-3000:]
    assert "Traceback" not in res.stderr, res.stderr[-3000:]
    assert statuses == ["FAILED"]  # was RUNNING: the store, on the same disk, could not take the end
