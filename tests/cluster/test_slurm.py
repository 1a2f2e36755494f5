"""``hydra/launcher=slurm`` on a real (single-node) SLURM cluster, tracking on PostgreSQL.

One fixture starts, all at once: a decision-only stand-in sweep through SLURM, the same sweep
run locally (Hydra's basic launcher, a SQLite store), and one small generating P1 job through
SLURM with the embedded SmolLM2 (two programs, four summaries each), its generations and scores
kept in a shared PostgreSQL cache (``cache.url``). The SLURM jobs log to an
``mlflow server`` on a PostgreSQL store. The tests then check that every run was a SLURM
job (``sacct``: COMPLETED on the node; the job's own log names the MLflow run), that every run
reached the tracking server, and that the SLURM sweep's results equal the local sweep's.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from support.mlflow_server import mlflow_server
from support.mlflow_store import all_metrics, seed_store
from support.postgres import PostgresCluster
from support.slurm import Cluster
from support.standin_proxy import TARGET as STANDIN

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
# Sizes that fit the test node (4 CPUs, 2 GB) instead of conf/hydra/launcher/slurm.yaml's GPU jobs.
SLURM = [
    "hydra/launcher=slurm",
    "hydra.launcher.partition=debug",
    "hydra.launcher.cpus_per_task=1",
    "hydra.launcher.gpus_per_node=null",
    "hydra.launcher.mem_gb=1",
    "hydra.launcher.timeout_min=5",
]
EPSILONS = (0.05, 0.2)
SWEEP = [
    STANDIN,
    "quiet=true",
    "evaluation.bootstrap_resamples=1000",
    "evaluation.plots=false",
    "tracking.sweep_report=false",
    f"decision.epsilon={','.join(map(str, EPSILONS))}",
]
PROGRAMS, SUMMARIES = 2, 4
GENERATE = [
    "debug=quick",
    f"dataset.limit={PROGRAMS}",
    f"proxy.k={SUMMARIES}",
    "proxy.k_cal=2",
    "model.max_new_tokens=12",
    "model.num_threads=1",
    "quiet=true",
    "evaluation.plots=false",
    "tracking.sweep_report=false",
]
TIMEOUT_S = 300  # submitit cannot see a job die without a result (no slurmdbd): fail, don't hang
TIMING = "job_seconds"  # the one metric that measures the machine, not the data


@dataclass(frozen=True)
class Launched:
    """What the fixture ran: the tracking server's URL, the output folders, the processes' output."""

    url: str
    postgres: PostgresCluster
    slurm_outputs: Path
    local_outputs: Path
    generate_outputs: Path
    results: dict[str, subprocess.CompletedProcess[str]]


def start_app(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """``mcu-exp ARGS`` in the background, its stdout and stderr in ``log``.out and ``log``.err
    (files, not pipes: three processes run at once and none may block on a full pipe)."""
    with log.with_suffix(".out").open("wb") as out, log.with_suffix(".err").open("wb") as err:
        return subprocess.Popen([sys.executable, "-m", "mcu_exp", *args], cwd=REPO, env=env, stdout=out, stderr=err)


@pytest.fixture(scope="module")
def launched(
    slurm_cluster: Cluster, postgres_cluster: PostgresCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Launched]:
    """The three runs, started together (the local sweep first, while the tracking server
    starts; the three SLURM jobs run at once on the node's CPUs); returns once all have ended."""
    root = tmp_path_factory.mktemp("slurm_runs")
    base = {**os.environ, **slurm_cluster.env, "PYTHONPATH": str(REPO / "tests"), "OMP_NUM_THREADS": "1"}
    base.pop("MLFLOW_TRACKING_URI", None)
    outputs = {"local": seed_store(root / "local"), "slurm": root / "slurm", "generate": root / "generate"}
    envs = {name: {**base, "MCU_EXP_OUTPUTS": str(folder)} for name, folder in outputs.items()}
    procs = {"local": start_app(["-m", *SWEEP], envs["local"], root / "local")}
    with mlflow_server(postgres_cluster.database("slurm_tracking"), root / "server") as url:
        for name in ("slurm", "generate"):
            envs[name]["MLFLOW_TRACKING_URI"] = url
        procs["slurm"] = start_app(["-m", *SLURM, *SWEEP], envs["slurm"], root / "slurm")
        cache_url = postgres_cluster.database("slurm_cache")  # the generating job's shared cache
        procs["generate"] = start_app(
            ["-m", *SLURM, *GENERATE, f"cache.url={cache_url}"], envs["generate"], root / "generate"
        )
        results = {}
        deadline = time.monotonic() + TIMEOUT_S
        for name, proc in procs.items():
            try:
                proc.wait(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                for p in procs.values():
                    p.kill()
                pytest.fail(f"the {name} run did not end within {TIMEOUT_S} s:\n{slurm_cluster.logs()}")
            out, err = ((root / f"{name}{suffix}").read_text(errors="replace") for suffix in (".out", ".err"))
            results[name] = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
        slurm_cluster.wait_idle()
        print(f"sacct --completion (the jobs of this session):\n{slurm_cluster.sacct_text()}")
        for name, res in results.items():
            assert res.returncode == 0, f"{name}: {res.stderr[-4000:]}\n{slurm_cluster.logs()}"
        # The server stays up for the tests: they read the runs from it.
        yield Launched(url, postgres_cluster, outputs["slurm"], outputs["local"], outputs["generate"], results)


def job_runs(client: MlflowClient, experiment: str) -> tuple[object, list]:
    """The sweep's parent run and its jobs' runs in ``experiment``."""
    exp = client.get_experiment_by_name(experiment)
    assert exp is not None, f"no experiment {experiment!r} on the tracking server"
    found = client.search_runs([exp.experiment_id])
    (parent,) = [r for r in found if r.data.tags.get("mcu.kind") == "sweep"]
    children = [r for r in found if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    assert len(found) == len(children) + 1, "a run outside the sweep"
    return parent, children


def slurm_job_of(run: object, url: str, cluster: Cluster) -> dict[str, str]:
    """The SLURM job that made ``run``: its submitit folder (``<array job>_<task>``, the task
    being the Hydra job number; ``<job>`` when the sweep is one job) holds a log, written by
    SLURM, that names the run and the tracking server; returns the job's ``sacct`` record."""
    tags = run.data.tags  # type: ignore[attr-defined]
    submitit = Path(tags["mcu.output_dir"]).parent / ".submitit"
    folders = [f for f in submitit.iterdir() if f.is_dir() and "_" in f.name]
    if folders:  # a job array: one folder per task
        (folder,) = [f for f in folders if f.name.split("_")[1] == tags["mcu.job_num"]]
        array_job, task = folder.name.split("_")
        records = [r for r in cluster.completed() if (r.get("ArrayJobId"), r.get("ArrayTaskId")) == (array_job, task)]
    else:
        (folder,) = [f for f in submitit.iterdir() if f.is_dir()]
        records = [r for r in cluster.completed() if r["JobId"] == folder.name]
    (log,) = folder.glob("*_0_log.out")
    # SLURM's log holds the job's one line (a quiet sweep job); the job's own log file, in its
    # output folder, names the run and the tracking server.
    assert f"[job {tags['mcu.job_num']}] {run.info.run_name}:" in log.read_text()  # type: ignore[attr-defined]
    job_log = Path(tags["mcu.output_dir"]) / "app.log"
    assert f"MLflow run {run.info.run_id} in {url}" in job_log.read_text()  # type: ignore[attr-defined]
    assert len(records) == 1, f"SLURM recorded no (or several) jobs for submitit's job {folder.name}"
    (row,) = cluster.sacct(records[0]["JobId"])
    return {**row, "submitit": folder.name}


def comparable(metrics: dict[str, float]) -> dict[str, float | str]:
    """``metrics`` without the timing, NaN as text (NaN never equals itself)."""
    return {k: "nan" if math.isnan(v) else v for k, v in metrics.items() if k != TIMING}


def test_decision_sweep_ran_as_slurm_jobs_on_the_tracking_server(launched: Launched, slurm_cluster: Cluster) -> None:
    assert not (launched.slurm_outputs / "mlflow.db").exists()  # nothing tracked beside the server
    client = MlflowClient(tracking_uri=launched.url)
    parent, runs = job_runs(client, "mcu_exp")
    assert parent.info.status == "FINISHED" and len(runs) == len(EPSILONS)
    assert sorted(float(r.data.params["decision.epsilon"]) for r in runs) == list(EPSILONS)
    jobs = [slurm_job_of(r, launched.url, slurm_cluster) for r in runs]
    assert {r.info.status for r in runs} == {"FINISHED"}
    assert len({j["JobID"] for j in jobs}) == len(runs)
    assert len({j["submitit"].split("_")[0] for j in jobs}) == 1  # one job array
    for job in jobs:
        assert (job["State"], job["ExitCode"], job["NodeList"], job["Partition"]) == (
            "COMPLETED",
            "0:0",
            "localhost",
            "debug",
        )
    # The server keeps them in PostgreSQL: the sweep's runs are rows of MLflow's tables there.
    stored = dict(launched.postgres.query("slurm_tracking", "SELECT run_uuid, status FROM runs"))
    assert {r.info.run_id: "FINISHED" for r in (parent, *runs)}.items() <= stored.items()
    # The submitting process summed the sweep up from the server's runs.
    printed = launched.results["slurm"].stdout
    assert f"mcu-exp report --sweep {parent.data.tags['mcu.sweep']}" in printed
    assert f"sweep run {parent.info.run_id} in {launched.url}" in printed


def test_slurm_sweep_equals_the_local_sweep(launched: Launched) -> None:
    server = MlflowClient(tracking_uri=launched.url)
    local = MlflowClient(tracking_uri=f"sqlite:///{launched.local_outputs / 'mlflow.db'}")
    _, on_slurm = job_runs(server, "mcu_exp")
    _, at_home = job_runs(local, "mcu_exp")
    by_eps = {float(r.data.params["decision.epsilon"]): r for r in at_home}
    assert sorted(by_eps) == list(EPSILONS)
    for run in on_slurm:
        twin = by_eps[float(run.data.params["decision.epsilon"])]
        assert run.info.run_name == twin.info.run_name
        assert comparable(run.data.metrics) == comparable(twin.data.metrics)
        ours, theirs = all_metrics(server, run), all_metrics(local, twin)
        assert len(ours) > 100 and comparable(ours) == comparable(theirs)
        tables = [pd.read_csv(Path(r.data.tags["mcu.output_dir"]) / "results" / "per_program.csv") for r in (run, twin)]
        pd.testing.assert_frame_equal(*tables)
    # The runs differ in the metrics they should differ in: ε moves the threshold.
    taus = {float(r.data.params["decision.epsilon"]): r.data.metrics["tau"] for r in on_slurm}
    assert taus[EPSILONS[0]] > taus[EPSILONS[1]]


def test_generating_job_ran_as_a_slurm_job(launched: Launched, slurm_cluster: Cluster) -> None:
    client = MlflowClient(tracking_uri=launched.url)
    parent, runs = job_runs(client, "mcu_exp-debug")
    (run,) = runs
    assert parent.info.status == run.info.status == "FINISHED"
    stored = dict(launched.postgres.query("slurm_tracking", "SELECT run_uuid, status FROM runs"))
    assert stored.get(run.info.run_id) == stored.get(parent.info.run_id) == "FINISHED"
    job = slurm_job_of(run, launched.url, slurm_cluster)
    assert (job["State"], job["ExitCode"], job["NodeList"]) == ("COMPLETED", "0:0", "localhost")
    metrics = all_metrics(client, run)
    assert metrics["model_loaded"] == 1.0 and metrics["generation_cache_misses"] == PROGRAMS * SUMMARIES
    # Its summaries and their scores are in the shared PostgreSQL cache (no SQLite cache file
    # under its outputs folder); its run only on the server.
    assert launched.postgres.query("slurm_cache", "SELECT COUNT(*) FROM samples") == [(PROGRAMS * SUMMARIES,)]
    (pairs,) = launched.postgres.query("slurm_cache", "SELECT COUNT(*) FROM pair_scores")[0]
    assert pairs > 0
    assert not list(launched.generate_outputs.rglob("*.sqlite"))
    assert not (launched.generate_outputs / "mlflow.db").exists()
