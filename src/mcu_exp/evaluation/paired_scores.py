"""One run's score side of a paired comparison, computed once per distinct score vector.

ΔAUC(score) and ΔPRR of a paired bootstrap are differences of two sides, AUC and PRR of run A's
score and of run B's on the same resampled rows, and the rows depend only on the human labels,
the number of resamples and the seed. A sweep over ε, the threshold or the reader group gives
every run the same score, so its report compared up to 45 pairs whose two sides were the same
numbers, each computed again. :func:`score_resamples` and :func:`score_point` keep each side
by the exact bytes of (labels, score) and the settings: a pair of equal scores computes one side
and subtracts it from itself (the paired difference is exactly 0 in every resample, NaN where
the side is undefined, as before), and the other pairs of the sweep read it back. Same inputs,
same operations: the numbers are bit for bit those of computing each side anew.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from typing import TypeVar

import numpy as np

from mcu_exp.evaluation.bootstrap import stratified_indices

_T = TypeVar("_T")
MAX_KEPT = 64  # sides kept per process (a few KB each), least recently used dropped first
CELLS_PER_CHUNK = 2_000_000  # resamples × n cells scored at once, as in bootstrap.py

_kept: OrderedDict[Hashable, object] = OrderedDict()


def resample_rows(truth: np.ndarray, resamples: int, seed: int) -> Iterator[np.ndarray]:
    """The stratified resample rows of a paired bootstrap, chunk by chunk ((rows, n) indices),
    drawn from ``seed``: the same rows for both runs and for every pair on these labels."""
    rng = np.random.default_rng(seed)
    chunk = max(1, CELLS_PER_CHUNK // truth.size)
    for start in range(0, resamples, chunk):
        yield stratified_indices(truth, min(chunk, resamples - start), rng)


def _remembered(key: Hashable, compute: Callable[[], _T]) -> _T:
    """``compute()`` once per ``key`` in this process (least recently used beyond MAX_KEPT dropped)."""
    if key in _kept:
        _kept.move_to_end(key)
        return _kept[key]  # type: ignore[return-value]
    value = compute()
    _kept[key] = value
    if len(_kept) > MAX_KEPT:
        _kept.popitem(last=False)
    return value


def _identity(truth: np.ndarray, score: np.ndarray) -> tuple[str, tuple[int, ...], bytes, str, bytes]:
    """The exact content of (labels, score): equal only for equal values, dtypes and shapes."""
    return truth.dtype.str, score.shape, truth.tobytes(), score.dtype.str, score.tobytes()


def score_resamples(
    truth: np.ndarray,
    score: np.ndarray,
    resamples: int,
    seed: int,
    auc: Callable[..., np.ndarray],
    prr: Callable[[np.ndarray, np.ndarray], np.ndarray],
) -> tuple[np.ndarray, np.ndarray]:
    """AUC(score) (the registry's ``auc``, called on a :class:`Ranking`) and PRR (``prr``, on
    the resampled scores and labels) of one run in each row of :func:`resample_rows`; computed
    once per distinct (labels, score, resamples, seed, functions)."""
    from mcu_exp.evaluation.registry import Ranking

    def compute() -> tuple[np.ndarray, np.ndarray]:
        aucs, prrs = [], []
        for idx in resample_rows(truth, resamples, seed):
            rows = truth[idx]
            aucs.append(np.asarray(auc(Ranking(score, idx, rows))))
            prrs.append(prr(score[idx], rows))
        both = np.concatenate(aucs), np.concatenate(prrs)
        for values in both:
            values.setflags(write=False)  # shared by every pair that reads it back
        return both

    return _remembered(("resamples", *_identity(truth, score), resamples, seed, auc, prr), compute)


def score_point(truth: np.ndarray, score: np.ndarray, name: str, compute: Callable[[], float]) -> float:
    """One run's point value ``name`` (AUC, PRR) on all programs, ``compute()`` once per
    distinct (labels, score)."""
    return _remembered(("point", name, *_identity(truth, score)), compute)
