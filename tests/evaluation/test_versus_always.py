"""ΔF1 against the always-understandable baseline: its interval is the paired bootstrap one."""

from __future__ import annotations

import math

import numpy as np

from mcu_exp.evaluation import Counts, evaluate, metric, metrics_for_mlflow, percentile_interval, stratified_indices
from mcu_exp.evaluation.verdict import outcomes
from mcu_exp.evaluation.versus_always import f1_minus_always


def test_the_interval_is_the_paired_bootstrap_difference() -> None:
    rng = np.random.default_rng(3)
    truth = (rng.uniform(size=60) < 0.6).astype(int)
    score = truth + rng.normal(0, 0.8, size=60)
    pred = (score > 0.2).astype(int)
    report = evaluate(truth, pred, score, resamples=1000, seed=5, permutations=0)
    found = f1_minus_always(metrics_for_mlflow(report))

    # The paired difference computed the long way: both labellers scored on each same resample.
    idx = stratified_indices(truth, 1000, np.random.default_rng(5))
    t = truth[idx]
    f1 = metric("f1").compute
    diff = f1(Counts.from_labels(t, pred[idx])) - f1(Counts.from_labels(t, np.ones_like(t)))  # type: ignore[arg-type]
    low, high = percentile_interval(diff, 0.95)
    assert math.isclose(found["f1_minus_always_ci_low"], low, abs_tol=1e-12)
    assert math.isclose(found["f1_minus_always_ci_high"], high, abs_tol=1e-12)
    assert found["f1_minus_always"] == report.metrics["f1"] - report.baselines["always_positive"]["f1"]
    # Above 0 exactly when the verdict says F1 beats the baseline.
    beats = outcomes(report)["verdict.f1_vs_always"] == 1.0
    assert beats == (found["f1_minus_always_ci_low"] > 0)


def test_undefined_or_missing_values_are_nan_and_prefixes_are_kept() -> None:
    found = f1_minus_always({"group.phd.f1": 0.7, "group.phd.baseline_always_f1": None}, prefix="group.phd.")
    assert set(found) == {
        "group.phd.f1_minus_always",
        "group.phd.f1_minus_always_ci_low",
        "group.phd.f1_minus_always_ci_high",
    }
    assert all(math.isnan(v) for v in found.values())
