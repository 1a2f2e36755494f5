"""Trivial labellers every alignment figure must beat: "always understandable" and a
prevalence-matched random labeller.

Both need only the human labels. "Always understandable" is scored with every registered
metric's own implementation; a labeller with no score has no ranking, so score metrics are
computed on a constant score (``auc_score`` = 0.5: a constant score ranks at chance; a rank
correlation with a constant is undefined). The
random labeller's expected values are each metric's closed form (``Metric.random``, derived
in :mod:`mcu_exp.evaluation.definitions`); a metric without one has no random baseline.
"""

from __future__ import annotations

import warnings

import numpy as np

from mcu_exp.evaluation.metrics import (
    ArrayLike,
    ConstantPredictionWarning,
    alignment_metrics,
    as_binary,
)
from mcu_exp.evaluation.registry import RandomLabeller, Ranking, registered

ALWAYS = "always_positive"  # the baselines' names in a report
RANDOM = "random_expected"


def always_positive(y_true: ArrayLike, human: ArrayLike | None = None) -> dict[str, float]:
    """Metrics of predicting 1 (understandable) for every program.

    With prevalence p: accuracy = precision = p, recall = 1, F1 = 2p / (1 + p), AUC = 0.5
    (undefined when the truth has one class); correlations with ``human`` are undefined.
    """
    truth = as_binary(y_true, "y_true")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstantPredictionWarning)
        result = alignment_metrics(truth, np.ones_like(truth))
    values = None if human is None else np.asarray(human, dtype=float)
    constant = Ranking.single(np.zeros(truth.size), truth, values)
    for m in registered(score=True):
        if values is not None or not m.uses_human:
            result[m.name] = float(m.compute(constant)[0])  # type: ignore[arg-type]
    return result


def random_expected(y_true: ArrayLike) -> dict[str, float]:
    """Expected metrics of labelling each program 1 with probability p = prevalence,
    independently of the truth: each registered metric's closed form (see
    :mod:`mcu_exp.evaluation.definitions`), then ``n`` and ``prevalence``."""
    truth = as_binary(y_true, "y_true")
    labeller = RandomLabeller(n=truth.size, n_pos=int(truth.sum()))
    result = {m.name: float(m.random(labeller)) for m in registered() if m.random is not None}
    result.update({"n": float(labeller.n), "prevalence": labeller.p})
    return result
