"""The alignment report: contents, rendering, flattening for MLflow. (Its speed is measured by
scripts/bench_evaluate.py, not here.)"""

from __future__ import annotations

import math

import numpy as np
import pytest

from mcu_exp.evaluation import (
    DegenerateMetricWarning,
    alignment_metrics,
    always_positive,
    bootstrap_ci,
    evaluate,
    metrics_for_mlflow,
    random_expected,
    render_table,
)

RATES = ("accuracy", "precision", "recall", "f1")
AUCS = ("auc_binary", "auc_score")
COUNTS = ("tn", "fp", "fn", "tp")


def _case(n: int = 50, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.6).astype(int)
    pred = np.where(rng.random(n) < 0.7, y, 1 - y)
    score = -np.clip(0.5 - 0.1 * y + rng.normal(0.0, 0.1, n), 0, 1)  # −α_test
    return y, pred, score


def test_report_holds_metrics_intervals_and_baselines() -> None:
    y, pred, score = _case()
    report = evaluate(y, pred, score, resamples=1500, confidence=0.9, seed=4)
    assert report.metrics == alignment_metrics(y, pred, score)
    assert report.ci == bootstrap_ci(y, pred, score, resamples=1500, confidence=0.9, seed=4)
    assert report.n == 50 and report.warnings == ()
    frame = report.to_frame()
    assert frame.index.tolist() == [*RATES, *AUCS, "mcc", *COUNTS]
    assert list(frame.columns) == ["value", "ci_low", "ci_high", "always_positive", "random_expected"]
    assert frame.loc["f1", "always_positive"] == pytest.approx(always_positive(y)["f1"])
    assert frame.loc["f1", "random_expected"] == pytest.approx(random_expected(y)["f1"])
    assert frame.loc[list(COUNTS), "ci_low"].isna().all()
    assert frame.loc[[*RATES, *AUCS], "ci_low"].notna().all()


def test_render_table_shows_every_metric_and_interval() -> None:
    y, pred, score = _case()
    report = evaluate(y, pred, score)
    text = render_table(report, title="P1 vs human ABU50")
    assert "P1 vs human ABU50" in text and "95 % CI" in text
    assert "always-1 baseline" in text and "random baseline" in text
    for name in (*RATES, *AUCS, *COUNTS):
        assert name in text, name
    for name in RATES:
        low, high = report.ci[name]
        assert f"[{100 * low:.1f}%, {100 * high:.1f}%]" in text, name
        assert f"{100 * report.metrics[name]:.1f}%" in text, name
    for name in AUCS:
        low, high = report.ci[name]
        assert f"[{low:.3f}, {high:.3f}]" in text, name
    assert all(len(line) <= 100 for line in text.splitlines())
    assert "\x1b[" not in text  # no colour codes without a terminal


def test_render_table_lists_warnings_of_degenerate_input() -> None:
    y = np.ones(20, dtype=int)
    with pytest.warns(DegenerateMetricWarning):
        report = evaluate(y, np.ones(20, dtype=int))
    assert len(report.warnings) == 2  # single-class truth, constant predictions; once each
    text = render_table(report, title="degenerate")
    assert text.count("warning: ") == 2
    assert "auc_score" not in text
    assert report.undefined == ["auc_binary", "mcc"]  # one class: AUC and MCC have no value, not 0.5 or 0
    auc_row = next(line for line in text.splitlines() if "auc_binary" in line)
    assert auc_row.count("undefined") == 4 and "0.500" not in auc_row  # value, CI and both baselines
    values = report.to_frame()[["value", "ci_low", "ci_high"]].loc[list(RATES)]
    assert not values.isna().any().any()


def test_metrics_for_mlflow_flattens_everything() -> None:
    y, pred, score = _case()
    report = evaluate(y, pred, score)
    flat = metrics_for_mlflow(report, prefix="p1_")
    for name in (*RATES, *AUCS):
        assert flat[f"p1_{name}"] == report.metrics[name]
        assert (flat[f"p1_{name}_ci_low"], flat[f"p1_{name}_ci_high"]) == report.ci[name]
        assert flat[f"p1_baseline_always_{name}"] == report.baselines["always_positive"][name]
        assert flat[f"p1_baseline_random_{name}"] == report.baselines["random_expected"][name]
    assert flat["p1_tp"] == report.metrics["tp"] and flat["p1_n"] == 50
    assert flat["p1_auc_score_perm_p"] == report.tests["auc_score_perm_p"]
    assert all(isinstance(v, float) and math.isfinite(v) for v in flat.values())
    assert set(metrics_for_mlflow(report)) == {key[3:] for key in flat}
