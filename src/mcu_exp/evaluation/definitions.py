"""The built-in alignment metrics, positive class = understandable, with their conventions.

Label metrics, from the confusion counts (tp, fp, fn, tn) of any shape, each equal to
scikit-learn's with ``zero_division=0`` (a precision with no predicted positives, or a
recall with no actual positives, is 0 rather than undefined):

- accuracy = (tp + tn) / n; precision = tp / (tp + fp); recall = tp / (tp + fn);
- F1 = 2tp / (2tp + fp + fn);
- ``auc_binary``, the ROC AUC of the 0/1 predictions (what the paper reports): their ROC
  curve has one inner point (FPR, TPR), so AUC = (1 + TPR − FPR) / 2, which equals
  balanced accuracy (scikit-learn sums the two trapezoids instead, which can differ from
  this in the last bit);
- the counts tn, fp, fn, tp themselves.

``auc_score`` is the ROC AUC of a continuous score (higher = more understandable, e.g.
``-alpha_test``), in the rank-sum (Mann–Whitney) form with mid-ranks for ties:
(rank sum of the positives − n₊(n₊+1)/2) / (n₊n₋). This equals scikit-learn's
``roc_auc_score`` (the numerator is exact, so the value is the correctly rounded U/(n₊n₋);
scikit-learn's trapezoid sum can be off in the last bit). When the truth has a single class,
ROC AUC is undefined; both AUCs are then 0.5 (no discrimination) by convention.

Expected values under the prevalence-matched random labeller (n programs, n₊ = n·p
positives, n₋ negatives; K ~ Binomial(n, p) predicted positives, E[TP | k] = k·p), exactly:

- E[TP] = n₊p, E[FP] = n₋p, E[FN] = n₊(1 − p), E[TN] = n₋(1 − p);
- accuracy: p² + (1 − p)²;  recall: p (0 when n₊ = 0, by zero_division);
- precision: Σₖ P(K = k)·E[TP | k]/k = p·(1 − (1 − p)ⁿ) (0 when K = 0);
- F1 = 2TP / (n₊ + K), linear in TP given k: E[F1] = Σₖ P(K = k)·2kp / (n₊ + k),
  computed with scipy.stats' binomial and hypergeometric laws. For large n, K ≈ np and
  E[F1] → 2p·np / (2np) = p;
- auc_binary: E[(1 + TPR − FPR)/2] = 0.5, as is auc_score (a score independent of the
  truth ranks at chance).
"""

from __future__ import annotations

import numpy as np

from mcu_exp.evaluation.registry import (
    UNDEFINED_AUC,
    Counts,
    RandomLabeller,
    Ranking,
    register,
    safe_ratio,
)


def _precision_random(r: RandomLabeller) -> float:
    given_k = np.divide(r.tp_given_k, r.k, out=np.zeros(r.n + 1), where=r.k > 0)
    return float(np.sum(r.p_k * given_k))


def _f1_random(r: RandomLabeller) -> float:
    given_k = np.divide(2.0 * r.tp_given_k, r.n_pos + r.k, out=np.zeros(r.n + 1), where=r.n_pos + r.k > 0)
    return float(np.sum(r.p_k * given_k))


@register("accuracy", kind="rate", series=False, random=lambda r: r.p * r.p + (1.0 - r.p) ** 2)
def accuracy(c: Counts) -> np.ndarray:
    """Fraction of programs labelled as the humans did."""
    return (c.tp + c.tn) / c.n


@register("precision", kind="rate", random=_precision_random)
def precision(c: Counts) -> np.ndarray:
    """Fraction of the programs labelled understandable that are (0 when none is labelled)."""
    return safe_ratio(c.tp, c.predicted, 0.0)


@register("recall", kind="rate", random=lambda r: r.p if r.n_pos else 0.0)
def recall(c: Counts) -> np.ndarray:
    """Fraction of the understandable programs labelled so (0 when there are none)."""
    return safe_ratio(c.tp, c.n_pos, 0.0)


@register("f1", header="F1", kind="rate", random=_f1_random)
def f1(c: Counts) -> np.ndarray:
    """Harmonic mean of precision and recall, 2tp / (2tp + fp + fn) (0 when tp = 0)."""
    return safe_ratio(2 * c.tp, c.n_pos + c.predicted, 0.0)


@register("auc_binary", header="AUC (labels)", short="AUC", kind="auc", random=lambda r: UNDEFINED_AUC)
def auc_binary(c: Counts) -> np.ndarray:
    """ROC AUC of the 0/1 labels (0.5 when the truth has one class)."""
    n_pos, n_neg = c.n_pos, c.n_neg
    tpr = safe_ratio(c.tp, n_pos, 0.0)
    fpr = safe_ratio(c.fp, n_neg, 0.0)
    return np.where((n_pos > 0) & (n_neg > 0), 0.5 * (1.0 + tpr - fpr), UNDEFINED_AUC)


@register("auc_score", header="AUC (score)", kind="auc", uses_score=True, random=lambda r: UNDEFINED_AUC)
def auc_score(r: Ranking) -> np.ndarray:
    """ROC AUC of the score on each row, by rank sums with mid-ranks (0.5 for one class)."""
    uniques, codes = np.unique(r.score, return_inverse=True)
    m = uniques.size
    rows = r.indices.shape[0]
    flat = (codes[r.indices] + m * np.arange(rows)[:, None]).ravel()
    total = np.bincount(flat, minlength=rows * m).reshape(rows, m)
    positives = np.bincount(flat, weights=r.truth.ravel(), minlength=rows * m).reshape(rows, m)
    n_pos = r.truth.sum(axis=1)
    n_neg = r.indices.shape[1] - n_pos
    midrank = np.cumsum(total, axis=1) - total + (total + 1) / 2.0
    u_stat = (positives * midrank).sum(axis=1) - n_pos * (n_pos + 1) / 2.0
    return safe_ratio(u_stat, n_pos * n_neg, UNDEFINED_AUC)


@register("tn", kind="count", random=lambda r: r.n_neg * (1.0 - r.p))
def tn(c: Counts) -> np.ndarray:
    """True negatives."""
    return c.tn


@register("fp", kind="count", random=lambda r: r.n_neg * r.p)
def fp(c: Counts) -> np.ndarray:
    """False positives."""
    return c.fp


@register("fn", kind="count", random=lambda r: r.n_pos * (1.0 - r.p))
def fn(c: Counts) -> np.ndarray:
    """False negatives."""
    return c.fn


@register("tp", kind="count", random=lambda r: r.n_pos * r.p)
def tp(c: Counts) -> np.ndarray:
    """True positives."""
    return c.tp
