"""What a job prints and logs is what a researcher can publish: the interval kind, the
correlations, the permutation test, the verdict, undefined metrics, class-size warnings and
duplicate counts, checked on whole jobs (the stand-in proxy, the real Scalabrino labels, a
real MLflow store) and recomputed from the job's own artifacts."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from mlflow.tracking import MlflowClient
from omegaconf import DictConfig

from mcu_exp import names
from mcu_exp.calibration import Scores, get_rule
from mcu_exp.config import DecisionConfig
from mcu_exp.evaluation import evaluate
from mcu_exp.pipeline import run_job
from support.compose import compose
from support.mlflow_store import all_metrics, seed_store
from support.standin_proxy import TARGET

pytestmark = pytest.mark.slow  # whole jobs, stores or encoders: scheduled first under xdist


def job(outputs: Path, *overrides: str) -> DictConfig:
    """The stand-in job's config, its outputs folder holding a ready MLflow store (a fresh one
    costs MLflow's schema migrations, seconds per job) and the test run's shared result cache
    (the humans' ceiling and the measure table's bootstraps, computed once per test run)."""
    seed_store(outputs)
    return compose(
        TARGET,
        "quiet=true",
        "evaluation.plots=false",
        f"paths.outputs={outputs}",
        "evaluation.bootstrap_resamples=1000",
        *overrides,
    )


def only_run(outputs: Path):  # -> an mlflow Run
    client = MlflowClient(tracking_uri=f"sqlite:///{outputs / 'mlflow.db'}")
    (run,) = client.search_runs([client.get_experiment_by_name("mcu_exp").experiment_id])
    return run


def run_dir(outputs: Path) -> Path:
    (folder,) = (outputs / "runs").glob("*/*")
    return folder


def test_job_reports_recalibrated_cis_correlations_permutation_test_and_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outputs = tmp_path / "outputs"
    run_job(job(outputs))
    printed = capsys.readouterr().out
    flat = " ".join(printed.split())
    assert "τ recalibrated in each" in flat
    assert "spearman" in printed and "kendall" in printed
    assert "AUC (score) vs 0.5: two-sided permutation p = " in printed
    assert "of the calibration scores lie at or below it" in printed
    assert "(95 % Clopper–Pearson interval)" in printed

    run = only_run(outputs)
    m, tags = all_metrics(MlflowClient(tracking_uri=f"sqlite:///{outputs / 'mlflow.db'}"), run), run.data.tags
    assert " ".join(tags[names.TAG_VERDICT].split()) in flat  # the printed sentence, whole
    assert tags[names.TAG_VERDICT].startswith("Verdict (95 % CIs): F1 ")
    assert {
        "spearman",
        "kendall",
        "spearman_ci_low",
        "auc_score_perm_p",
        "calibration_fraction",
        "coverage_ci_low",
        "coverage_ci_high",
    } <= set(m)
    assert m["calibration_fraction"] >= 0.9  # the empirical rule keeps at least 1 − ε
    assert m["coverage_ci_low"] <= m["coverage"] <= m["coverage_ci_high"]
    assert (m["human.duplicate_pairs_identical"], m["human.duplicate_pairs_conflicting"]) == (5, 2)
    assert names.TAG_UNDEFINED not in tags and names.TAG_CLASS_WARNING not in tags

    # The logged interval is the recalibrating bootstrap of the job's own scores.
    results = run_dir(outputs) / names.RESULTS_DIR
    scores = pd.read_csv(results / names.SCORES_FILE, index_col=names.PROGRAM_ID)
    table = pd.read_csv(results / names.PER_PROGRAM_FILE, index_col=names.PROGRAM_ID)
    arrays = Scores(alpha_cal=scores["alpha_cal"].to_numpy(), alpha_test=scores["alpha_test"].to_numpy())
    rule = get_rule("conformal")
    again = evaluate(
        table[names.HUMAN_LABEL].to_numpy(int),
        table[names.LABEL].to_numpy(),
        table[names.SCORE].to_numpy(),
        resamples=1000,
        seed=0,
        relabel=lambda rows: rule.relabel(arrays, DecisionConfig(), rows),
    )  # type: ignore[misc]
    assert (m["f1_ci_low"], m["f1_ci_high"]) == pytest.approx(again.ci["f1"])
    assert m["auc_score_perm_p"] == pytest.approx(again.tests["auc_score_perm_p"])
    conditional = evaluate(
        table[names.HUMAN_LABEL].to_numpy(int),
        table[names.LABEL].to_numpy(),
        table[names.SCORE].to_numpy(),
        resamples=1000,
        seed=0,
    )
    assert (m["f1_ci_low"], m["f1_ci_high"]) != pytest.approx(conditional.ci["f1"])


def test_one_human_class_is_undefined_and_flagged_everywhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outputs = tmp_path / "outputs"
    run_job(job(outputs, "labels.min_fraction=0"))  # every program understandable: one class
    printed = capsys.readouterr().out
    auc_rows = [line for line in printed.splitlines() if line.startswith(("│ auc_binary", "│ auc_score"))]
    assert auc_rows and all("undefined" in line and "0.500" not in line for line in auc_rows)
    assert "warning: only 0 programs are not understandable" in printed

    run = only_run(outputs)
    tags = run.data.tags
    assert set(tags[names.TAG_UNDEFINED].split(",")) >= {"auc_binary", "auc_score"}
    assert "fewer than 5" in tags[names.TAG_CLASS_WARNING]
    assert math.isnan(run.data.metrics["auc_binary"])  # NaN in MLflow, not 0.5
    metrics = json.loads((run_dir(outputs) / names.RESULTS_DIR / names.METRICS_FILE).read_text())
    assert metrics["auc_binary"] is None and metrics["f1"] is not None
    assert np.isfinite(metrics["tau"])
