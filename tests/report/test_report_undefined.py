"""Undefined metrics (NaN: an AUC with one class, a precision with no predicted positive)
reach MLflow as NaN and read "undefined" in every report table; a metric a run never logged
reads "—". Class-size warnings become notes of their row, verdicts a column. Real MLflow."""

from __future__ import annotations

import csv
import math
from pathlib import Path

from mlflow.tracking import MlflowClient

from mcu_exp.names import TAG_CLASS_WARNING, TAG_VERDICT, UNDEFINED, mlflow_series
from mcu_exp.report.build import make_report
from support.md_tables import section, table_rows
from support.mlflow_runs import METRICS, Store, log_job

NAN = float("nan")


def test_the_tracker_logs_undefined_metrics_as_nan(store: Store) -> None:
    key = mlflow_series("threshold", "auc_binary")
    run_id = log_job(
        store,
        "nan",
        metrics={**METRICS, "auc_binary": NAN, "odd": math.inf},
        series={key: [(100, 0.5), (200, NAN), (300, 0.6)]},
    )
    client = MlflowClient(tracking_uri=store.uri)
    metrics = client.get_run(run_id).data.metrics
    assert math.isnan(metrics["auc_binary"]) and metrics["f1"] == 0.7
    assert "odd" not in metrics  # ±inf: SQL stores would turn it into ±1.8e308
    history = {m.step: m.value for m in client.get_metric_history(run_id, key)}
    assert history[100] == 0.5 and math.isnan(history[200]) and history[300] == 0.6


def test_report_shows_undefined_as_a_word_and_missing_as_a_dash(store: Store, tmp_path: Path) -> None:
    exp = "undefined"
    one_class = log_job(
        store,
        exp,
        ["decision.epsilon=0.1"],
        metrics={
            **METRICS,
            "auc_binary": NAN,
            "auc_binary_ci_low": NAN,
            "auc_binary_ci_high": NAN,
            "f1_ci_low": NAN,
            "precision": NAN,
            "precision_ci_low": NAN,
            "precision_ci_high": NAN,
            "baseline_random_f1": NAN,
        },
        tags={
            TAG_CLASS_WARNING: "the Low class has 2 programs (under 5)",
            TAG_VERDICT: "No evidence of alignment: F1 is below the always-1 baseline.",
        },
    )
    log_job(
        store,
        exp,
        ["decision.epsilon=0.2"],
        metrics={
            **METRICS,
            "precision": 0.5,
            "precision_ci_low": 0.4,
            "precision_ci_high": 0.6,
            "auc_score": 0.61,
            "auc_score_ci_low": 0.5,
            "auc_score_ci_high": 0.7,
        },
    )
    out = make_report(store.uri, experiments=[exp], out=tmp_path / "report", log=False)

    markdown = (out / "report.md").read_text()
    main = section(markdown, "Alignment with human labels")
    rows = {row["ε"]: row for row in table_rows(main)}
    assert rows["0.1"]["AUC (labels)"] == UNDEFINED
    assert rows["0.1"]["precision"] == UNDEFINED
    assert rows["0.1"]["F1"] == f"70.0% [{UNDEFINED}, 80.0%]"
    assert rows["0.1"]["F1 random"] == UNDEFINED
    assert rows["0.1"]["AUC (score)"] == "—"  # never logged by that run
    assert rows["0.2"]["precision"] == "50.0% [40.0%, 60.0%]" and rows["0.2"]["AUC (score)"] == "0.610 [0.500, 0.700]"
    groups = {row["ε"]: row for row in table_rows(section(markdown, "Per human reader group"))}
    assert groups["0.1"]["AUC all"] == UNDEFINED
    assert "readers: all; label: mean ABU50 ≥ 0.5" in main
    assert "smollm2-135m · p1 · ε=0.1: class size warning: the Low class has 2 programs (under 5)" in main
    assert "ε=0.2: class size" not in main
    assert "verdict: No evidence" not in main  # the verdict is a column, not a note per row
    assert rows["0.1"]["verdict"] == "? F1 · ? AUC"  # F1's lower bound and the AUC undefined
    assert rows["0.2"]["verdict"] == "✗ F1 · ✗ AUC"  # 60.0% < 68.4%; AUC (score)'s bound is 0.5
    page = (out / "report.html").read_text()
    assert f"<td>{UNDEFINED}</td>" in page and "class size warning: the Low class" in page

    with open(out / "summary.csv", newline="") as handle:
        summary = {row["run_id"]: row for row in csv.DictReader(handle)}
    assert summary[one_class]["auc_binary"] == "NaN" and summary[one_class]["auc_score"] == ""
    assert summary[one_class]["f1"] == "0.7" and "auc_binary" in summary[one_class]["undefined"]
    assert summary[one_class]["verdict"].startswith("No evidence of alignment")  # the sentence, in the CSV


def test_report_shows_correlations_and_the_permutation_p_value(store: Store, tmp_path: Path) -> None:
    exp = "continuous"
    log_job(
        store,
        exp,
        metrics={
            **METRICS,
            "spearman": 0.31,
            "spearman_ci_low": 0.05,
            "spearman_ci_high": 0.55,
            "kendall": NAN,
            "auc_score_perm_p": 0.0123,
        },
    )
    out = make_report(store.uri, experiments=[exp], out=tmp_path / "report", log=False)
    (row,) = table_rows(section((out / "report.md").read_text(), "Alignment with human labels"))
    assert row["Spearman ρ (score, correctness)"] == "0.310 [0.050, 0.550]"
    assert row["Kendall τ (score, correctness)"] == UNDEFINED
    assert row["p (AUC score vs 0.5)"] == "0.0123"
    with (out / "summary.csv").open(newline="") as handle:
        (saved,) = list(csv.DictReader(handle))
    assert float(saved["auc_score_perm_p"]) == 0.0123 and float(saved["spearman_ci_high"]) == 0.55
