"""Prediction rejection curves and PRR on hand-made examples, and against lm-polygraph's formula."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from mcu_exp.evaluation.rejection import prediction_rejection, prediction_rejection_ratio, rejection_curves


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
    values = [prediction_rejection_ratio(quality, np.array(perm, dtype=float))
              for perm in itertools.permutations(range(6))]
    assert np.mean(values) == pytest.approx(0.0, abs=1e-12)  # every order equally likely: exactly 0


def test_ties_are_the_expectation_over_random_tie_breaking() -> None:
    quality = np.array([1, 0, 1, 0, 1])
    score = np.array([2.0, 2.0, 1.0, 1.0, 0.0])
    tied = prediction_rejection(quality, score)
    orders = [np.array(p) for p in itertools.permutations(range(5))
              if all(score[p[i]] >= score[p[i + 1]] for i in range(4))]  # every tie-breaking order
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
