"""Whether a score separates the human classes better than chance: a permutation test.

Under the null hypothesis the score carries no information about the human label, so every
assignment of the observed labels to the programs is equally likely. The p-value is the
share of label permutations whose AUC(score) lies at least as far from 0.5 as the observed
one (two-sided), with the observed assignment counted among them, (1 + b) / (1 + B), so it
is never 0 and is valid for any number of permutations B. All permutations are scored at
once with the registry's rank-sum AUC. :func:`permuted_labels` hands the same relabellings
to other statistics (the PRR's test, :func:`mcu_exp.evaluation.rejection.prr_permutation_p`).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from mcu_exp.evaluation.metrics import ArrayLike, as_binary, as_score
from mcu_exp.evaluation.registry import CHANCE_AUC, Ranking, metric

MIN_PERMUTATIONS = 100
_ROWS_PER_CHUNK = 2_000
_TIE_SLACK = 1e-12  # a permuted AUC equal to the observed one up to rounding counts as extreme


def permuted_labels(truth: np.ndarray, permutations: int, seed: int) -> Iterator[np.ndarray]:
    """The ``permutations`` random relabellings of ``truth`` as (rows, n) chunks, from the
    permutation test's own stream (apart from the bootstrap's)."""
    if permutations < MIN_PERMUTATIONS:
        raise ValueError(f"evaluation.permutations must be at least {MIN_PERMUTATIONS}, got {permutations}")
    rng = np.random.default_rng([int(seed), 0x5045524D])
    for start in range(0, permutations, _ROWS_PER_CHUNK):
        rows = min(_ROWS_PER_CHUNK, permutations - start)
        yield rng.permuted(np.broadcast_to(truth, (rows, truth.size)), axis=1)


def auc_permutation_p(y_true: ArrayLike, score: ArrayLike, permutations: int = 10_000, seed: int = 0) -> float:
    """Two-sided permutation p-value of AUC(score) against 0.5 (NaN when ``y_true`` has one class)."""
    if permutations < MIN_PERMUTATIONS:
        raise ValueError(f"evaluation.permutations must be at least {MIN_PERMUTATIONS}, got {permutations}")
    truth = as_binary(y_true, "y_true")
    values = as_score(score, "score", truth.size)
    if truth.min() == truth.max():
        return float("nan")
    auc = metric("auc_score").compute
    observed = abs(float(auc(Ranking.single(values, truth))[0]) - CHANCE_AUC)  # type: ignore[arg-type]
    extreme = 0
    for shuffled in permuted_labels(truth, permutations, seed):
        indices = np.broadcast_to(np.arange(truth.size), shuffled.shape)
        permuted = np.asarray(auc(Ranking(values, indices, shuffled)))  # type: ignore[arg-type]
        extreme += int(np.sum(np.abs(permuted - CHANCE_AUC) >= observed - _TIE_SLACK))
    return (1 + extreme) / (1 + permutations)
