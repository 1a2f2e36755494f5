"""Prediction rejection curves and PRR on hand-made examples, and against lm-polygraph's formula."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mcu_exp.config import EvaluationConfig
from mcu_exp.data import HumanLabels
from mcu_exp.evaluation.rejection import (
    prediction_rejection,
    prediction_rejection_ratio,
    prr_many,
    prr_permutation_p,
    rejection_curves,
)
from mcu_exp.job.measures import write_rejection
from mcu_exp.proxies.base import ProxyOutcome


def polygraph_area(quality: np.ndarray, score: np.ndarray) -> float:
    """lm-polygraph's area: mean quality of the n − k most confident, averaged over k."""
    n = quality.size
    return float(np.mean(np.flip(np.cumsum(quality[np.argsort(-score)]) / np.arange(1, n + 1))))


def test_curves_by_hand() -> None:
    # scores rank p0 > p1 > p2 > p3; humans understood p0 and p2
    curves = rejection_curves([1, 0, 1, 0], [4.0, 3.0, 2.0, 1.0])
    assert curves["rejection_rate"].tolist() == [0, 0.25, 0.5, 0.75]
    assert curves["proxy"].tolist() == pytest.approx([2 / 4, 2 / 3, 1 / 2, 1 / 1])  # reject p3, then p2, p1
    assert curves["random"].tolist() == [0.5] * 4
    assert curves["oracle"].tolist() == pytest.approx([2 / 4, 2 / 3, 1, 1])
    assert math.isnan(curves["low_among_rejected"][0])
    assert curves["low_among_rejected"].tolist()[1:] == pytest.approx([1, 1 / 2, 2 / 3])
    got = prediction_rejection([1, 0, 1, 0], [4.0, 3.0, 2.0, 1.0])
    expected = (np.mean([1 / 2, 2 / 3, 1 / 2, 1]) - 0.5) / (np.mean([1 / 2, 2 / 3, 1, 1]) - 0.5)
    assert got.prr == pytest.approx(expected)


def test_perfect_reversed_and_constant_rankings() -> None:
    quality = np.array([1, 1, 1, 0, 0, 0])
    assert prediction_rejection_ratio(quality, [6, 5, 4, 3, 2, 1]) == pytest.approx(1.0)
    assert prediction_rejection_ratio(quality, [1, 2, 3, 4, 5, 6]) == pytest.approx(-1.0)  # balanced: exactly −1
    assert prediction_rejection_ratio(quality, np.zeros(6)) == 0.0  # ties: the random curve
    unbalanced = np.array([1, 1, 1, 1, 0])
    assert prediction_rejection_ratio(unbalanced, [5, 4, 3, 2, 1]) == pytest.approx(1.0)
    assert prediction_rejection_ratio(unbalanced, [1, 2, 3, 4, 5]) < -0.5


def test_random_rankings_average_to_zero() -> None:
    quality = np.array([1, 0, 1, 1, 0, 1])
    values = [
        prediction_rejection_ratio(quality, np.array(perm, dtype=float)) for perm in itertools.permutations(range(6))
    ]
    assert np.mean(values) == pytest.approx(0.0, abs=1e-12)  # every order equally likely: exactly 0


def test_ties_are_the_expectation_over_random_tie_breaking() -> None:
    quality = np.array([1, 0, 1, 0, 1])
    score = np.array([2.0, 2.0, 1.0, 1.0, 0.0])
    tied = prediction_rejection(quality, score)
    orders = [
        np.array(p) for p in itertools.permutations(range(5)) if all(score[p[i]] >= score[p[i + 1]] for i in range(4))
    ]  # every tie-breaking order
    broken = np.mean([prediction_rejection(quality, -np.argsort(o).astype(float)).area_proxy for o in orders])
    assert tied.area_proxy == pytest.approx(broken)


def test_agrees_with_lm_polygraph_and_continuous_quality() -> None:
    rng = np.random.default_rng(0)
    quality = rng.uniform(0, 1, 30)
    score = quality + rng.normal(0, 0.3, 30)
    got = prediction_rejection(quality, score)
    assert got.area_proxy == pytest.approx(polygraph_area(quality, score))
    assert got.area_oracle == pytest.approx(polygraph_area(quality, quality))
    assert got.prr == pytest.approx((got.area_proxy - quality.mean()) / (got.area_oracle - quality.mean()))
    assert 0 < got.prr < 1


def test_one_class_is_undefined_and_bad_input_refused() -> None:
    assert math.isnan(prediction_rejection_ratio([1, 1, 1], [0.1, 0.2, 0.3]))
    with pytest.raises(ValueError, match="in \\[0, 1\\]"):
        rejection_curves([2, 0], [0.1, 0.2])
    with pytest.raises(ValueError, match="non-finite"):
        rejection_curves([1, 0], [np.nan, 0.2])


def test_many_rows_at_once_equal_one_at_a_time() -> None:
    rng = np.random.default_rng(1)
    for n in (2, 7, 50):
        score = rng.integers(0, 4, (40, n)).astype(float)  # many ties
        quality = rng.integers(0, 2, (40, n)).astype(float)
        quality[0] = 1.0  # one class: undefined
        expected = [prediction_rejection_ratio(q, s) for q, s in zip(quality, score)]
        np.testing.assert_allclose(prr_many(score, quality), expected, atol=1e-12)
        continuous = rng.random((5, n)), rng.random((5, n))
        np.testing.assert_allclose(
            prr_many(*continuous), [prediction_rejection_ratio(q, s) for s, q in zip(*continuous)], atol=1e-12
        )


def test_permutation_p_is_exact_on_a_small_case() -> None:
    labels = np.array([1, 1, 0, 1, 0, 0])
    score = np.array([6.0, 5.0, 4.0, 3.0, 2.0, 1.0])
    observed = abs(prediction_rejection_ratio(labels, score))
    every = [prediction_rejection_ratio(np.array(p), score) for p in set(itertools.permutations(labels))]
    exact = np.mean(np.abs(every) >= observed - 1e-12)
    assert prr_permutation_p(labels, score, permutations=20_000, seed=1) == pytest.approx(exact, abs=0.01)
    assert math.isnan(prr_permutation_p([1, 1, 1], [0.1, 0.2, 0.3], permutations=100))


def test_the_runs_prr_metric_comes_with_its_interval_and_p(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    ids = pd.Index([f"p{i}" for i in range(50)], name="program_id")
    truth = pd.Series([1] * 26 + [0] * 24, index=ids)
    score = truth + rng.normal(0, 1.5, 50)
    outcome = ProxyOutcome(table=pd.DataFrame({"label": truth, "score": score}, index=ids))
    labels = HumanLabels(
        labels=truth,
        fraction=truth.astype(float),
        n_evaluators=pd.Series(9, index=ids),
        dropped=[],
        group="all",
        correctness=truth.astype(float),
    )
    ev = EvaluationConfig(bootstrap_resamples=1000, permutations=500, plots=False)
    found = write_rejection(outcome, labels, tmp_path, ev)
    assert found is not None and set(found) == {"prr", "prr_ci_low", "prr_ci_high", "prr_perm_p"}
    assert found["prr"] == pytest.approx(prediction_rejection_ratio(truth, score))
    assert found["prr_ci_low"] < found["prr"] < found["prr_ci_high"]
    assert found["prr_ci_high"] - found["prr_ci_low"] > 0.2  # 50 programs: a wide interval, now printed
    assert found["prr_perm_p"] == pytest.approx(prr_permutation_p(truth, score, 500, 0))
    assert (tmp_path / "rejection.csv").exists()
