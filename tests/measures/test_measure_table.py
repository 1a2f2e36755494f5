"""The measure table: AUC, Spearman and PRR of every measure.*/code.* column, point values equal
to scikit-learn's, SciPy's and the rejection curves', bootstrap intervals (PRR's too) and PRR's
permutation p, declared directions, missing values, constant columns and the rendered table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr
from sklearn.metrics import roc_auc_score

from mcu_exp.evaluation.measure_table import measure_table, render_measure_table
from mcu_exp.evaluation.rejection import prediction_rejection_ratio

N = 40


@pytest.fixture(scope="module")
def data() -> tuple[pd.DataFrame, pd.Series, pd.Series]:
    rng = np.random.default_rng(7)
    ids = [f"p{i}" for i in range(N)]
    labels = pd.Series(rng.integers(0, 2, N), index=ids, dtype=float)
    correctness = pd.Series(np.clip(labels * 0.3 + rng.random(N) * 0.7, 0, 1), index=ids)
    per_program = pd.DataFrame(
        {
            "score": rng.random(N),  # not a measure column: left out
            "measure.eigv": -(1.0 + rng.random(N) * 3 - labels),  # informative, beyond [0, 1]
            "measure.ssc": -rng.random(N).round(1),  # ties
            "code.loc": rng.integers(3, 60, N).astype(float),  # raw value, no sign flip
            "code.constant": np.ones(N),
        },
        index=ids,
    )
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
        if column == "code.constant":  # a constant ranks nothing: every value undefined
            assert row[["auc_score", "auc_score_ci_low", "spearman", "prr", "prr_ci_high", "prr_perm_p"]].isna().all()
            continue
        assert row["auc_score"] == pytest.approx(roc_auc_score(y, s), abs=1e-12)
        assert row["spearman"] == pytest.approx(spearmanr(s, c).statistic, abs=1e-12)
        assert row["prr"] == pytest.approx(prediction_rejection_ratio(y, s), abs=1e-12)
        for name in ("auc_score", "spearman", "prr"):
            assert row[f"{name}_ci_low"] <= row[name] <= row[f"{name}_ci_high"]
        assert 0 < row["prr_perm_p"] <= 1
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
    table = measure_table(
        per_program.assign(**{"measure.ecc": per_program["measure.eigv"]}),
        labels,
        correctness,
        resamples=1000,
        permutations=500,
    )
    text = render_measure_table(table)
    assert "measure.eigv" in text and "code.loc" in text and "AUC (score)" in text and "Spearman ρ" in text
    constant = next(line for line in text.splitlines() if "code.constant" in line)
    assert constant.count("undefined") == 7 and "0.500" not in constant  # AUC, ρ, PRR and their CIs, p
    flat = " ".join(text.split())  # the caption wraps where its words fall
    assert "1000 stratified bootstrap resamples" in flat and "500 permutations" in flat
    low, high = table.loc["measure.eigv", ["prr_ci_low", "prr_ci_high"]]
    eigv = next(line for line in text.splitlines() if "measure.eigv" in line)
    assert f"[{low:.3f}, {high:.3f}]" in eigv and f"{table.loc['measure.eigv', 'prr_perm_p']:.4f}" in eigv
    assert "Laplacian eigenvalues below 0.9" in " ".join(text.split())  # what Ecc is, in the caption
    assert "│ measure.ecc" not in text and "measure.ecc ≡ measure.eigv" in " ".join(text.split())  # a copy: folded
    rows = len(table) - 1
    assert f"unadjusted for multiplicity: a family of {rows} rows × 3 metrics = {3 * rows} intervals" in " ".join(
        text.split()
    )  # the family a reader scans, said in the caption


def test_prr_interval_and_permutation_p_mean_what_they_say() -> None:
    rng = np.random.default_rng(5)
    ids = [f"p{i}" for i in range(50)]
    labels = pd.Series([1.0] * 26 + [0.0] * 24, index=ids)
    null = pd.DataFrame({f"measure.null{i}": rng.random(50) for i in range(40)}, index=ids)
    table = measure_table(null, labels, None, resamples=1000, permutations=1000)
    # under the null a PRR's 95 % interval is about ±0.39 wide around it, and covers 0 in ~95 % of columns
    assert ((table["prr_ci_high"] - table["prr_ci_low"]) > 0.4).all()
    assert ((table["prr_ci_low"] <= 0) & (table["prr_ci_high"] >= 0)).mean() >= 0.85
    assert (table["prr_perm_p"] > 0.05).mean() >= 0.85
    strong = pd.DataFrame({"measure.good": labels + rng.normal(0, 0.3, 50)}, index=ids)
    row = measure_table(strong, labels, None, resamples=1000, permutations=1000).loc["measure.good"]
    assert row["prr"] > 0.5 and row["prr_ci_low"] > 0 and row["prr_perm_p"] == pytest.approx(1 / 1001)


def test_code_metrics_are_scored_in_their_declared_direction() -> None:
    rng = np.random.default_rng(6)
    ids = [f"p{i}" for i in range(30)]
    labels = pd.Series(rng.integers(0, 2, 30), index=ids, dtype=float)
    tokens = pd.Series(rng.integers(20, 400, 30), index=ids, dtype=float)
    table = measure_table(
        pd.DataFrame({"code.tokens": tokens, "dataset.tokens": tokens}), labels, None, resamples=1000, permutations=200
    )
    declared, raw = table.loc["code.tokens"], table.loc["dataset.tokens"]
    assert (declared["direction"], raw["direction"]) == ("-value", "value")
    assert declared["auc_score"] == pytest.approx(roc_auc_score(labels, -tokens), abs=1e-12)
    assert declared["auc_score"] == pytest.approx(1.0 - raw["auc_score"], abs=1e-12)  # 0.419 ↔ 0.581
    assert declared["spearman"] == pytest.approx(-raw["spearman"], abs=1e-12)
    assert declared["prr"] == pytest.approx(prediction_rejection_ratio(labels, -tokens), abs=1e-12)
    text = " ".join(render_measure_table(table).split())
    assert "code.*: scored as −value" in text and "higher = harder to understand" in text


def test_a_monotone_copy_of_an_earlier_row_is_folded_out_of_the_table_and_family(
    data: tuple[pd.DataFrame, pd.Series, pd.Series],
) -> None:
    per_program, labels, correctness = data
    m = 10
    copy = per_program.assign(**{"measure.deg": (1 - 1 / m) * (1 + per_program["measure.ssc"])})
    # a sum in another order: equal up to 1e-16, which must not break a tie in the ranks
    copy["measure.deg"] = copy["measure.deg"] + np.where(np.arange(N) % 2, 1e-16, 0.0)
    frame = measure_table(copy, labels, correctness, resamples=1000, permutations=500)
    assert frame.loc["measure.deg", "same_ranking_as"] == "measure.ssc"
    assert (frame.drop(index="measure.deg")["same_ranking_as"] == "").all()
    assert frame.loc["measure.deg", "auc_score"] == pytest.approx(frame.loc["measure.ssc", "auc_score"], abs=1e-12)
    text = " ".join(render_measure_table(frame).split())
    assert "│ measure.deg" not in render_measure_table(frame)
    assert "measure.deg ≡ measure.ssc" in text
    shown = len(frame) - 1
    assert f"a family of {shown} rows × 3 metrics = {3 * shown} intervals" in text
