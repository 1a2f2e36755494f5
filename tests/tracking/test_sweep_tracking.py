"""Whole jobs with a stand-in proxy: MLflow runs, sweeps, failures, outputs. The sweep runs
through the real app (``-m``, its launcher and its exit status); single jobs run in this
process (the config the app composes, run by :func:`~mcu_exp.pipeline.run_job`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from mcu_exp.pipeline import run_job
from mcu_exp.tracking.artifacts import RunArtifacts
from support.hydra_job import hydra_job

pytestmark = pytest.mark.slow  # whole jobs (a sweep in a subprocess): seconds each on 2 cores

REPO = Path(__file__).resolve().parents[2]
STANDIN = "proxy._target_=support.standin_proxy.StandInProxy"


def run_app(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "tests")}
    flags = [a for a in args if a.startswith("-")]
    overrides = [a for a in args if not a.startswith("-")]
    return subprocess.run(
        [sys.executable, "-m", "mcu_exp", *flags, STANDIN, "quiet=true", *overrides],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def run_in_process(*overrides: str) -> float:
    """``run_app(*overrides)`` of a single job, in this process inside a Hydra job (the
    ``outputs`` fixture has set ``$MCU_EXP_OUTPUTS`` and unset ``$MLFLOW_TRACKING_URI``)."""
    with hydra_job(STANDIN, "quiet=true", *overrides) as cfg:
        return run_job(cfg)


def runs_in(outputs: Path) -> list:
    client = MlflowClient(tracking_uri=f"sqlite:///{outputs / 'mlflow.db'}")
    exp = client.get_experiment_by_name("mcu_exp")
    assert exp is not None
    return [r for r in client.search_runs([exp.experiment_id]) if r.data.tags.get("mcu.kind") != "sweep"]


def test_failing_job_is_marked_failed_and_the_sweep_goes_on(outputs: Path) -> None:
    res = run_app("-m", "proxy.k=20,13,21", "evaluation.bootstrap_resamples=1000", "tracking.sweep_report=false")
    assert res.returncode != 0  # the sweep reports the failure at the end
    runs = runs_in(outputs)
    status = {int(r.data.params["proxy.k"]): r.info.status for r in runs}
    assert status == {20: "FINISHED", 13: "FAILED", 21: "FINISHED"}
    failed = next(r for r in runs if r.info.status == "FAILED")
    assert "asked to fail" in failed.data.tags["mcu.error"]


def test_single_run_prints_table_and_logs_artifacts(outputs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_in_process("evaluation.bootstrap_resamples=1000", "labels.group=professional")
    stdout = capsys.readouterr().out
    assert "95 % CI" in stdout and "f1" in stdout.lower()
    assert "MLflow run" in stdout and "mlflow ui --backend-store-uri sqlite:///" in stdout
    assert "understandable" in stdout  # the class balance line
    (run,) = runs_in(outputs)
    client = MlflowClient(tracking_uri=f"sqlite:///{outputs / 'mlflow.db'}")
    address = f"  then: http://127.0.0.1:5000/#/experiments/{run.info.experiment_id}/runs/{run.info.run_id}"
    assert address in stdout.splitlines()  # the run's page in the UI, once it is open
    names = RunArtifacts(client, run.info.run_id, run.info.artifact_uri).list()
    assert {
        "config.yaml",
        "per_program.csv",
        "sensitivity_threshold.csv",
        "sensitivity_epsilon.csv",
        "sensitivity_threshold.png",
        "sensitivity_epsilon.png",
        "coverage_epsilon.png",
    } <= names
    art = RunArtifacts(client, run.info.run_id, run.info.artifact_uri)
    grid = json.loads(art.get("tables/sensitivity_epsilon.json", outputs / "fetched").read_text())
    table = pd.DataFrame(grid["data"], columns=grid["columns"])
    assert sorted(table[table["group"] == "all"]["epsilon"]) == sorted(set(table["epsilon"]))  # real ε, not steps
    assert 0.1 in set(table["epsilon"])
    alignment = pd.read_csv(Path(run.data.tags["mcu.output_dir"]) / "results" / "alignment.csv")
    assert {"metric", "value", "ci_low", "ci_high", "group"} <= set(alignment.columns)
    f1 = alignment[(alignment["metric"] == "f1") & (alignment["group"] == "all")]["value"].item()
    assert f1 == run.data.metrics["f1"]
    series = client.get_metric_history(run.info.run_id, "sensitivity/f1_vs_threshold_milli.minilm")
    steps = [m.step for m in series]  # the threshold in thousandths
    assert len(series) >= 35 and steps == sorted(set(steps)) and steps[0] >= 0 and steps[-1] <= 1000
    assert run.data.tags["mcu.labels.group"] == "professional"


def test_debug_job_logs_apart_from_real_runs(outputs: Path) -> None:
    run_in_process("debug=quick")
    client = MlflowClient(tracking_uri=f"sqlite:///{outputs / 'mlflow.db'}")
    assert client.get_experiment_by_name("mcu_exp") is None  # nothing in the real experiment
    (run,) = client.search_runs([client.get_experiment_by_name("mcu_exp-debug").experiment_id])
    assert run.info.run_name == "[debug] StandInProxy · smollm2-135m · p1 · ε=0.1"  # the stand-in override first
    assert run.data.tags["mcu.debug"] == "true" and run.data.params["dataset.limit"] == "6"
