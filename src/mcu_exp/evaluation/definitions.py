"""The built-in alignment metrics, positive class = understandable, with their conventions.

Label metrics, from the confusion counts (tp, fp, fn, tn) of any shape, each equal to
scikit-learn's where defined. A metric whose denominator is zero is **undefined** and
returns NaN (never scikit-learn's ``zero_division`` 0): precision with no predicted
positive, recall with no actual positive, F1 with neither, an AUC whose truth has one class.

- accuracy = (tp + tn) / n; precision = tp / (tp + fp); recall = tp / (tp + fn);
- F1 = 2tp / (2tp + fp + fn);
- ``auc_binary``, the ROC AUC of the 0/1 predictions (what the paper reports): their ROC
  curve has one inner point (FPR, TPR), so AUC = (1 + TPR − FPR) / 2, which equals
  balanced accuracy (scikit-learn sums the two trapezoids instead, which can differ from
  this in the last bit);
- ``mcc``, Matthews' correlation coefficient (tp·tn − fp·fn)/√((tp+fp)(tp+fn)(tn+fp)(tn+fn)),
  equal to scikit-learn's ``matthews_corrcoef``: chance-corrected (0 for a labeller independent
  of the truth, in expectation exactly: E[tp·tn − fp·fn | k predicted positives] = 0), so a
  constant or near-constant labeller cannot score well by copying the majority class; a
  constant labelling scores 0 (scikit-learn's convention: its denominator is 0, but it carries
  no information about the truth), undefined only when the truth has one class; its interval
  is undefined then (:func:`mcu_exp.evaluation.alignment_report.evaluate`), so a constant labeller
  ranks after every other. The sweeps and reports rank configurations by its lower confidence
  bound (docs/reports.md);
- the counts tn, fp, fn, tp themselves.

``auc_score`` is the ROC AUC of a continuous score (higher = more understandable, e.g.
``-alpha_test``), in the rank-sum (Mann–Whitney) form with mid-ranks for ties:
(rank sum of the positives − n₊(n₊+1)/2) / (n₊n₋). This equals scikit-learn's
``roc_auc_score`` (the numerator is exact, so the value is the correctly rounded U/(n₊n₋);
scikit-learn's trapezoid sum can be off in the last bit).

``spearman`` and ``kendall`` (kind ``corr``) correlate the score with the humans' continuous
per-program value (mean correctness, correct/total averaged over the readers) rather than
the binary label: Spearman's ρ is the Pearson correlation of the mid-ranks, Kendall's τ is
τ-b (ties in either variable handled), both equal to SciPy's ``spearmanr`` and
``kendalltau``; undefined (NaN) when either variable is constant.

Expected values under the prevalence-matched random labeller (n programs, n₊ = n·p
positives, n₋ negatives; K ~ Binomial(n, p) predicted positives, E[TP | k] = k·p), given
that the metric is defined:

- E[TP] = n₊p, E[FP] = n₋p, E[FN] = n₊(1 − p), E[TN] = n₋(1 − p);
- accuracy: p² + (1 − p)²;  recall: p;  precision: E[TP/K | K > 0] = p (undefined when
  n₊ = 0: the labeller then never predicts a positive);
- F1 = 2TP / (n₊ + K), linear in TP given k: E[F1] = Σₖ P(K = k)·2kp / (n₊ + k),
  computed with scipy.stats' binomial and hypergeometric laws. For large n, K ≈ np and
  E[F1] → 2p·np / (2np) = p;
- auc_binary and auc_score: 0.5 (a labelling independent of the truth ranks at chance),
  undefined when the truth has one class; spearman, kendall: 0.
"""

from __future__ import annotations

import numpy as np

from mcu_exp.evaluation.registry import (
    CHANCE_AUC,
    UNDEFINED,
    Counts,
    RandomLabeller,
    Ranking,
    register,
    safe_ratio,
)


def _f1_random(r: RandomLabeller) -> float:
    if r.n_pos == 0:
        return UNDEFINED
    return float(np.sum(r.p_k * 2.0 * r.tp_given_k / (r.n_pos + r.k)))


def _chance_auc(r: RandomLabeller) -> float:
    return CHANCE_AUC if 0 < r.n_pos < r.n else UNDEFINED


@register("accuracy", kind="rate", series=False, random=lambda r: r.p * r.p + (1.0 - r.p) ** 2)
def accuracy(c: Counts) -> np.ndarray:
    """Fraction of programs labelled as the humans did."""
    out: np.ndarray = (c.tp + c.tn) / c.n
    return out


@register("precision", kind="rate", random=lambda r: r.p if r.n_pos else UNDEFINED)
def precision(c: Counts) -> np.ndarray:
    """Fraction of the programs labelled understandable that are (undefined when none is)."""
    return safe_ratio(c.tp, c.predicted)


@register("recall", kind="rate", random=lambda r: r.p if r.n_pos else UNDEFINED)
def recall(c: Counts) -> np.ndarray:
    """Fraction of the understandable programs labelled so (undefined when there are none)."""
    return safe_ratio(c.tp, c.n_pos)


@register("f1", header="F1", kind="rate", random=_f1_random, headline=True)
def f1(c: Counts) -> np.ndarray:
    """Harmonic mean of precision and recall, 2tp / (2tp + fp + fn) (0 when tp = 0 but
    something was predicted or present; undefined when nothing was)."""
    return safe_ratio(2 * c.tp, c.n_pos + c.predicted)


def _chance_mcc(r: RandomLabeller) -> float:
    return 0.0 if 0 < r.n_pos < r.n else UNDEFINED


@register("mcc", header="MCC", kind="corr", random=_chance_mcc, headline=True)
def mcc(c: Counts) -> np.ndarray:
    """Matthews' correlation of the labels with the truth, (tp·tn − fp·fn) / √(P·N·P̂·N̂):
    chance-corrected, 0 for any labeller independent of the truth (the always-1 baseline
    included: a constant labelling is scored 0, as scikit-learn does, not undefined), 1 for
    perfect agreement; undefined when the truth has one class."""
    tp, fp, fn, tn = (np.asarray(x, dtype=float) for x in (c.tp, c.fp, c.fn, c.tn))
    den = np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    value = safe_ratio(tp * tn - fp * fn, den, 0.0)
    return np.where((c.n_pos > 0) & (c.n_neg > 0), value, UNDEFINED)


@register("auc_binary", header="AUC (labels)", short="AUC", kind="auc", random=_chance_auc, headline=True)
def auc_binary(c: Counts) -> np.ndarray:
    """ROC AUC of the 0/1 labels (undefined when the truth has one class)."""
    n_pos, n_neg = c.n_pos, c.n_neg
    tpr = safe_ratio(c.tp, n_pos, 0.0)
    fpr = safe_ratio(c.fp, n_neg, 0.0)
    return np.where((n_pos > 0) & (n_neg > 0), 0.5 * (1.0 + tpr - fpr), UNDEFINED)


@register("auc_score", header="AUC (score)", kind="auc", uses_score=True, random=_chance_auc, headline=True)
def auc_score(r: Ranking) -> np.ndarray:
    """ROC AUC of the score on each row, by rank sums with mid-ranks (undefined for one class)."""
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
    return safe_ratio(u_stat, n_pos * n_neg)


def _pairs(r: Ranking) -> tuple[np.ndarray, np.ndarray]:
    """The (rows, m) score and human value of each row's programs."""
    return r.score[r.indices], np.asarray(r.human, dtype=float)[r.indices]


@register(
    "spearman",
    header="Spearman ρ (score, correctness)",
    short="ρ",
    kind="corr",
    uses_human=True,
    series=False,
    random=lambda r: 0.0,
    headline=True,
)
def spearman(r: Ranking) -> np.ndarray:
    """Spearman's ρ between the score and the humans' mean correctness on each row."""
    from scipy.stats import rankdata  # imported here: SciPy's stats take ~0.8 s to import

    x, y = (rankdata(v, axis=1) for v in _pairs(r))
    x -= x.mean(axis=1, keepdims=True)
    y -= y.mean(axis=1, keepdims=True)
    return safe_ratio((x * y).sum(axis=1), np.sqrt((x * x).sum(axis=1) * (y * y).sum(axis=1)))


_KENDALL_ROWS = 256  # rows × m × m cells per block


@register(
    "kendall",
    header="Kendall τ (score, correctness)",
    short="τ_b",
    kind="corr",
    uses_human=True,
    series=False,
    random=lambda r: 0.0,
)
def kendall(r: Ranking) -> np.ndarray:
    """Kendall's τ-b between the score and the humans' mean correctness on each row."""
    x_all, y_all = _pairs(r)
    m = x_all.shape[1]
    pairs = m * (m - 1) / 2.0
    out = np.empty(x_all.shape[0])
    for start in range(0, x_all.shape[0], _KENDALL_ROWS):
        x, y = x_all[start : start + _KENDALL_ROWS], y_all[start : start + _KENDALL_ROWS]
        sx = np.sign(x[:, :, None] - x[:, None, :])
        sy = np.sign(y[:, :, None] - y[:, None, :])
        concordance = (sx * sy).sum(axis=(1, 2)) / 2.0
        untied_x = pairs - ((sx == 0).sum(axis=(1, 2)) - m) / 2.0
        untied_y = pairs - ((sy == 0).sum(axis=(1, 2)) - m) / 2.0
        out[start : start + _KENDALL_ROWS] = safe_ratio(concordance, np.sqrt(untied_x * untied_y))
    return out


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
