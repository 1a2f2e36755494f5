"""Sensitivity grids over τ, θ and ε, and per-subgroup sweeps."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from mcu_exp.calibration import threshold
from mcu_exp.evaluation import (
    DegenerateMetricWarning,
    SingleClassWarning,
    alignment_metrics,
    by_subgroup,
    epsilon_sweep,
    similarity_sweep,
    threshold_sweep,
)


def _case(n: int = 40, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.55).astype(int)
    alpha = np.clip(0.5 - 0.15 * y + rng.normal(0.0, 0.1, n), 0.0, 1.0)
    return y, alpha


def test_threshold_grid_spans_observed_range_plus_explicit_values() -> None:
    y, alpha = _case()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateMetricWarning)
        frame = threshold_sweep(y, alpha, grid=[0.123456], n_points=11)
    assert list(frame.columns) == [
        "threshold",
        "f1",
        "precision",
        "recall",
        "accuracy",
        "auc_binary",
        "mcc",
        "positive_rate",
    ]
    thresholds = frame["threshold"].to_numpy()
    assert alpha.min() in thresholds and thresholds[-1] == alpha.max()
    assert thresholds[0] == 0.123456 and len(frame) == 12
    assert frame["threshold"].is_monotonic_increasing
    assert frame["positive_rate"].iloc[-1] == 1.0


def test_threshold_labels_flip_exactly_at_each_alpha() -> None:
    y, alpha = _case()
    below = np.nextafter(alpha, -np.inf)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateMetricWarning)
        frame = threshold_sweep(y, alpha, grid=np.r_[alpha, below], n_points=2)
    rate = frame.set_index("threshold")["positive_rate"]
    for a, b in zip(alpha, below):
        assert rate[a] == pytest.approx(np.mean(alpha <= a))
        assert rate[b] == pytest.approx(np.mean(alpha < a))
    assert frame["positive_rate"].is_monotonic_increasing


def test_threshold_sweep_rows_equal_point_metrics() -> None:
    y, alpha = _case()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateMetricWarning)
        frame = threshold_sweep(y, alpha, n_points=9)
    row = frame.iloc[4]
    point = alignment_metrics(y, (alpha <= row["threshold"]).astype(int))
    for key in ("f1", "precision", "recall", "accuracy", "auc_binary"):
        assert row[key] == pytest.approx(point[key]), key


def test_sweep_emits_each_degenerate_warning_once() -> None:
    y, alpha = _case()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        threshold_sweep(y, alpha, grid=[-1.0, -0.5, -0.2, 2.0, 3.0])
    messages = [str(w.message) for w in caught if issubclass(w.category, DegenerateMetricWarning)]
    assert len(messages) == 2 == len(set(messages))  # all-0 and all-1 grid points
    assert all(m.startswith("threshold sweep: ") for m in messages)


def test_similarity_sweep_labels_by_theta() -> None:
    y, alpha = _case()
    similarity = 1.0 - alpha
    thetas = [0.0, 0.3, 0.45, 0.6, 1.0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateMetricWarning)
        frame = similarity_sweep(y, similarity, thetas)
    assert frame["theta"].tolist() == thetas
    expected = [np.mean(similarity >= t) for t in thetas]
    assert frame["positive_rate"].to_numpy() == pytest.approx(expected)
    assert frame["positive_rate"].is_monotonic_decreasing


def test_similarity_sweep_rejects_theta_outside_unit_interval() -> None:
    y, alpha = _case()
    with pytest.raises(ValueError, match=r"theta values must lie in \[0, 1\]"):
        similarity_sweep(y, 1.0 - alpha, [0.2, 1.5])


@pytest.mark.parametrize("rule", ["empirical", "conformal"])
def test_epsilon_sweep_coverage_non_increasing(rule: str) -> None:
    rng = np.random.default_rng(1)
    alpha_cal, alpha_test = rng.uniform(size=50), rng.uniform(size=50)
    epsilons = [0.02, 0.05, 0.1, 0.2, 0.3, 0.5]
    frame = epsilon_sweep(alpha_cal, alpha_test, epsilons, rule)
    assert list(frame.columns) == ["epsilon", "nominal", "tau", "coverage"]
    assert frame["nominal"].to_numpy() == pytest.approx([1 - e for e in epsilons])
    assert frame["tau"].tolist() == [threshold(alpha_cal, e, rule) for e in epsilons]
    assert (np.diff(frame["coverage"]) <= 0).all()


def test_conformal_rule_covers_its_own_calibration_scores() -> None:
    alpha = np.random.default_rng(2).uniform(size=30)
    frame = epsilon_sweep(alpha, alpha, [0.05, 0.1, 0.2, 0.4], "conformal")
    assert (frame["coverage"] >= frame["nominal"]).all()


def test_epsilon_sweep_with_labels_scores_the_decisions() -> None:
    y, alpha = _case()
    frame = epsilon_sweep(alpha[::-1], alpha, [0.1, 0.3], "empirical", y_true=y)
    assert {"f1", "precision", "recall", "auc_binary"} <= set(frame.columns)
    for _, row in frame.iterrows():
        point = alignment_metrics(y, (alpha <= row["tau"]).astype(int))
        assert row["f1"] == pytest.approx(point["f1"])
        assert row["auc_binary"] == pytest.approx(point["auc_binary"])


def _subgroups() -> tuple[dict[str, pd.Series], pd.Series]:
    y, alpha = _case()
    ids = [f"{i}-Sys" for i in range(len(y))]
    scores = pd.Series(alpha, index=ids)
    labels = {
        "all": pd.Series(y, index=ids),
        "phd": pd.Series(y[:25], index=ids[:25]),  # fewer programs read by this group
        "professional": pd.Series(np.ones(15, dtype=int), index=ids[5:20]),  # one class
    }
    return labels, scores


def test_by_subgroup_stacks_one_sweep_per_group() -> None:
    labels, scores = _subgroups()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        frame = by_subgroup(labels, scores, "threshold", n_points=5)
    assert frame["group"].unique().tolist() == ["all", "phd", "professional"]
    assert frame.groupby("group")["n"].first().to_dict() == {"all": 40, "phd": 25, "professional": 15}
    defined = frame[frame["group"] != "professional"]
    assert not defined.drop(columns="group").isna().any().any()
    one_class = frame[frame["group"] == "professional"]
    assert one_class["auc_binary"].isna().all()  # one class: undefined at every threshold
    single = [str(w.message) for w in caught if issubclass(w.category, SingleClassWarning)]
    assert len(single) == 1 and single[0].startswith("group 'professional': ")
    messages = [str(w.message) for w in caught]
    assert len(messages) == len(set(messages))


def test_by_subgroup_epsilon_uses_one_tau_for_all_groups() -> None:
    labels, scores = _subgroups()
    alpha_cal = scores.to_numpy()[::-1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateMetricWarning)
        frame = by_subgroup(labels, scores, "epsilon", alpha_cal=alpha_cal, epsilons=[0.1, 0.2])
    assert frame.groupby("epsilon")["tau"].nunique().eq(1).all()
    assert len(frame) == 6


def test_by_subgroup_without_shared_programs_names_the_group() -> None:
    labels, scores = _subgroups()
    labels["nobody"] = pd.Series([1, 0], index=["x", "y"])
    with (
        pytest.raises(ValueError, match="labels\\['nobody'\\] shares no labelled program_id"),
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore", DegenerateMetricWarning)
        by_subgroup(labels, scores)
