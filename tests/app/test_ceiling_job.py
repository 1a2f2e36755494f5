"""A job reports the humans' own ceiling beside the proxy: the block under the results table,
the verdict's clause, each reader group against its own ceiling, the line under the measure
table, ``reliability.csv``, metrics.json and the headline MLflow metrics (within the limit)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient
from test_published_numbers import job, only_run, run_dir

from mcu_exp import names
from mcu_exp.ceiling.split_half import split_half
from mcu_exp.data import load_dataset
from mcu_exp.pipeline import run_job, typed_config
from mcu_exp.tracking.artifacts import RunArtifacts
from mcu_exp.tracking.headline import MAX_HEADLINE

pytestmark = pytest.mark.slow  # a whole job


def test_job_prints_logs_and_saves_the_humans_ceiling(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outputs = tmp_path / "outputs"
    cfg = job(outputs, "evaluation.ceiling_splits=300")
    run_job(cfg)
    printed = capsys.readouterr().out
    flat = " ".join(printed.split())
    results = run_dir(outputs) / names.RESULTS_DIR
    metrics = json.loads((results / names.METRICS_FILE).read_text())

    # The ceiling is the dataset's own, recomputed here from the data with the job's settings.
    typed = typed_config(cfg)
    expected = split_half(load_dataset(typed.dataset), splits=300, seed=typed.evaluation.seed).figures
    assert metrics["ceiling.auc_score"] == pytest.approx(expected["auc_score"])
    assert metrics["ceiling.spearman_ci_high"] == pytest.approx(expected["spearman_ci_high"])
    assert metrics["share.auc_score"] == pytest.approx((metrics["auc_score"] - 0.5) / (expected["auc_score"] - 0.5))
    assert metrics["share.spearman"] == pytest.approx(metrics["spearman"] / expected["spearman"])
    assert metrics["group.phd.ceiling.auc_score"] is None and metrics["group.phd.ceiling.programs"] == 8
    assert metrics["group.professional.ceiling.programs"] == 34
    assert metrics["group.professional.share.auc_score"] is not None

    assert "Humans' ceiling: 300 random split-halves of each program's readers" in flat
    assert "50 programs split, 0 with one reader left out" in flat
    assert f"half-panel: AUC (score) {expected['auc_score']:.3f}" in flat
    assert f"the humans' own split-half AUC is {expected['auc_score']:.3f}" in flat
    assert "ceiling AUC (score)" in printed and "share of ceiling" in printed
    assert "humans' ceiling: AUC (score)" in printed  # under the measure table
    phd = next(line for line in printed.splitlines() if line.startswith("│ phd"))
    assert phd.count("undefined") == 2  # its own ceiling: 8 programs with two PhD readers

    table = pd.read_csv(results / names.RELIABILITY_FILE)
    assert list(table["group"]) == ["all", "bachelor", "master", "phd", "professional"]
    assert table.set_index("group").loc["all", "auc_score"] == pytest.approx(expected["auc_score"])
    assert math.isnan(table.set_index("group").loc["phd", "auc_score"])

    run = only_run(outputs)
    logged = set(run.data.metrics)
    assert len(logged) <= MAX_HEADLINE and {"ceiling.auc_score", "share.auc_score"} <= logged
    assert names.TAG_VERDICT in run.data.tags and "humans' own split-half AUC" in run.data.tags[names.TAG_VERDICT]
    client = MlflowClient(tracking_uri=f"sqlite:///{outputs / 'mlflow.db'}")
    art = RunArtifacts(client, run.info.run_id, run.info.artifact_uri)
    logged_csv = pd.read_csv(art.get(names.RELIABILITY_FILE, outputs))
    assert logged_csv["auc_score"].equals(table["auc_score"])
    rows = json.loads(art.get(f"{names.TABLES_DIR}/reliability.json", outputs).read_text())
    assert len(rows["data"]) == 5
