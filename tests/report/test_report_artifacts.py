"""`mcu-exp report` reads each run's full metrics from its ``metrics.json`` artifact and its
curves from its ``sensitivity_*.csv`` artifacts, in a local store whose artifacts are recorded
relative to it (``mlflow-artifacts:/…``), from the store and from a copy of it; older runs
with an absolute ``file:`` location still work. Runs are logged with MlflowClient directly,
as a job of the new logging contract would leave them."""

from __future__ import annotations

import csv
import json
import math
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from mlflow.entities import Metric, Param
from mlflow.tracking import MlflowClient

from mcu_exp.names import METRICS_FILE, UNDEFINED, sensitivity_file
from mcu_exp.report import figures
from mcu_exp.report.build import make_report
from mcu_exp.report.sources import RunFiles, merged_metrics
from mcu_exp.tracking.artifacts import RunArtifacts, artifact_root, experiment_location
from support.md_tables import section, table_rows
from support.mlflow_store import seed_store

EXPERIMENT = "artifacts"
HEADLINE = {
    "f1": 0.7,
    "f1_ci_low": 0.6,
    "f1_ci_high": 0.8,
    "auc_binary": 0.55,
    "auc_binary_ci_low": 0.45,
    "auc_binary_ci_high": 0.65,
    "baseline_always_f1": 0.684,
    "baseline_random_f1": 0.518,
    "tau": 0.3,
    "coverage": 0.9,
    "n": 50.0,
    "prevalence": 0.52,
}
EXTRA = {
    "recall": 0.81,
    "recall_ci_low": 0.7,
    "recall_ci_high": 0.9,
    "precision": None,
    "group.professional.f1": 0.66,
    "group.professional.f1_ci_low": 0.5,
    "group.professional.f1_ci_high": 0.8,
    "group.professional.auc_binary": 0.58,
    "group.professional.n": 30.0,
}
GRID = np.linspace(0.1, 0.5, 5)


def grid_files(folder: Path, f1: float, theta: bool) -> Path:
    """The CSVs a job writes (all readers and one subgroup, whose rows the report must skip)."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = [
        {"group": g, "n": n, "threshold": t, "f1": f1 + (0.3 if g != "all" else 0.0) * t, "auc_binary": 0.5}
        for g, n in (("all", 50), ("professional", 30))
        for t in GRID
    ]
    pd.DataFrame(rows).to_csv(folder / sensitivity_file("threshold"), index=False)
    eps = [{"group": "all", "n": 50, "epsilon": e, "nominal": 1 - e, "tau": e, "coverage": 1 - e / 2} for e in GRID]
    pd.DataFrame(eps).to_csv(folder / sensitivity_file("epsilon"), index=False)
    if theta:
        thetas = [{"group": "all", "n": 50, "theta": t, "f1": 1 - t, "auc_binary": 0.6} for t in GRID]
        pd.DataFrame(thetas).to_csv(folder / sensitivity_file("theta"), index=False)
    return folder


def new_run(
    client: MlflowClient, experiment_id: str, model: str, proxy: str, eps: float, metrics: dict[str, float]
) -> Any:
    tags = {"mcu.model": model, "mcu.proxy": proxy, "mcu.dataset": "scalabrino", "mcu.sweep": "s1"}
    run = client.create_run(experiment_id, run_name=f"{model} · {proxy} · ε={eps}", tags=tags)
    params = {
        "decision.rule": "conformal",
        "decision.epsilon": str(eps),
        "decision.quantile": "empirical",
        "labels.group": "all",
        "model.name": model,
        "proxy.name": proxy,
    }
    client.log_batch(
        run.info.run_id,
        params=[Param(k, v) for k, v in params.items()],
        metrics=[Metric(k, v, 0, 0) for k, v in metrics.items()],
    )
    return run


def new_contract_store(outputs: Path) -> tuple[str, dict[str, str]]:
    """A local store holding two runs of the new contract (headline metrics in MLflow,
    everything in ``metrics.json``, relative artifact location; the P2 run has θ curves)
    and one older run (every metric in MLflow, absolute ``file:`` artifacts); and the parent
    run of the sweep."""
    seed_store(outputs)
    uri = f"sqlite:///{outputs / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    exp = client.create_experiment(EXPERIMENT, artifact_location=experiment_location(EXPERIMENT))
    ids = {}
    for model, proxy, eps, theta in (("qwen3-14b", "p1", 0.1, False), ("gpt-4o", "p2", 0.2, True)):
        run = new_run(client, exp, model, proxy, eps, HEADLINE)
        folder = grid_files(outputs.parent / f"files-{model}", 0.6 if theta else 0.5, theta)
        saved = {**HEADLINE, **EXTRA, "f1": HEADLINE["f1"] + 0.01}  # the file's value wins
        (folder / METRICS_FILE).write_text(json.dumps(saved))
        RunArtifacts(client, run.info.run_id, run.info.artifact_uri).put_folder(folder)
        client.set_terminated(run.info.run_id, "FINISHED")
        ids[model] = run.info.run_id
    parent = client.create_run(exp, run_name="sweep · model=…", tags={"mcu.kind": "sweep", "mcu.sweep": "s1"})
    client.set_terminated(parent.info.run_id, "FINISHED")  # a multirun's parent run: never a row
    old_exp = client.create_experiment("old", artifact_location=(outputs.parent / "old-artifacts").as_uri())
    old = new_run(client, old_exp, "smollm2-135m", "p1", 0.1, {**HEADLINE, "recall": 0.4})
    client.log_artifacts(old.info.run_id, str(grid_files(outputs.parent / "files-old", 0.4, False)))
    client.set_terminated(old.info.run_id, "FINISHED")
    ids["old"] = old.info.run_id
    return uri, ids


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch) -> dict[str, pd.DataFrame]:
    """The curve frames make_report hands to the figures."""
    seen: dict[str, pd.DataFrame] = {}
    real = figures.report_figures

    def spy(
        rows: Any, keys: Any, thr: pd.DataFrame, eps: pd.DataFrame, sub: Any, theta: pd.DataFrame | None = None
    ) -> dict[str, bytes]:
        seen.update(threshold=thr, epsilon=eps, theta=theta)
        return real(rows, keys, thr, eps, sub, theta)

    monkeypatch.setattr(figures, "report_figures", spy)
    return seen


def check_report(out: Path, ids: dict[str, str], seen: dict[str, pd.DataFrame]) -> None:
    with (out / "summary.csv").open(newline="") as handle:
        summary = {row["run_id"]: row for row in csv.DictReader(handle)}
    assert set(summary) == set(ids.values())
    new = summary[ids["qwen3-14b"]]
    assert float(new["recall"]) == 0.81 and float(new["recall_ci_high"]) == 0.9  # only in metrics.json
    assert float(new["f1"]) == pytest.approx(0.71)  # metrics.json over the MLflow value
    assert new["precision"] == "NaN" and "precision" in new["undefined"].split("; ")
    assert float(summary[ids["old"]]["recall"]) == 0.4 and summary[ids["old"]]["precision"] == ""

    markdown = (out / "report.md").read_text()
    rows = {row["model"]: row for row in table_rows(section(markdown, "Alignment with human labels"))}
    assert rows["qwen3-14b"]["precision"] == UNDEFINED and rows["smollm2-135m"]["precision"] == "—"
    assert rows["qwen3-14b"]["recall"] == "81.0% [70.0%, 90.0%]"
    groups = {row["model"]: row for row in table_rows(section(markdown, "Per human reader group"))}
    assert groups["gpt-4o"]["F1 professional"] == "66.0% [50.0%, 80.0%]" and groups["gpt-4o"]["n professional"] == "30"

    thr = seen["threshold"]
    assert sorted(set(thr["run_id"])) == sorted(ids.values())
    assert len(thr) == 3 * len(GRID)  # the all-readers rows only
    mine = thr[thr["run_id"] == ids["qwen3-14b"]].sort_values("threshold")
    np.testing.assert_allclose(mine["f1"], 0.5)
    assert sorted(set(seen["epsilon"]["run_id"])) == sorted(ids.values())
    assert set(seen["theta"]["run_id"]) == {ids["gpt-4o"]}  # decided by the CSV, not by a sens.theta metric
    assert (out / "figures" / "f1_auc_theta.png").is_file()


def test_report_reads_metrics_json_and_curve_csvs_from_the_store_and_a_copy(
    tmp_path: Path, captured: dict[str, pd.DataFrame]
) -> None:
    uri, ids = new_contract_store(tmp_path / "first" / "outputs")
    client = MlflowClient(tracking_uri=uri)
    assert "recall" not in client.get_run(ids["qwen3-14b"]).data.metrics  # headline only in MLflow
    assert client.get_run(ids["qwen3-14b"]).info.artifact_uri.startswith("mlflow-artifacts:/")
    out = make_report(uri, experiments=[EXPERIMENT, "old"], out=tmp_path / "report", log=True)
    check_report(out, ids, captured)
    reports = client.search_runs(
        [client.get_experiment_by_name(EXPERIMENT).experiment_id], "tags.`mcu.kind` = 'report'"
    )
    (report,) = reports
    logged = RunArtifacts(client, report.info.run_id, report.info.artifact_uri).get("report.html", tmp_path)
    assert logged is not None and logged.is_relative_to(artifact_root(uri))

    moved = tmp_path / "moved" / "outputs"
    shutil.copytree(tmp_path / "first" / "outputs", moved)
    shutil.rmtree(tmp_path / "first" / "outputs")  # nothing may still be read from the old place
    copy_uri = f"sqlite:///{moved / 'mlflow.db'}"
    captured.clear()
    again = make_report(copy_uri, experiments=[EXPERIMENT, "old"], out=tmp_path / "again", log=False)
    check_report(again, ids, captured)


def test_metrics_json_values_win_and_null_reads_undefined() -> None:
    merged = merged_metrics({"f1": 0.7, "n": 50.0}, {"f1": 0.71, "auc_binary": None, "note": "x", "flag": True})
    assert merged["f1"] == 0.71 and merged["n"] == 50.0 and math.isnan(merged["auc_binary"])
    assert "note" not in merged and "flag" not in merged


def test_unreadable_metrics_json_falls_back_to_mlflow_metrics(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outputs = seed_store(tmp_path / "outputs")
    client = MlflowClient(tracking_uri=f"sqlite:///{outputs / 'mlflow.db'}")
    exp = client.create_experiment("bad", artifact_location=experiment_location("bad"))
    run = new_run(client, exp, "m", "p1", 0.1, HEADLINE)
    folder = tmp_path / "files"
    folder.mkdir()
    (folder / METRICS_FILE).write_text("{not json")
    (folder / sensitivity_file("threshold")).write_text("")  # an empty CSV: no curve, no crash
    RunArtifacts(client, run.info.run_id, run.info.artifact_uri).put_folder(folder)
    files = RunFiles(client, [client.get_run(run.info.run_id)], tmp_path / "dl")
    assert files.metrics(client.get_run(run.info.run_id)) == HEADLINE
    assert files.curves([run.info.run_id], "threshold").empty
    assert files.curves([run.info.run_id], "theta").empty
    err = capsys.readouterr().err
    assert f"run {run.info.run_id}: {METRICS_FILE} unreadable" in err
