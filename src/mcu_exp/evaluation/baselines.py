"""Trivial labellers every alignment figure must beat: "always understandable" and a
prevalence-matched random labeller.

Both need only the human labels. A labeller with no score has no ranking, so both are given
``auc_score`` = 0.5 (a constant score, or one independent of the truth, ranks at chance).
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy import stats

from mcu_exp.evaluation.metrics import (
    UNDEFINED_AUC,
    ArrayLike,
    ConstantPredictionWarning,
    alignment_metrics,
    as_binary,
)


def always_positive(y_true: ArrayLike) -> dict[str, float]:
    """Metrics of predicting 1 (understandable) for every program.

    With prevalence p: accuracy = precision = p, recall = 1, F1 = 2p / (1 + p), AUC = 0.5.
    """
    truth = as_binary(y_true, "y_true")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstantPredictionWarning)
        result = alignment_metrics(truth, np.ones_like(truth))
    result["auc_score"] = UNDEFINED_AUC
    return result


def random_expected(y_true: ArrayLike) -> dict[str, float]:
    """Expected metrics of labelling each program 1 with probability p = prevalence,
    independently of the truth (n programs, n₊ = n·p positives, n₋ negatives).

    The number of predicted positives is K ~ Binomial(n, p), and given K = k the true
    positives are TP ~ Hypergeometric(n, n₊, k), so E[TP | k] = k·p. Hence, exactly:

    - E[TP] = n₊p, E[FP] = n₋p, E[FN] = n₊(1 − p), E[TN] = n₋(1 − p);
    - accuracy: p² + (1 − p)²;  recall: p (0 when n₊ = 0, by zero_division);
    - precision: Σₖ P(K = k)·E[TP | k]/k = p·(1 − (1 − p)ⁿ) (0 when K = 0);
    - F1 = 2TP / (n₊ + K), linear in TP given k: E[F1] = Σₖ P(K = k)·2kp / (n₊ + k),
      computed with scipy.stats' binomial and hypergeometric laws. For large n, K ≈ np and
      E[F1] → 2p·np / (2np) = p;
    - auc_binary: E[(1 + TPR − FPR)/2] = 0.5, as is auc_score.
    """
    truth = as_binary(y_true, "y_true")
    n = truth.size
    n_pos = int(truth.sum())
    n_neg = n - n_pos
    p = n_pos / n
    k = np.arange(n + 1)
    p_k = stats.binom.pmf(k, n, p)
    with np.errstate(divide="ignore", invalid="ignore"):  # scipy also computes the kurtosis,
        tp_given_k = stats.hypergeom.mean(n, n_pos, k)     # which divides by 0 at k = 0, n
    f1_given_k = np.divide(2.0 * tp_given_k, n_pos + k, out=np.zeros(n + 1), where=n_pos + k > 0)
    precision_given_k = np.divide(tp_given_k, k, out=np.zeros(n + 1), where=k > 0)
    return {
        "accuracy": p * p + (1.0 - p) ** 2,
        "precision": float(np.sum(p_k * precision_given_k)),
        "recall": p if n_pos else 0.0,
        "f1": float(np.sum(p_k * f1_given_k)),
        "auc_binary": UNDEFINED_AUC,
        "auc_score": UNDEFINED_AUC,
        "tn": n_neg * (1.0 - p),
        "fp": n_neg * p,
        "fn": n_pos * (1.0 - p),
        "tp": n_pos * p,
        "n": float(n),
        "prevalence": p,
    }
