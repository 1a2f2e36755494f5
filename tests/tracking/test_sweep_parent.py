"""A 2×2 sweep as a user reads it in MLflow: one parent run with four children, names that
tell the jobs apart, a headline metric set, the dataset input, the run description, charts
against the threshold, and a store that still opens after ``outputs/`` is copied elsewhere."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from mcu_exp import names
from mcu_exp.tracking.artifacts import RunArtifacts
from mcu_exp.tracking.headline import MAX_HEADLINE
from mcu_exp.tracking.sweep import KIND_SWEEP, PARENT_TAG, TAG_KIND
from support.sweeps import multirun_in_process

pytestmark = pytest.mark.slow  # sweeps: one in this process, one in a subprocess

REPO = Path(__file__).resolve().parents[2]
STANDIN = "proxy._target_=support.standin_proxy.StandInProxy"


SWEEP = (STANDIN, "quiet=true", "evaluation.bootstrap_resamples=1000", "evaluation.permutations=200")


def sweep(outputs: Path, *overrides: str, **extra_env: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "tests"), "MCU_EXP_OUTPUTS": str(outputs), **extra_env}
    return subprocess.run(
        [sys.executable, "-m", "mcu_exp", "-m", *SWEEP, *overrides],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    from support.mlflow_store import seed_store

    outputs = seed_store(tmp_path_factory.mktemp("sweep") / "outputs")
    # In this process: these tests read the sweep's runs, parent and summary (the command's exit
    # status on a failed job is the last test's, in a subprocess).
    res = multirun_in_process(outputs, *SWEEP, "decision.epsilon=0.05,0.2", "labels.group=all,professional")
    return outputs, res


def runs(outputs: Path) -> tuple[MlflowClient, list]:
    client = MlflowClient(tracking_uri=f"sqlite:///{outputs / 'mlflow.db'}")
    exp = client.get_experiment_by_name("mcu_exp")
    return client, client.search_runs([exp.experiment_id])


def test_the_sweep_is_one_parent_run_with_a_child_per_job(swept: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    outputs, res = swept
    client, found = runs(outputs)
    (parent,) = [r for r in found if r.data.tags.get(TAG_KIND) == KIND_SWEEP]
    children = [r for r in found if r.data.tags.get(PARENT_TAG) == parent.info.run_id]
    assert len(found) == 5 and len(children) == 4
    assert parent.info.run_name == "sweep · decision.epsilon=0.05,0.2 · labels.group=all,professional"
    assert parent.info.status == "FINISHED"
    assert sorted(r.info.run_name for r in children) == [
        f"ε={eps} · group={group} · StandInProxy · boot1000 · perm200 · smollm2-135m · p1"
        for eps in ("0.05", "0.2")
        for group in ("all", "professional")
    ]  # what varies first, then the other overrides that change results

    # The parent holds the sweep's table, one row per job, as an MLflow table and a CSV, and the report.
    art = RunArtifacts(client, parent.info.run_id, parent.info.artifact_uri)
    table = json.loads(art.get(f"{names.TABLES_DIR}/sweep_summary.json", outputs).read_text())
    assert len(table["data"]) == 4 and "f1" in table["columns"]
    assert {"path": f"{names.TABLES_DIR}/sweep_summary.json", "type": "table"} in json.loads(
        parent.data.tags["mlflow.loggedArtifacts"]
    )
    summary = pd.read_csv(art.get("sweep_summary.csv", outputs))
    assert sorted(summary["run"]) == sorted(r.info.run_name for r in children)
    assert (summary["status"] == "FINISHED").all()
    assert art.get("report/report.html", outputs) is not None
    # The terminal shows the same table, where the report was written and how to make it again.
    assert "4 jobs" in res.stdout and "mcu-exp report --sweep " in res.stdout
    (written,) = [line for line in res.stdout.splitlines() if line.startswith("Report written: ")]
    assert Path(written.removeprefix("Report written: ").split(" (")[0]).is_file()
    # And the link to the sweep's own view of the runs table, which the parent carries too: its
    # filter, as MLflow reads it, keeps this sweep's four jobs.
    exp_id = parent.info.experiment_id
    view = f"http://127.0.0.1:5000/#/experiments/{exp_id}/runs?viewStateShareKey=sweep-{parent.info.run_id[:8]}"
    assert f"  this sweep's jobs by their headline: {view}\n" in res.stdout
    assert client.get_run(parent.info.run_id).data.tags["mcu.view_url"] == view
    state = json.loads(client.get_experiment(exp_id).tags[f"mlflow.sharedViewState.sweep-{parent.info.run_id[:8]}"])
    jobs = client.search_runs([exp_id], filter_string=state["searchFilter"])
    assert sorted(r.info.run_id for r in jobs) == sorted(r.info.run_id for r in children)
    # Each job's rounded headline, the parent's its best job's.
    assert {r.data.tags["mcu.headline"] for r in children} >= {parent.data.tags["mcu.headline"]}
    assert all(r.data.tags["mcu.headline"].startswith("MCC ") for r in children)


def test_every_job_is_a_finished_run_with_its_own_folder_and_metrics(
    swept: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    outputs, _ = swept
    _, found = runs(outputs)
    jobs = [r for r in found if PARENT_TAG in r.data.tags]
    assert len(jobs) == 4 and {r.info.status for r in jobs} == {"FINISHED"}
    assert len({r.data.tags["mcu.sweep"] for r in jobs}) == 1
    assert sorted(float(r.data.params["decision.epsilon"]) for r in jobs) == [0.05, 0.05, 0.2, 0.2]
    for r in jobs:
        assert {"f1", "f1_ci_low", "f1_ci_high", "auc_binary", "tau", "coverage"} <= set(r.data.metrics)
        assert r.data.metrics["f1_ci_low"] <= r.data.metrics["f1"] <= r.data.metrics["f1_ci_high"]
    # Coverage of the calibrated threshold falls as ε grows, in each reader group.
    for group in ("all", "professional"):
        by_eps = sorted(
            (r for r in jobs if r.data.tags["mcu.labels.group"] == group),
            key=lambda r: float(r.data.params["decision.epsilon"]),
        )
        taus = [r.data.metrics["tau"] for r in by_eps]
        assert len(taus) == 2 and taus == sorted(taus, reverse=True)
    # Job folders never collide, and each holds its per-program table.
    dirs = {r.data.tags["mcu.output_dir"] for r in jobs}
    assert len(dirs) == 4
    for d in dirs:
        table = pd.read_csv(Path(d) / "results" / "per_program.csv")
        assert {"program_id", "human_label", "score", "label"} <= set(table.columns)
        assert len(table) == 50


def test_a_job_run_logs_a_headline_set_and_the_rest_as_tables(
    swept: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    outputs, _ = swept
    client, found = runs(outputs)
    child = next(r for r in found if PARENT_TAG in r.data.tags)
    keys = set(child.data.metrics)
    assert len(keys) <= MAX_HEADLINE, sorted(keys)
    assert {
        "f1",
        "f1_ci_low",
        "f1_ci_high",
        "auc_score",
        "auc_binary",
        "tau",
        "coverage",
        "verdict.f1_vs_always",
        "group.professional.f1",
        "group.phd.auc_score",
    } <= keys
    assert "baseline_random_recall" not in keys and "group.phd.precision_ci_low" not in keys
    art = RunArtifacts(client, child.info.run_id, child.info.artifact_uri)
    full = json.loads(art.get(names.METRICS_FILE, outputs).read_text())
    assert "group.phd.precision_ci_low" in full and full["f1"] == child.data.metrics["f1"]
    table = json.loads(art.get(f"{names.TABLES_DIR}/metrics.json", outputs).read_text())
    rows = {(g, m): v for g, m, v in table["data"]}
    assert rows[("phd", "precision_ci_low")] == full["group.phd.precision_ci_low"]
    assert art.get(f"{names.TABLES_DIR}/per_program.json", outputs) is not None

    # Sensitivity charts: the step is the threshold in thousandths, not the grid index.
    grid = pd.read_csv(art.get(names.sensitivity_file(names.THRESHOLD_GRID), outputs))
    grid = grid[grid["group"] == names.ALL_READERS]
    history = client.get_metric_history(child.info.run_id, "sensitivity/f1_vs_threshold_milli.minilm")
    by_step = {m.step: m.value for m in history}
    first = grid.iloc[len(grid) // 2]
    assert by_step[round(first["threshold"] * 1000)] == pytest.approx(first["f1"])
    assert max(by_step) <= 1000 and len(by_step) >= len(grid) - 2


def test_a_job_run_has_its_dataset_description_version_and_lean_params(
    swept: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    outputs, _ = swept
    client, found = runs(outputs)
    child = next(r for r in found if PARENT_TAG in r.data.tags)
    (dataset,) = child.inputs.dataset_inputs
    assert dataset.dataset.name == "scalabrino" and len(dataset.dataset.digest) == 16
    assert json.loads(dataset.dataset.profile)["programs"] == 50
    note = child.data.tags["mlflow.note.content"]
    assert child.data.tags[names.TAG_VERDICT] in note and "ε=" in note
    assert child.data.tags["mcu.version"] and len(child.data.tags.get("mlflow.source.git.commit", "x" * 40)) == 40
    params = child.data.params
    assert "null" not in params.values()  # unset values are left out
    assert params["evaluation.epsilon_grid"].startswith("0.02, 0.05")
    assert "model.temperature" in params and not any(k.startswith("model.batch") for k in params)  # no batch API


def test_batch_settings_are_logged_only_for_a_model_that_uses_a_batch_api() -> None:
    from mcu_exp.tracking import flatten_config

    model = {"name": "gpt-4o", "batch": False, "batch_discount": 0.5, "batch_poll_s": 30.0, "max_batch_size": 64}
    assert set(flatten_config({"model": model})) == {"model.name", "model.max_batch_size"}
    batched = flatten_config({"model": {**model, "batch": True}})
    assert batched["model.batch"] == "True" and batched["model.batch_poll_s"] == "30.0"


def test_a_copied_store_still_opens_its_artifacts(
    swept: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    outputs, _ = swept
    copy = tmp_path / "elsewhere" / "outputs"
    shutil.copytree(outputs, copy)
    shutil.rmtree(outputs / "mlartifacts")  # nothing may still point at the old folder
    try:
        client, found = runs(copy)
        child = next(r for r in found if PARENT_TAG in r.data.tags)
        assert not child.info.artifact_uri.startswith("file:")
        art = RunArtifacts(client, child.info.run_id, child.info.artifact_uri)
        path = art.get(names.PER_PROGRAM_FILE, tmp_path)
        assert path is not None and str(path).startswith(str(copy)) and len(pd.read_csv(path)) == 50
    finally:
        shutil.copytree(copy / "mlartifacts", outputs / "mlartifacts")


def test_p3_and_p0_names_leave_out_epsilon() -> None:
    from omegaconf import OmegaConf

    from mcu_exp.tracking import run_name

    cfg = OmegaConf.create(
        {
            "tracking": {"run_name": None},
            "dataset": {"limit": None},
            "model": {"name": "gpt-4o"},
            "proxy": {"name": "p3"},
            "decision": {"epsilon": 0.2, "rule": "conformal", "theta": 0.5, "quantile": "empirical"},
        }
    )
    assert run_name(cfg, calibrated=False) == "gpt-4o · p3"  # type: ignore[arg-type]
    assert run_name(cfg, calibrated=True) == "gpt-4o · p3 · ε=0.2"  # type: ignore[arg-type]


def test_a_job_stopped_by_bad_input_fails_the_sweep_in_one_line(tmp_path: Path, data_root: Path) -> None:
    """Bad input that only the job can see (its own data folder, empty; a value out of range is
    refused before the sweep starts) fails that job in one line; the others still run."""
    from support.mlflow_store import seed_store

    outputs = seed_store(tmp_path / "outputs")
    empty = tmp_path / "empty"
    empty.mkdir()
    # The finished job also samples system metrics (tracking.system_metrics, every 0.2 s here):
    # MLflow logs a sample only once an interval has passed inside the run, and the stand-in stays
    # in its run for 1 s (its shared result cache would otherwise end the run sooner than that).
    res = sweep(
        outputs,
        f"dataset.root={data_root / 'scalabrino'},{empty}",
        "tracking.system_metrics=true",
        MLFLOW_SYSTEM_METRICS_SAMPLING_INTERVAL="0.2",
        MCU_STANDIN_SLEEP_S="1",
    )
    assert res.returncode == 1
    assert "Traceback" not in res.stdout + res.stderr
    missing = f"{empty / 'evaluations.csv'}: missing (expected the Scalabrino data in {empty})"
    assert f"mcu-exp: error: 1 job of the sweep failed (job 1: {missing})" in res.stderr
    client, found = runs(outputs)
    (parent,) = [r for r in found if r.data.tags.get(TAG_KIND) == KIND_SWEEP]
    assert parent.info.status == "FAILED" and parent.data.tags["mcu.error"] == "1 of 2 jobs did not finish"
    summary = pd.read_csv(
        RunArtifacts(client, parent.info.run_id, parent.info.artifact_uri).get("sweep_summary.csv", tmp_path)
    )
    failed = summary[summary["status"] == "FAILED"]
    assert failed["run"].tolist() == [f"dataset.root={empty}"]
    assert missing in failed["verdict"].item()
    assert (summary["status"] == "FINISHED").sum() == 1
    (finished,) = [r for r in found if r.info.status == "FINISHED" and PARENT_TAG in r.data.tags]
    assert any(k.startswith("system/cpu_utilization") for k in finished.data.metrics)


def test_system_metrics_are_off_by_default(swept: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    _, found = runs(swept[0])
    child = next(r for r in found if PARENT_TAG in r.data.tags)
    assert not any(k.startswith("system/") for k in child.data.metrics)
