"""A job reports the humans' ceiling (both bounds) and the proxy against it: the block under the
results table, the verdict's clause, each reader group against its own ceiling on the same
programs, the line under the measure table, ``reliability.csv``, metrics.json and the headline
MLflow metrics (within the limit)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient
from test_published_numbers import job, only_run, run_dir

from mcu_exp import names
from mcu_exp.ceiling.program_bootstrap import compare_to_bounds
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
    ev = typed.evaluation
    score = pd.read_csv(results / names.PER_PROGRAM_FILE, index_col=0)["score"]
    expected = compare_to_bounds(
        load_dataset(typed.dataset),
        score,
        resamples=ev.ceiling_resamples,
        splits=300,
        seed=ev.seed,
        inner_splits=ev.ceiling_inner_splits,
    )
    assert metrics["ceiling.auc_score"] == pytest.approx(expected.ceiling.figures["auc_score"].point)
    assert metrics["ceiling.spearman_ci_high"] == pytest.approx(expected.ceiling.figures["spearman"].ci_high)
    assert metrics["ceiling.upper_auc_score"] == pytest.approx(expected.ceiling.figures["upper_auc_score"].point)
    assert metrics["vs_ceiling.upper"] == pytest.approx(expected.differences["upper"].point)
    assert metrics["vs_ceiling.auc_score"] == pytest.approx(metrics["auc_score"])  # every program has 2 readers
    assert metrics["disattenuated.spearman_ci_low"] == pytest.approx(expected.disattenuated.ci_low)
    assert not any(key.startswith("share.") for key in metrics)
    assert metrics["group.phd.ceiling.auc_score"] is None and metrics["group.phd.ceiling.programs"] == 8
    assert metrics["group.professional.ceiling.programs"] == 34
    assert metrics["group.professional.ceiling.programs_left_out"] == 16
    assert metrics["group.professional.vs_ceiling.upper"] is not None

    assert "lower bound, pessimistic (half panel vs half panel, 300 splits):" in flat
    assert max(len(line) for line in printed.split("Humans' ceiling")[1].split("Verdict")[0].splitlines()) <= 100
    assert "50 programs with two or more readers, 0 with one left out" in flat
    assert f"AUC (score) {expected.ceiling.figures['auc_score'].point:.3f}" in flat
    assert "against the humans' bounds its point estimate lies" in flat
    assert "against the humans' ceiling, per reader group" in printed and "AUC − upper" in printed
    assert "humans' bounds on AUC (score)" in printed  # under the measure table
    phd = next(line for line in printed.splitlines() if line.startswith("│ phd") and "(7)" in line)
    assert phd.count("undefined") == 6  # its own ceiling: 8 programs with two PhD readers

    table = pd.read_csv(results / names.RELIABILITY_FILE)
    assert list(table["group"]) == ["all", "bachelor", "master", "phd", "professional"]
    assert table.set_index("group").loc["all", "ceiling.auc_score"] == pytest.approx(metrics["ceiling.auc_score"])
    assert math.isnan(table.set_index("group").loc["phd", "ceiling.auc_score"])

    run = only_run(outputs)
    logged = set(run.data.metrics)
    assert len(logged) <= MAX_HEADLINE and {"ceiling.auc_score", "ceiling.upper_auc_score"} <= logged
    assert names.TAG_VERDICT in run.data.tags and "against the humans' bounds" in run.data.tags[names.TAG_VERDICT]
    client = MlflowClient(tracking_uri=f"sqlite:///{outputs / 'mlflow.db'}")
    art = RunArtifacts(client, run.info.run_id, run.info.artifact_uri)
    logged_csv = pd.read_csv(art.get(names.RELIABILITY_FILE, outputs))
    assert logged_csv["ceiling.auc_score"].equals(table["ceiling.auc_score"])
    rows = json.loads(art.get(f"{names.TABLES_DIR}/reliability.json", outputs).read_text())
    assert len(rows["data"]) == 5
