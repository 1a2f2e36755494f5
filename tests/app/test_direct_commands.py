"""The README's direct commands outside ``make``: ``mcu-exp -m decision.epsilon=… scorer=…``
started from another folder, offline, with no ``$MCU_EXP_DATA``, reads the data from the user
cache a first run filled; it says that it starts a new, empty store and names the one it would
have reused; its MLflow jobs are found by ``tags.`mcu.kind` = 'job'`` and its ranked table by
``mcu_exp.load_sweep``. A sweep whose data cannot be had fails once, in one line, before any
MLflow run exists. Subprocesses: the working folder and the process's environment are what is
tested (the stand-in proxy keeps each job to a second; ``debug=quick``'s 6 programs)."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

import mcu_exp
from mcu_exp.names import JOBS_FILTER
from support.sweeps import REPO, STANDIN

pytestmark = pytest.mark.slow

OFFLINE = "http://127.0.0.1:9/"  # the discard port: nothing listens, a download fails at once
README_SWEEP = ("-m", "decision.epsilon=0.05,0.1", "scorer=minilm,rougel")


def command(*args: str, cwd: Path, xdg: Path, data: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``mcu-exp ARGS`` (the stand-in proxy, debug-sized) started in ``cwd`` with the user
    cache under ``xdg``, the default outputs folder, and ``$MCU_EXP_DATA`` only when ``data``."""
    env = {k: v for k, v in os.environ.items() if k not in ("MCU_EXP_DATA", "MCU_EXP_OUTPUTS", "MLFLOW_TRACKING_URI")}
    env.pop("MCU_EXP_CACHE", None)
    env.update(XDG_CACHE_HOME=str(xdg), PYTHONPATH=str(REPO / "tests"), MCU_EXP_SCALABRINO_URL=OFFLINE)
    if data is not None:
        env["MCU_EXP_DATA"] = str(data)
    line = [sys.executable, "-m", "mcu_exp", *args, STANDIN, "debug=quick"]
    return subprocess.run(line, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


@dataclass(frozen=True)
class Direct:
    """A first run in ``first`` with ``$MCU_EXP_DATA``, then the README's sweep in ``other``."""

    xdg: Path
    first: Path
    other: Path
    run: subprocess.CompletedProcess[str]
    sweep: subprocess.CompletedProcess[str]


@pytest.fixture(scope="module")
def direct(tmp_path_factory: pytest.TempPathFactory, data_root: Path) -> Direct:
    root = tmp_path_factory.mktemp("direct")
    xdg, first, other = root / "xdg", root / "first", root / "other"
    first.mkdir()
    other.mkdir()
    run = command("tracking=none", cwd=first, xdg=xdg, data=data_root)
    assert run.returncode == 0, run.stderr[-3000:]
    sweep = command(*README_SWEEP, "tracking.sweep_report=false", cwd=other, xdg=xdg)
    assert sweep.returncode == 0, sweep.stderr[-3000:]
    return Direct(xdg, first, other, run, sweep)


def test_the_sweep_reads_the_data_the_first_run_kept_in_the_user_cache(direct: Direct) -> None:
    cache = direct.xdg / "mcu_exp" / "data" / "scalabrino"
    assert f"kept in the user cache {cache}" in direct.run.stdout
    logs = sorted((direct.other / "outputs" / "multirun").glob("*/*/*/app.log"))
    assert len(logs) == 4
    for log in logs:
        data_lines = [line.strip() for line in log.read_text(encoding="utf-8").splitlines() if "data: " in line]
        assert data_lines == [f"data: {cache} (user cache, sha256 verified)"], log
    assert not (direct.first / "outputs" / "multirun").exists()  # the sweep wrote where it started


def test_a_new_empty_store_says_which_store_it_would_have_reused(direct: Direct) -> None:
    notes = [line for line in direct.sweep.stderr.splitlines() if line.startswith("mcu-exp: note:")]
    assert notes == [
        f"mcu-exp: note: starting a new, empty store {direct.other / 'outputs'} (MLflow runs and generation cache); "
        f"the last run used {direct.first / 'outputs'}: start from {direct.first} or pass "
        f"paths.outputs={direct.first / 'outputs'} to reuse its cache and runs"
    ]


def test_the_jobs_filter_finds_the_jobs_and_not_the_parent(direct: Direct) -> None:
    import mlflow

    uri = f"sqlite:///{direct.other / 'outputs' / 'mlflow.db'}"
    mlflow.set_tracking_uri(uri)
    try:
        jobs = mlflow.search_runs(search_all_experiments=True, filter_string=JOBS_FILTER)
        everything = mlflow.search_runs(search_all_experiments=True)
    finally:
        mlflow.set_tracking_uri(None)
    assert JOBS_FILTER == "tags.`mcu.kind` = 'job'"
    assert len(jobs) == 4 and set(jobs["tags.mcu.kind"]) == {"job"}
    assert len(everything) == 5
    parent = everything[everything["tags.mcu.kind"] == "sweep"]
    assert len(parent) == 1
    assert set(jobs["tags.mlflow.parentRunId"]) == {parent["run_id"].iloc[0]}


def test_load_sweep_returns_one_row_per_job_ranked(direct: Direct) -> None:
    uri = f"sqlite:///{direct.other / 'outputs' / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    parent = client.search_runs(
        [e.experiment_id for e in client.search_experiments()], filter_string="tags.`mcu.kind` = 'sweep'"
    )[0]
    jobs = client.search_runs([parent.info.experiment_id], filter_string=JOBS_FILTER)
    table = mcu_exp.load_sweep(parent.info.run_id, tracking_uri=uri)
    assert sorted(table["run_id"]) == sorted(r.info.run_id for r in jobs)
    assert sorted(table["job"].astype(str)) == ["0", "1", "2", "3"]
    assert table["best"].tolist() == [True, False, False, False]
    low = table["f1_minus_always_ci_low"].tolist()
    assert low == sorted(low, reverse=True)
    by_id = {r.info.run_id: r.data.metrics["f1"] for r in jobs}
    assert [by_id[i] for i in table["run_id"]] == pytest.approx(table["f1"].tolist())
    with pytest.raises(mcu_exp.RunNotFound, match="is no sweep's parent run"):
        mcu_exp.load_sweep(jobs[0].info.run_id, tracking_uri=uri)


def test_a_sweep_whose_data_cannot_be_had_fails_once_before_any_run(tmp_path: Path) -> None:
    res = command(*README_SWEEP, cwd=tmp_path, xdg=tmp_path / "xdg")
    assert res.returncode == 1
    errors = [line for line in res.stderr.splitlines() if "error" in line.lower()]
    assert len(errors) == 1, res.stderr
    assert errors[0].startswith(f"mcu-exp: error: downloading {OFFLINE}")
    assert errors[0].endswith("dataset.root at a local copy of the data) (no job was started)")
    assert "[job " not in res.stdout
    assert not (tmp_path / "outputs").exists()  # no MLflow store, so no parent run, and no job folder
