"""Alignment between binary proxy labels and human labels, positive class = understandable.

Every metric comes from :mod:`mcu_exp.evaluation.registry`: one vectorised implementation
from the confusion counts (or the score), with the conventions of
:mod:`mcu_exp.evaluation.definitions`. AUC comes two ways: ``auc_binary`` is the ROC AUC of
the 0/1 predictions (what the paper reports; for binary predictions it equals balanced
accuracy), ``auc_score`` the ROC AUC of a continuous score where higher means more
understandable (e.g. ``-alpha_test``). A metric whose denominator is zero (a precision with
no predicted positive, a recall or an AUC when ``y_true`` lacks a class) is undefined: it is
NaN, shown as "undefined", and every such case emits a :class:`DegenerateMetricWarning`.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np

from mcu_exp.evaluation.registry import (
    INTERVAL_KINDS,
    Counts,
    Ranking,
    compute,
    metric,
)

ArrayLike = Sequence[float] | Sequence[int] | np.ndarray


class DegenerateMetricWarning(UserWarning):
    """A metric is undefined (NaN) or degenerate on these inputs."""


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
        raise ValueError(
            f"{name} must hold 0/1 labels, got {arr[bad][0].item()!r} at position {int(np.flatnonzero(bad)[0])}"
        )
    return as_float.astype(int)


def as_score(values: ArrayLike, name: str, n: int) -> np.ndarray:
    """``values`` as a finite 1-D float array of length ``n``, or a ValueError."""
    arr = np.asarray(values, dtype=float)
    if arr.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},) like y_true, got {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} holds a non-finite value at position {int(np.flatnonzero(~np.isfinite(arr))[0])}")
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
        found.append(
            (
                SingleClassWarning,
                f"the reference labels hold only class {int(truth[0])}: ROC AUC is undefined"
                + ("; recall is undefined" if truth[0] == 0 else ""),
            )
        )
    if pred.min() == pred.max():
        found.append(
            (
                ConstantPredictionWarning,
                f"the proxy gives every program label {int(pred[0])}: auc_binary is at most "
                "chance (0.5)" + ("; precision is undefined" if pred[0] == 0 else ""),
            )
        )
    return found


def alignment_metrics(
    y_true: ArrayLike, y_pred: ArrayLike, score: ArrayLike | None = None, human: ArrayLike | None = None
) -> dict[str, float]:
    """Every registered metric of ``y_pred`` vs ``y_true`` (rates, AUCs, correlations, the
    confusion counts), then ``n`` and ``prevalence``.

    Score metrics such as ``auc_score`` are present only when ``score`` is given (higher =
    more understandable), correlations with the humans only when ``human`` (their continuous
    per-program value, e.g. mean correctness) is given too. Undefined metrics are NaN, with a
    warning.
    """
    truth, pred = check_pair(y_true, y_pred)
    n = truth.size
    values = None if score is None else as_score(score, "score", n)
    continuous = None if human is None or values is None else as_score(human, "human", n)
    for category, message in degeneracy_messages(truth, pred):
        warnings.warn(message, category, stacklevel=2)
    ranking = None if values is None else Ranking.single(values, truth, continuous)
    result = {
        name: float(value[0]) for name, value in compute(Counts.from_labels(truth[None], pred[None]), ranking).items()
    }
    result.update({"n": float(n), "prevalence": float(truth.mean())})
    return result


def label_metric(name: str, y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Registered label metric ``name`` of one labelling, unchecked and without warnings
    (for hot loops such as a tuning objective; inputs are 0/1 arrays of equal length)."""
    return float(metric(name).compute(Counts.from_labels(y_true, y_pred)))  # type: ignore[arg-type]


def batch_metrics(truth_rows: np.ndarray, pred_rows: np.ndarray) -> dict[str, np.ndarray]:
    """Every registered label rate and AUC (not the counts, not score metrics) and the
    positive rate of each row of two (rows, n) 0/1 matrices at once, with the conventions
    of :func:`alignment_metrics`."""
    counts = Counts.from_labels(truth_rows, pred_rows)
    out = compute(counts, kinds=INTERVAL_KINDS)
    out["positive_rate"] = counts.predicted / np.shape(pred_rows)[-1]
    return out


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
