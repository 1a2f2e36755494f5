"""A job scores the code-metric baselines (and a P1 job its uncertainty measures) beside the
proxy: printed, in ``measures.csv`` and as an MLflow table; ``evaluation.baselines`` picks
which."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr
from sklearn.metrics import roc_auc_score
from test_published_numbers import job, run_dir

from mcu_exp import names
from mcu_exp.data import human_labels, load_dataset
from mcu_exp.data.code_metrics import code_metrics
from mcu_exp.evaluation.rejection import prediction_rejection_ratio
from mcu_exp.job.measures import measures_and_baselines
from mcu_exp.pipeline import run_job, typed_config
from mcu_exp.proxies.base import ProxyOutcome

pytestmark = pytest.mark.slow  # whole jobs


def measures(outputs: Path) -> pd.DataFrame:
    return pd.read_csv(run_dir(outputs) / names.RESULTS_DIR / names.MEASURES_FILE, index_col=0)


def test_code_metrics_are_scored_beside_the_proxy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outputs = tmp_path / "outputs"
    cfg = job(outputs)
    run_job(cfg)
    printed = capsys.readouterr().out
    assert "Uncertainty measures and code-metric baselines vs human labels" in printed
    assert "code.nloc" in printed
    table = measures(outputs)
    assert all(str(i).startswith("code.") for i in table.index) and "code.cyclomatic_max" in table.index
    # The AUC and ρ of one baseline, recomputed here from the data and the metric.
    typed = typed_config(cfg)
    dataset = load_dataset(typed.dataset)
    labels = human_labels(dataset, typed.labels)
    loc = code_metrics(dataset)["code.nloc"].reindex(labels.labels.index)
    row = table.loc["code.nloc"]  # scored in its declared direction: higher nloc = harder to understand
    assert row["direction"] == "-value"
    assert row["auc_score"] == pytest.approx(roc_auc_score(labels.labels, -loc), abs=1e-12)
    rho = spearmanr(-loc, labels.correctness.reindex(loc.index).round(12)).statistic  # ranks of values to 1e-12
    assert row["spearman"] == pytest.approx(rho, abs=1e-12) and row["spearman_vs"] == "correctness"
    assert row["auc_score_ci_low"] <= row["auc_score"] <= row["auc_score_ci_high"]
    assert row["prr_ci_low"] <= row["prr"] <= row["prr_ci_high"] and 0 < row["prr_perm_p"] <= 1

    # The proxy's own prediction-rejection view: curves, figure, PRR in metrics.json.
    results = run_dir(outputs) / names.RESULTS_DIR
    per_program = pd.read_csv(results / names.PER_PROGRAM_FILE, index_col=names.PROGRAM_ID)
    curves = pd.read_csv(results / names.REJECTION_FILE)
    assert list(curves.columns[:4]) == ["rejection_rate", "proxy", "random", "oracle"] and len(curves) == 50
    ordered = per_program.sort_values("score", kind="stable")
    assert curves["oracle"].iloc[0] == pytest.approx(per_program["human_label"].mean())
    metrics = json.loads((results / names.METRICS_FILE).read_text())
    assert metrics["prr"] == pytest.approx(prediction_rejection_ratio(ordered["human_label"], ordered["score"]))
    assert metrics["prr_ci_low"] <= metrics["prr"] <= metrics["prr_ci_high"] and 0 < metrics["prr_perm_p"] <= 1


def test_all_adds_the_datasets_own_metrics_and_none_leaves_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outputs = tmp_path / "all"
    run_job(job(outputs, "evaluation.baselines=all"))
    printed = capsys.readouterr().out
    table = measures(outputs)
    dataset_rows = [i for i in table.index if str(i).startswith("dataset.")]
    assert len(dataset_rows) > 100 and "dataset.Readability" in table.index
    assert f"and {len(dataset_rows)} of the dataset's own metrics" in printed
    assert np.isfinite(table.loc["dataset.Readability", "auc_score"])

    # none: a proxy without uncertainty measures (this stand-in) has nothing left to score.
    typed = typed_config(job(tmp_path / "none", "evaluation.baselines=none"))
    dataset = load_dataset(typed.dataset)
    outcome = ProxyOutcome(table=pd.DataFrame({"score": 0.5}, index=pd.Index([p.id for p in dataset.programs])))
    assert measures_and_baselines(outcome, dataset, human_labels(dataset, typed.labels), typed.evaluation) is None


def test_an_unknown_baselines_value_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"^evaluation.baselines='loc': expected one of none, code, all$"):
        run_job(job(tmp_path / "o", "evaluation.baselines=loc"))


def test_an_unknown_scorer_kind_is_refused_before_anything_runs(tmp_path: Path) -> None:
    with pytest.raises(
        ValueError, match=r"^unknown scorer kind 'bleu' \(scorer.kind\).*\(known: bertscore, rougel, cosine\)$"
    ):
        run_job(job(tmp_path / "o", "scorer.kind=bleu"))
