"""The measure table: AUC and Spearman of every measure.*/code.* column, point values equal to
scikit-learn's and SciPy's, bootstrap intervals, missing values and the rendered table."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr
from sklearn.metrics import roc_auc_score

from mcu_exp.evaluation.measure_table import measure_table, render_measure_table

N = 40


@pytest.fixture(scope="module")
def data() -> tuple[pd.DataFrame, pd.Series, pd.Series]:
    rng = np.random.default_rng(7)
    ids = [f"p{i}" for i in range(N)]
    labels = pd.Series(rng.integers(0, 2, N), index=ids, dtype=float)
    correctness = pd.Series(np.clip(labels * 0.3 + rng.random(N) * 0.7, 0, 1), index=ids)
    per_program = pd.DataFrame({
        "score": rng.random(N),  # not a measure column: left out
        "measure.eigv": -(1.0 + rng.random(N) * 3 - labels),  # informative, beyond [0, 1]
        "measure.ssc": -rng.random(N).round(1),  # ties
        "code.loc": rng.integers(3, 60, N).astype(float),  # raw value, no sign flip
        "code.constant": np.ones(N),
    }, index=ids)
    per_program.loc["p3", "code.loc"] = np.nan  # a program without the metric
    labels["p5"] = np.nan  # a program without a human label
    return per_program, labels, correctness


def test_point_values_equal_sklearn_and_scipy(data: tuple[pd.DataFrame, pd.Series, pd.Series]) -> None:
    per_program, labels, correctness = data
    table = measure_table(per_program, labels, correctness, resamples=1000, seed=3)
    assert list(table.index) == ["measure.eigv", "measure.ssc", "code.loc", "code.constant"]
    for column in table.index:
        keep = labels.notna() & per_program[column].notna()
        y, s, c = labels[keep].astype(int), per_program.loc[keep, column], correctness[keep]
        row = table.loc[column]
        assert row["n"] == keep.sum()
        assert row["spearman_vs"] == "correctness"
        if column == "code.constant":  # a constant ranks nothing: AUC 0.5, ρ undefined
            assert row["auc_score"] == pytest.approx(0.5) and math.isnan(row["spearman"])
            continue
        assert row["auc_score"] == pytest.approx(roc_auc_score(y, s), abs=1e-12)
        assert row["spearman"] == pytest.approx(spearmanr(s, c).statistic, abs=1e-12)
        for name in ("auc_score", "spearman"):
            assert row[f"{name}_ci_low"] <= row[name] <= row[f"{name}_ci_high"]
    assert table.loc["code.loc", "n"] == N - 2 and table.loc["measure.eigv", "n"] == N - 1


def test_without_correctness_rho_is_against_the_labels(data: tuple[pd.DataFrame, pd.Series, pd.Series]) -> None:
    per_program, labels, _ = data
    table = measure_table(per_program, labels, None, resamples=1000)
    keep = labels.notna()
    expected = spearmanr(per_program.loc[keep, "measure.eigv"], labels[keep]).statistic
    assert table.loc["measure.eigv", "spearman"] == pytest.approx(expected, abs=1e-12)
    assert set(table["spearman_vs"]) == {"labels"}


def test_seeded_and_undefined(data: tuple[pd.DataFrame, pd.Series, pd.Series]) -> None:
    per_program, labels, correctness = data
    first = measure_table(per_program, labels, correctness, resamples=1000, seed=1)
    pd.testing.assert_frame_equal(first, measure_table(per_program, labels, correctness, resamples=1000, seed=1))
    one_class = measure_table(per_program, labels.where(labels.isna(), 1.0), correctness, resamples=1000)
    assert one_class["auc_score"].isna().all() and one_class["auc_score_ci_low"].isna().all()
    nobody = measure_table(per_program.assign(**{"code.missing": np.nan}), labels, None, resamples=1000)
    assert nobody.loc["code.missing", "n"] == 0 and nobody.loc["code.missing"][["auc_score", "spearman"]].isna().all()
    with pytest.raises(ValueError, match="human_labels is empty"):
        measure_table(per_program, pd.Series(dtype=float), None, resamples=1000)
    with pytest.raises(ValueError, match="at least 1000"):
        measure_table(per_program, labels, resamples=10)


def test_render(data: tuple[pd.DataFrame, pd.Series, pd.Series]) -> None:
    per_program, labels, correctness = data
    text = render_measure_table(measure_table(per_program, labels, correctness, resamples=1000))
    assert "measure.eigv" in text and "code.loc" in text and "AUC (score)" in text and "Spearman ρ" in text
    assert "undefined" in text  # code.constant's ρ
    assert "1000 stratified bootstrap resamples" in text
