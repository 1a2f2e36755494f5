"""Alignment between binary proxy labels and human labels, positive class = understandable.

Point metrics come from scikit-learn with ``zero_division=0``: a precision with no predicted
positives, or a recall with no actual positives, is 0 rather than undefined. AUC comes two
ways: ``auc_binary`` is the ROC AUC of the 0/1 predictions (what the paper reports; for
binary predictions it equals balanced accuracy), ``auc_score`` the ROC AUC of a continuous
score where higher means more understandable (e.g. ``-alpha_test``). When ``y_true`` has a
single class, ROC AUC is undefined; it is reported as 0.5 (no discrimination) by
convention. Every such degenerate case emits a :class:`DegenerateMetricWarning`.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np
from sklearn.metrics import (
    accuracy_score,
    confusion_matrix,
    f1_score,
    precision_score,
    recall_score,
    roc_auc_score,
)

ArrayLike = Sequence[float] | Sequence[int] | np.ndarray

RATE_METRICS = ("accuracy", "precision", "recall", "f1")
AUC_METRICS = ("auc_binary", "auc_score")
COUNT_METRICS = ("tn", "fp", "fn", "tp")
UNDEFINED_AUC = 0.5


class DegenerateMetricWarning(UserWarning):
    """A metric is undefined on these inputs and was given its conventional value."""


class SingleClassWarning(DegenerateMetricWarning):
    """``y_true`` holds one class only: recall or specificity and AUC are undefined."""


class ConstantPredictionWarning(DegenerateMetricWarning):
    """All predictions are equal: precision or the ROC curve is degenerate."""


def as_binary(values: ArrayLike, name: str) -> np.ndarray:
    """``values`` as a 1-D int array of 0/1, or a ValueError naming ``name``."""
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty: need at least one program")
    if arr.dtype == bool:
        return arr.astype(int)
    try:
        as_float = arr.astype(float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must hold 0/1 labels, got dtype {arr.dtype}") from exc
    bad = ~np.isin(as_float, (0.0, 1.0))
    if bad.any():
        raise ValueError(f"{name} must hold 0/1 labels, got {arr[bad][0].item()!r} at position "
                         f"{int(np.flatnonzero(bad)[0])}")
    return as_float.astype(int)


def as_score(values: ArrayLike, name: str, n: int) -> np.ndarray:
    """``values`` as a finite 1-D float array of length ``n``, or a ValueError."""
    arr = np.asarray(values, dtype=float)
    if arr.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},) like y_true, got {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} holds a non-finite value at position "
                         f"{int(np.flatnonzero(~np.isfinite(arr))[0])}")
    return arr


def check_pair(y_true: ArrayLike, y_pred: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Validated 0/1 arrays of equal length."""
    truth = as_binary(y_true, "y_true")
    pred = as_binary(y_pred, "y_pred")
    if truth.shape != pred.shape:
        raise ValueError(f"y_true and y_pred differ in length: {truth.size} vs {pred.size}")
    return truth, pred


def degeneracy_messages(truth: np.ndarray, pred: np.ndarray) -> list[tuple[type[Warning], str]]:
    """The degenerate cases of one (y_true, y_pred) pair, as (category, message)."""
    found: list[tuple[type[Warning], str]] = []
    if truth.min() == truth.max():
        found.append((SingleClassWarning,
                      f"y_true holds only class {int(truth[0])}: ROC AUC is undefined and "
                      f"reported as {UNDEFINED_AUC}; "
                      + ("recall is 0 by zero_division=0" if truth[0] == 0
                         else "specificity is undefined")))
    if pred.min() == pred.max():
        found.append((ConstantPredictionWarning,
                      f"y_pred is constant ({int(pred[0])} for every program): auc_binary is "
                      f"{UNDEFINED_AUC} (no discrimination)"
                      + ("; precision is 0 by zero_division=0" if pred[0] == 0 else "")))
    return found


def alignment_metrics(
    y_true: ArrayLike, y_pred: ArrayLike, score: ArrayLike | None = None
) -> dict[str, float]:
    """Accuracy, precision, recall, F1, AUCs and the confusion matrix of ``y_pred`` vs ``y_true``.

    ``auc_score`` is present only when ``score`` is given (higher = more understandable).
    Degenerate inputs get the conventional values of the module docstring and a warning.
    """
    truth, pred = check_pair(y_true, y_pred)
    n = truth.size
    values = None if score is None else as_score(score, "score", n)
    for category, message in degeneracy_messages(truth, pred):
        warnings.warn(message, category, stacklevel=2)
    single_class = truth.min() == truth.max()
    tn, fp, fn, tp = confusion_matrix(truth, pred, labels=[0, 1]).ravel()
    result = {
        "accuracy": float(accuracy_score(truth, pred)),
        "precision": float(precision_score(truth, pred, zero_division=0)),
        "recall": float(recall_score(truth, pred, zero_division=0)),
        "f1": float(f1_score(truth, pred, zero_division=0)),
        "auc_binary": UNDEFINED_AUC if single_class else float(roc_auc_score(truth, pred)),
    }
    if values is not None:
        result["auc_score"] = (UNDEFINED_AUC if single_class
                               else float(roc_auc_score(truth, values)))
    result.update({"tn": float(tn), "fp": float(fp), "fn": float(fn), "tp": float(tp),
                   "n": float(n), "prevalence": float(truth.mean())})
    return result


def safe_ratio(num: np.ndarray, den: np.ndarray, default: float) -> np.ndarray:
    """num / den elementwise, ``default`` where den is 0 (scikit-learn's zero_division)."""
    out = np.full(np.shape(num), default, dtype=float)
    np.divide(num, den, out=out, where=den > 0)
    return out


def batch_metrics(truth_rows: np.ndarray, pred_rows: np.ndarray) -> dict[str, np.ndarray]:
    """Accuracy, precision, recall, F1, ``auc_binary`` and positive rate of each row of two
    (rows, n) 0/1 matrices at once, with the conventions of :func:`alignment_metrics`.

    For 0/1 predictions the ROC curve has one inner point, so AUC = (1 + TPR − FPR) / 2.
    """
    t = np.asarray(truth_rows, dtype=np.int64)
    p = np.asarray(pred_rows, dtype=np.int64)
    n = t.shape[-1]
    tp = (t & p).sum(axis=-1)
    predicted = p.sum(axis=-1)
    fp = predicted - tp
    n_pos = t.sum(axis=-1)
    n_neg = n - n_pos
    tpr = safe_ratio(tp, n_pos, 0.0)
    fpr = safe_ratio(fp, n_neg, 0.0)
    return {
        "accuracy": (tp + n_neg - fp) / n,
        "precision": safe_ratio(tp, predicted, 0.0),
        "recall": tpr,
        "f1": safe_ratio(2 * tp, n_pos + predicted, 0.0),
        "auc_binary": np.where((n_pos > 0) & (n_neg > 0), 0.5 * (1.0 + tpr - fpr),
                               UNDEFINED_AUC),
        "positive_rate": predicted / n,
    }


@contextmanager
def unique_warnings(prefix: str = "") -> Iterator[list[str]]:
    """Collect the warnings raised inside the block and re-emit each distinct one once,
    with ``prefix`` (e.g. the subgroup) in front; for code that hits a case many times.

    Yields a list that holds, once the block ends, the distinct
    :class:`DegenerateMetricWarning` messages re-emitted; other warnings pass through.
    """
    emitted: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield emitted
    seen: set[tuple[type[Warning], str]] = set()
    for item in caught:
        if not issubclass(item.category, DegenerateMetricWarning):
            warnings.warn_explicit(item.message, item.category, item.filename, item.lineno)
            continue
        key = (item.category, prefix + str(item.message))
        if key not in seen:
            seen.add(key)
            emitted.append(key[1])
            warnings.warn(key[1], key[0], stacklevel=3)
