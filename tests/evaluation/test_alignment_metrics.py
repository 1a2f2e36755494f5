"""Point alignment metrics: agreement with scikit-learn, degenerate inputs, bad input."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from sklearn.metrics import (
    accuracy_score,
    confusion_matrix,
    f1_score,
    matthews_corrcoef,
    precision_score,
    recall_score,
    roc_auc_score,
)

from mcu_exp.evaluation import (
    ConstantPredictionWarning,
    SingleClassWarning,
    alignment_metrics,
    batch_metrics,
)
from mcu_exp.evaluation.metrics import unique_warnings


def _random_case(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(10, 200))
    y = rng.integers(0, 2, n)
    y[:2] = [0, 1]  # both classes
    pred = np.where(rng.random(n) < 0.7, y, 1 - y)
    score = np.round(y + rng.normal(0.0, 1.0, n), 1)  # rounding makes ties
    return y, pred, score


@pytest.mark.parametrize("seed", range(8))
def test_metrics_equal_sklearn(seed: int) -> None:
    y, pred, score = _random_case(seed)
    got = alignment_metrics(y, pred, score)
    tn, fp, fn, tp = confusion_matrix(y, pred).ravel()
    expected = {
        "accuracy": accuracy_score(y, pred),
        "precision": precision_score(y, pred),
        "recall": recall_score(y, pred),
        "f1": f1_score(y, pred),
        "auc_binary": roc_auc_score(y, pred),
        "auc_score": roc_auc_score(y, score),
        "mcc": matthews_corrcoef(y, pred),
        "tn": tn,
        "fp": fp,
        "fn": fn,
        "tp": tp,
        "n": len(y),
        "prevalence": y.mean(),
    }
    assert got.keys() == expected.keys()
    for key, value in expected.items():
        assert got[key] == pytest.approx(float(value), abs=1e-12), key


def test_auc_score_absent_without_score() -> None:
    y, pred, _ = _random_case(0)
    assert "auc_score" not in alignment_metrics(y, pred)


def test_batch_metrics_match_row_by_row() -> None:
    rng = np.random.default_rng(3)
    truth = rng.integers(0, 2, (20, 37))
    pred = rng.integers(0, 2, (20, 37))
    pred[0] = 0  # a constant row: precision undefined
    batch = batch_metrics(truth, pred)
    for row in range(truth.shape[0]):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConstantPredictionWarning)
            single = alignment_metrics(truth[row], pred[row])
        for key in ("accuracy", "precision", "recall", "f1", "auc_binary"):
            assert batch[key][row] == pytest.approx(single[key], abs=1e-12, nan_ok=True), (row, key)
        assert batch["positive_rate"][row] == pytest.approx(pred[row].mean())
    assert math.isnan(batch["precision"][0])


def test_single_class_truth_leaves_both_aucs_undefined_and_warns() -> None:
    y = np.ones(12, dtype=int)
    pred = np.array([1, 0] * 6)
    with pytest.warns(SingleClassWarning, match="only class 1: ROC AUC is undefined"):
        got = alignment_metrics(y, pred, score=np.linspace(0, 1, 12))
    assert math.isnan(got["auc_binary"]) and math.isnan(got["auc_score"])  # not 0.5
    assert got["recall"] == pytest.approx(0.5) and got["precision"] == 1.0


def test_no_positive_truth_leaves_recall_undefined() -> None:
    with pytest.warns(SingleClassWarning, match="only class 0.*recall is undefined"):
        got = alignment_metrics(np.zeros(6, dtype=int), [0, 1, 0, 1, 0, 0])
    assert math.isnan(got["recall"]) and math.isnan(got["auc_binary"])
    assert got["f1"] == 0.0 and got["precision"] == 0.0  # 2 predicted, none right: defined
    assert got["accuracy"] == pytest.approx(4 / 6)


def test_constant_predictions_leave_precision_undefined_and_warn() -> None:
    y = np.array([0, 1, 1, 0, 1])
    with pytest.warns(ConstantPredictionWarning, match="precision is undefined"):
        got = alignment_metrics(y, np.zeros(5, dtype=int))
    assert math.isnan(got["precision"])
    assert (got["recall"], got["f1"], got["auc_binary"]) == (0.0, 0.0, 0.5)


def test_nothing_present_nor_predicted_leaves_f1_undefined() -> None:
    with pytest.warns(SingleClassWarning):
        got = alignment_metrics(np.zeros(4, dtype=int), np.zeros(4, dtype=int))
    assert all(math.isnan(got[name]) for name in ("precision", "recall", "f1", "auc_binary"))
    assert got["accuracy"] == 1.0


def test_accepts_booleans() -> None:
    y, pred, _ = _random_case(1)
    assert alignment_metrics(y.astype(bool), pred.astype(bool)) == alignment_metrics(y, pred)


@pytest.mark.parametrize(
    ("y", "pred", "score", "match"),
    [
        ([0, 1, 2], [0, 1, 1], None, "y_true must hold 0/1 labels, got 2 at position 2"),
        ([0, 1, 1], [0, 1], None, "differ in length"),
        ([], [], None, "y_true is empty"),
        ([0, 1, 1], [0, 1, 1], [0.1, float("nan"), 0.3], "score holds a non-finite value at po"),
        ([0, 1, 1], [0, 1, 1], [0.1, 0.2], r"score must have shape \(3,\)"),
    ],
)
def test_bad_input_raises_clear_error(y: list, pred: list, score: list | None, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        alignment_metrics(y, pred, score)


def test_unique_warnings_emits_each_message_once_with_prefix() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with unique_warnings(prefix="g: ") as messages:
            for _ in range(5):
                warnings.warn("same", ConstantPredictionWarning, stacklevel=2)
            warnings.warn("other", SingleClassWarning, stacklevel=2)
    assert [str(w.message) for w in caught] == ["g: same", "g: other"]
    assert messages == ["g: same", "g: other"]
