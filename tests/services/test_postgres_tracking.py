"""One MLflow tracking server on PostgreSQL for a whole sweep, as docs/scaling.md sets it up.

A throwaway PostgreSQL cluster (:mod:`support.postgres`) backs a real ``mlflow server`` on
127.0.0.1 with a local artifact root. A 4-job ``hydra/launcher=joblib`` sweep of the stand-in
proxy logs to it through HTTP, after a job killed with SIGKILL mid-run left its run RUNNING
(the sweep's jobs mark it KILLED); ``mcu-exp report`` and ``mcu-exp tune`` (their entry
points, in this process) read the store back. Needs Debian's ``postgresql`` package and
``psycopg`` (the test extra). Run by ``make test-services``, not by ``make test``.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest
from mlflow.entities import Run
from mlflow.tracking import MlflowClient

from mcu_exp import names
from mcu_exp.tracking.artifacts import RunArtifacts
from mcu_exp.tracking.mlflow_run import TAG_KILLED_REASON, TAG_PID
from mcu_exp.tracking.sweep import KIND_SWEEP, PARENT_TAG, TAG_KIND
from support.mlflow_server import mlflow_server
from support.postgres import PostgresCluster
from support.standin_proxy import TARGET

pytestmark = pytest.mark.slow  # a server and sweeps in subprocesses

REPO = Path(__file__).resolve().parents[2]
DATABASE = "mlflow_tracking"
# The cheapest stand-in jobs: the fewest resamples allowed, no per-job PNGs, no report in the
# sweep's parent run (the report test makes one from the server).
FAST = (
    "quiet=true",
    "evaluation.bootstrap_resamples=1000",
    "evaluation.permutations=200",
    "evaluation.plots=false",
    "tracking.sweep_report=false",
)


@dataclass(frozen=True)
class Server:
    """The tracking server and the PostgreSQL database behind it."""

    url: str
    cluster: PostgresCluster

    def client(self) -> MlflowClient:
        return MlflowClient(tracking_uri=self.url)

    def sql(self, query: str, *args: object) -> list[tuple[object, ...]]:
        """Rows read straight from the backend store."""
        return self.cluster.query(DATABASE, query, *args)


@pytest.fixture(scope="module")
def server(postgres_cluster: PostgresCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """``mlflow server`` on a new PostgreSQL database, artifacts in a temp folder (a server
    that does not start fails with the end of its log)."""
    with mlflow_server(postgres_cluster.database(DATABASE), tmp_path_factory.mktemp("mlflow_postgres")) as url:
        yield Server(url, postgres_cluster)


def job_env(server: Server, outputs: Path, **extra: str) -> dict[str, str]:
    """A job's environment: the stand-in proxy importable, outputs in ``outputs``, the server as store."""
    return {
        **os.environ,
        "PYTHONPATH": str(REPO / "tests"),
        "MCU_EXP_OUTPUTS": str(outputs),
        "MLFLOW_TRACKING_URI": server.url,
        **extra,
    }


def mcu_exp(*args: str) -> list[str]:
    return [sys.executable, "-m", "mcu_exp", *args]


@dataclass(frozen=True)
class Sweep:
    """The 4-job sweep as the server holds it."""

    name: str  # its mcu.sweep tag
    parent: Run
    children: list[Run]


@pytest.fixture(scope="module")
def killed(server: Server, tmp_path_factory: pytest.TempPathFactory) -> Run:
    """A job killed with SIGKILL (its process group, as the kernel's OOM killer would) while
    it sleeps inside its run; the run as the job left it."""
    outputs = tmp_path_factory.mktemp("pg_killed") / "outputs"
    proc = subprocess.Popen(
        mcu_exp(TARGET, "decision.epsilon=0.1", *FAST),
        cwd=REPO,
        env=job_env(server, outputs, MCU_STANDIN_SLEEP_S="600"),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 300
        while True:  # read from PostgreSQL: the job's run is open
            running = server.sql("SELECT run_uuid FROM runs WHERE status = 'RUNNING'")
            if running:
                break
            assert proc.poll() is None, proc.communicate()[0][-3000:]
            assert time.monotonic() < deadline, "the job to kill never opened its run"
            time.sleep(0.25)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=60)
    (run_id,) = running
    return server.client().get_run(str(run_id[0]))


@pytest.fixture(scope="module")
def sweep(server: Server, killed: Run, tmp_path_factory: pytest.TempPathFactory) -> Sweep:
    """The next jobs after the kill: ε × reader group, 2 × 2 jobs on two joblib workers,
    logged to the server."""
    outputs = tmp_path_factory.mktemp("pg_sweep") / "outputs"
    res = subprocess.run(
        mcu_exp(
            "-m",
            TARGET,
            "hydra/launcher=joblib",
            "hydra.launcher.n_jobs=2",
            "decision.epsilon=0.05,0.2",
            "labels.group=all,professional",
            *FAST,
        ),
        cwd=REPO,
        env=job_env(server, outputs),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert re.search(rf"MLflow experiment 'mcu_exp', sweep run [0-9a-f]{{32}} in {re.escape(server.url)}", res.stdout)
    assert not (outputs / "mlflow.db").exists()
    name = next(p.name for p in (outputs / "multirun").glob("*/*") if p.is_dir())
    exp = server.client().get_experiment_by_name("mcu_exp")
    found = server.client().search_runs([exp.experiment_id], filter_string=f"tags.`mcu.sweep` = '{name}'")
    (parent,) = [r for r in found if r.data.tags.get(TAG_KIND) == KIND_SWEEP]
    children = [r for r in found if r.data.tags.get(PARENT_TAG) == parent.info.run_id]
    return Sweep(name, parent, children)


def test_a_joblib_sweep_logs_a_parent_and_four_finished_jobs_to_postgres(server: Server, sweep: Sweep) -> None:
    parent = sweep.parent
    assert parent.info.status == "FINISHED"
    assert len(sweep.children) == 4 and {r.info.status for r in sweep.children} == {"FINISHED"}
    # The jobs ran in joblib's worker processes, not in the process that opened the parent.
    job_pids = {r.data.tags[TAG_PID] for r in sweep.children}
    assert parent.data.tags[TAG_PID] not in job_pids and 1 <= len(job_pids) <= 2
    assert sorted((r.data.params["decision.epsilon"], r.data.params["labels.group"]) for r in sweep.children) == [
        ("0.05", "all"),
        ("0.05", "professional"),
        ("0.2", "all"),
        ("0.2", "professional"),
    ]

    # PostgreSQL itself holds the five runs and each job's headline metrics.
    ids = [parent.info.run_id, *(r.info.run_id for r in sweep.children)]
    rows = server.sql("SELECT run_uuid, status FROM runs WHERE run_uuid = ANY(%s)", ids)
    assert sorted(rows) == sorted((i, "FINISHED") for i in ids)
    for child in sweep.children:
        (stored,) = server.sql("SELECT value FROM latest_metrics WHERE run_uuid = %s AND key = 'f1'", child.info.run_id)
        assert stored[0] == pytest.approx(child.data.metrics["f1"])
        # The artifacts went through the server to its artifact root.
        assert child.info.artifact_uri.startswith("mlflow-artifacts:")
    child = sweep.children[0]
    with tempfile.TemporaryDirectory() as tmp:
        art = RunArtifacts(server.client(), child.info.run_id, child.info.artifact_uri)
        assert len(pd.read_csv(art.get(names.PER_PROGRAM_FILE, Path(tmp)))) == 50


def test_a_killed_job_is_marked_killed_by_the_next_job(server: Server, killed: Run, sweep: Sweep) -> None:
    assert killed.info.status == "RUNNING"  # as SIGKILL left it
    now = server.client().get_run(killed.info.run_id)
    assert now.info.status == "KILLED" and now.info.end_time is not None
    reason = now.data.tags[TAG_KILLED_REASON]
    assert reason.startswith(f"process {killed.data.tags[TAG_PID]} on ")
    finder = reason.rsplit("found by process ", 1)[1].rstrip(")")
    assert finder in {r.data.tags[TAG_PID] for r in sweep.children}  # one of the sweep's jobs
    assert server.sql("SELECT count(*) FROM runs WHERE status = 'RUNNING'") == [(0,)]


def test_report_reads_the_sweep_from_the_server(
    server: Server, sweep: Sweep, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mcu_exp.cli.report import main

    out = tmp_path / "report"
    main(["--sweep", sweep.name, "--tracking-uri", server.url, "--out", str(out)])  # `mcu-exp report`
    assert f"Report: {out / 'report.html'}" in capsys.readouterr().out
    summary = pd.read_csv(out / "summary.csv")
    assert len(summary) == 4
    f1 = {r.info.run_name: r.data.metrics["f1"] for r in sweep.children}
    assert sorted(summary["f1"]) == pytest.approx(sorted(f1.values()))
    runs = pd.read_csv(out / "runs.csv", index_col=0)
    assert sorted(runs.index) == sorted(r.info.run_id for r in sweep.children)
    # The report logged itself as a run on the same server, its page among the artifacts.
    client = server.client()
    exp = client.get_experiment_by_name("mcu_exp")
    (logged,) = client.search_runs([exp.experiment_id], filter_string="tags.`mcu.kind` = 'report'")
    assert logged.info.status == "FINISHED"
    assert RunArtifacts(client, logged.info.run_id, logged.info.artifact_uri).get("report.html", tmp_path)


def test_tune_reads_a_job_from_the_server(
    server: Server, sweep: Sweep, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mcu_exp.cli.tune import main
    from mcu_exp.tune.nested_cv import nested_cv, read_per_program

    job = next(
        r
        for r in sweep.children
        if r.data.params["decision.epsilon"] == "0.2" and r.data.params["labels.group"] == "all"
    )
    out = tmp_path / "tune.csv"
    main(
        [
            "--run-id",
            job.info.run_id,
            "--tracking-uri",
            server.url,
            "--trials",
            "8",
            "--folds",
            "3",  # `mcu-exp tune`
            "--seed",
            "1",
            "--out",
            str(out),
        ]
    )
    assert f"({job.info.run_id[:8]};" in capsys.readouterr().out  # the title names the run and its short id
    rows = pd.read_csv(out).set_index("search")
    # The run's own ε scores the run's own F1 on the scores tune fetched from the server.
    assert rows.loc["epsilon", "reference_epsilon"] == 0.2
    assert rows.loc["epsilon", "reference_f1"] == pytest.approx(job.data.metrics["f1"])
    scores = RunArtifacts(server.client(), job.info.run_id, job.info.artifact_uri).get(names.SCORES_FILE, tmp_path)
    expected = nested_cv(
        read_per_program(scores),
        "threshold",
        folds=3,
        trials=8,
        seed=1,
        quantile=job.data.params["decision.quantile"],
        reference_epsilon=0.2,
    )
    assert rows.loc["threshold", "held_out_f1"] == pytest.approx(expected.held_out_f1)
    assert rows.loc["threshold", "in_sample_f1"] == pytest.approx(expected.in_sample.f1)


def test_jobs_started_together_all_finish_with_one_dataset_row(
    server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Five jobs open their runs in a new experiment and log the same dataset at one instant,
    four rounds: the server's insert of the shared dataset row raced (``UniqueViolation …
    "dataset_pk"``) and failed all jobs but one of a round; every job now finishes. The same
    on a SQLite store: ``tests/app/test_concurrent_jobs.py``."""
    from support.concurrent_jobs import expected_input, start_together

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    jobs = 5

    def dataset_rows(experiment_id: str) -> int:
        (row,) = server.sql("SELECT count(*) FROM datasets WHERE experiment_id = %s", int(experiment_id))
        return int(str(row[0]))

    for number in range(4):  # without the fix 6 rounds in 10 failed (4 jobs, load 5 on 2 cores)
        result = start_together(server.url, tmp_path, f"together-{number}", jobs, dataset_rows)
        assert result.errors == [], f"round {number}: " + "\n".join(result.errors)
        assert result.statuses == ["FINISHED"] * jobs, f"round {number}"
        assert result.inputs == [expected_input()] * jobs, f"round {number}"
        assert result.dataset_rows == 1, f"round {number}"
