"""Paired comparison of two proxies (two runs) on the programs both scored.

Two runs scored against the same human labels share their programs, so their errors are
correlated and unpaired intervals would overstate the uncertainty of a difference. Every
number here pairs the runs program by program (``docs/comparisons.md`` has the formulas):

- :func:`paired_bootstrap`: percentile intervals of ΔF1 = F1(A) − F1(B), Δaccuracy,
  ΔAUC(score) and ΔPRR, resampling the programs jointly (one index matrix for both runs),
  stratified by human class like :mod:`mcu_exp.evaluation.bootstrap`, scored with the metric
  registry's vectorised F1, accuracy and rank-sum AUC; a run whose decision calibrates on the
  programs is relabelled in each resample after recalibrating on it (its ``relabel``, see
  :mod:`mcu_exp.evaluation.paired_recalibration`), as its own single-run intervals are;
- :func:`delong_test` (this and the next two live in :mod:`mcu_exp.evaluation.paired_tests`):
  DeLong et al. (1988)'s test of ΔAUC for correlated ROC curves, with the midrank algorithm
  of Sun & Xu (2014), O(n log n);
- :func:`mcnemar_test`: McNemar's test on the labels' correctness (discordant pairs b, c),
  exact binomial when b + c < 25, else χ² with continuity correction max(|b − c| − 1, 0)²/(b + c);
- :func:`holm`: the Holm–Bonferroni step-down adjustment of a family of p-values;
- :func:`compare_runs` / :func:`compare_many`: all of it for two runs' ``per_program.csv``
  tables, or for every pair of many (Holm-adjusted across the pairs).

Positive class = understandable (human label 1); a score is higher for more understandable
programs. A value that does not exist on the data (an AUC with one human class, a run
without a score) is NaN, as everywhere in :mod:`mcu_exp.evaluation`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import cast

import numpy as np
import pandas as pd

from mcu_exp.evaluation.bootstrap import MIN_RESAMPLES, Relabel, percentile_interval
from mcu_exp.evaluation.metrics import ArrayLike, as_binary, as_score
from mcu_exp.evaluation.paired_recalibration import (
    LABELS_FIXED,
    Arm,
    Calibrated,
    RunCalibration,
    fixed,
    paired_arms,
    prepare,
)
from mcu_exp.evaluation.paired_scores import resample_rows, score_point, score_resamples
from mcu_exp.evaluation.paired_tests import (
    CHI2_CC,
    EXACT,
    EXACT_BELOW,
    DeLong,
    McNemar,
    delong_covariance,
    delong_test,
    holm,
    mcnemar_test,
)
from mcu_exp.evaluation.pairing import Paired, PairingError, Pairings, pair
from mcu_exp.evaluation.registry import UNDEFINED, Counts, Ranking, metric

__all__ = [  # pairing.py and paired_tests.py hold parts of this; importing them from here keeps working
    "CHI2_CC",
    "EXACT",
    "EXACT_BELOW",
    "Comparison",
    "DeLong",
    "Difference",
    "McNemar",
    "Paired",
    "PairingError",
    "arms",
    "compare_many",
    "compare_paired",
    "compare_runs",
    "delong_covariance",
    "delong_test",
    "holm",
    "mcnemar_test",
    "pair",
    "paired_bootstrap",
    "paired_bootstrap_distribution",
]


# ---------------------------------------------------------------------------------------------
# Point metrics through the registry


def f1_score(truth: np.ndarray, label: np.ndarray) -> float:
    """The registry's F1 of one labelling (NaN when undefined)."""
    return float(metric("f1").compute(Counts.from_labels(truth, label)))  # type: ignore[arg-type]


def accuracy_score(truth: np.ndarray, label: np.ndarray) -> float:
    """The registry's accuracy of one labelling: the share McNemar's test compares."""
    return float(metric("accuracy").compute(Counts.from_labels(truth, label)))  # type: ignore[arg-type]


def auc_score(truth: np.ndarray, score: np.ndarray | None) -> float:
    """The registry's rank-sum AUC(score) (NaN without a score or with one human class), once
    per distinct (labels, score): the runs of a sweep over ε share their score."""
    if score is None:
        return UNDEFINED
    auc = cast(Callable[[Ranking], np.ndarray], metric("auc_score").compute)
    return score_point(truth, score, "auc_score", lambda: float(auc(Ranking.single(score, truth))[0]))


def prr_score(truth: np.ndarray, score: np.ndarray | None) -> float:
    """The prediction rejection ratio of ``score`` (NaN without one), once per distinct (labels, score)."""
    from mcu_exp.evaluation.rejection import prediction_rejection_ratio

    if score is None:
        return UNDEFINED
    return score_point(truth, score, "prr", lambda: prediction_rejection_ratio(truth, score))


# ---------------------------------------------------------------------------------------------
# Paired bootstrap


@dataclass(frozen=True)
class Difference:
    """A difference A − B with its paired bootstrap percentile interval and the share of
    resamples in which it was undefined (left out of the percentiles)."""

    value: float
    low: float
    high: float
    undefined_share: float = 0.0


DIFFERENCES = ("delta_f1", "delta_accuracy", "delta_auc", "delta_prr")


def paired_bootstrap_distribution(
    truth: ArrayLike,
    label_a: ArrayLike,
    label_b: ArrayLike,
    score_a: ArrayLike | None = None,
    score_b: ArrayLike | None = None,
    resamples: int = 2000,
    seed: int = 0,
    relabel_a: Relabel | None = None,
    relabel_b: Relabel | None = None,
) -> dict[str, np.ndarray]:
    """ΔF1, Δaccuracy, ΔAUC(score) and ΔPRR (A − B) over ``resamples`` stratified resamples
    of the programs, the same rows for both runs. ``relabel_a``/``relabel_b`` give a run's
    labels of each resample row (recalibrated on it); without one the run's labels stay
    fixed. ``delta_auc`` and ``delta_prr`` are all NaN unless both scores are given; each run's
    side of them is computed once per distinct score (:mod:`mcu_exp.evaluation.paired_scores`):
    two equal scores differ by exactly 0 in every resample where they are defined."""
    if resamples < MIN_RESAMPLES:
        raise ValueError(
            f"resamples must be at least {MIN_RESAMPLES} for a stable percentile interval, got {resamples}"
        )
    t = as_binary(truth, "truth")
    la, lb = as_binary(label_a, "label_a"), as_binary(label_b, "label_b")
    if not t.size == la.size == lb.size:
        raise ValueError(f"truth and labels differ in length: {t.size}, {la.size}, {lb.size}")
    both = score_a is not None and score_b is not None
    sa = as_score(score_a, "score_a", t.size) if both else None  # type: ignore[arg-type]
    sb = as_score(score_b, "score_b", t.size) if both else None  # type: ignore[arg-type]
    from mcu_exp.evaluation.rejection import prr_many

    f1 = cast(Callable[[Counts], np.ndarray], metric("f1").compute)
    accuracy = cast(Callable[[Counts], np.ndarray], metric("accuracy").compute)
    auc = cast(Callable[[Ranking], np.ndarray], metric("auc_score").compute)
    parts: dict[str, list[np.ndarray]] = {"delta_f1": [], "delta_accuracy": []}
    for idx in resample_rows(t, resamples, seed):
        rows = t[idx]
        counts_a = Counts.from_labels(rows, la[idx] if relabel_a is None else np.asarray(relabel_a(idx), dtype=int))
        counts_b = Counts.from_labels(rows, lb[idx] if relabel_b is None else np.asarray(relabel_b(idx), dtype=int))
        parts["delta_f1"].append(np.asarray(f1(counts_a)) - np.asarray(f1(counts_b)))
        parts["delta_accuracy"].append(np.asarray(accuracy(counts_a)) - np.asarray(accuracy(counts_b)))
    out = {key: np.concatenate(values) for key, values in parts.items()}
    if sa is not None and sb is not None:
        auc_a, prr_a = score_resamples(t, sa, resamples, seed, auc, prr_many)
        auc_b, prr_b = score_resamples(t, sb, resamples, seed, auc, prr_many)
        out["delta_auc"], out["delta_prr"] = auc_a - auc_b, prr_a - prr_b
    else:
        out["delta_auc"], out["delta_prr"] = np.full(resamples, UNDEFINED), np.full(resamples, UNDEFINED)
    return out


def paired_bootstrap(
    truth: ArrayLike,
    label_a: ArrayLike,
    label_b: ArrayLike,
    score_a: ArrayLike | None = None,
    score_b: ArrayLike | None = None,
    resamples: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
    relabel_a: Relabel | None = None,
    relabel_b: Relabel | None = None,
) -> dict[str, Difference]:
    """ΔF1, Δaccuracy, ΔAUC(score) and ΔPRR (A − B): point values on all programs (each run's
    own labels) and paired stratified bootstrap percentile intervals (see
    :func:`paired_bootstrap_distribution`)."""
    t = as_binary(truth, "truth")
    la, lb = as_binary(label_a, "label_a"), as_binary(label_b, "label_b")
    both = score_a is not None and score_b is not None
    sa = as_score(score_a, "score_a", t.size) if both else None  # type: ignore[arg-type]
    sb = as_score(score_b, "score_b", t.size) if both else None  # type: ignore[arg-type]
    dist = paired_bootstrap_distribution(t, la, lb, sa, sb, resamples, seed, relabel_a, relabel_b)
    prr = UNDEFINED if sa is None or sb is None else prr_score(t, sa) - prr_score(t, sb)
    points = {
        "delta_f1": f1_score(t, la) - f1_score(t, lb),
        "delta_accuracy": accuracy_score(t, la) - accuracy_score(t, lb),
        "delta_auc": auc_score(t, sa) - auc_score(t, sb),
        "delta_prr": prr,
    }
    out = {}
    for key, values in dist.items():
        low, high = percentile_interval(values, confidence)
        out[key] = Difference(points[key], low, high, float(np.isnan(values).mean()))
    return out


# ---------------------------------------------------------------------------------------------
# Two runs, many runs


@dataclass(frozen=True)
class Comparison:
    """Run A against run B on their shared programs (see :func:`compare_runs`); ``labels_a``
    and ``labels_b`` say whether each run was recalibrated in the resamples or kept its labels
    (:data:`~mcu_exp.evaluation.paired_recalibration.RECALIBRATED`, ``LABELS_FIXED``), the notes why."""

    n: int
    n_pos: int
    f1_a: float
    f1_b: float
    delta_f1: Difference
    accuracy_a: float
    accuracy_b: float
    delta_accuracy: Difference
    auc_a: float
    auc_b: float
    delta_auc: Difference
    delong: DeLong | None
    mcnemar: McNemar
    prr_a: float
    prr_b: float
    delta_prr: Difference
    resamples: int
    seed: int
    confidence: float
    labels_a: str = LABELS_FIXED
    labels_b: str = LABELS_FIXED
    note_a: str = ""
    note_b: str = ""

    def row(self) -> dict[str, float | int | str]:
        """One flat row (the CSV of ``mcu-exp compare`` and :func:`compare_many`)."""
        d = self.delong
        return {
            "n": self.n,
            "n_understandable": self.n_pos,
            "f1_a": self.f1_a,
            "f1_b": self.f1_b,
            "delta_f1": self.delta_f1.value,
            "delta_f1_ci_low": self.delta_f1.low,
            "delta_f1_ci_high": self.delta_f1.high,
            "accuracy_a": self.accuracy_a,
            "accuracy_b": self.accuracy_b,
            "delta_accuracy": self.delta_accuracy.value,
            "delta_accuracy_ci_low": self.delta_accuracy.low,
            "delta_accuracy_ci_high": self.delta_accuracy.high,
            "auc_score_a": self.auc_a,
            "auc_score_b": self.auc_b,
            "delta_auc_score": self.delta_auc.value,
            "delta_auc_score_ci_low": self.delta_auc.low,
            "delta_auc_score_ci_high": self.delta_auc.high,
            "delong_variance": d.variance if d else UNDEFINED,
            "delong_z": d.z if d else UNDEFINED,
            "delong_p": d.p if d else UNDEFINED,
            "mcnemar_b": self.mcnemar.b,
            "mcnemar_c": self.mcnemar.c,
            "mcnemar_statistic": self.mcnemar.statistic,
            "mcnemar_p": self.mcnemar.p,
            "mcnemar_method": self.mcnemar.method,
            "prr_a": self.prr_a,
            "prr_b": self.prr_b,
            "delta_prr": self.delta_prr.value,
            "delta_prr_ci_low": self.delta_prr.low,
            "delta_prr_ci_high": self.delta_prr.high,
            "ci_labels_a": self.labels_a,
            "ci_labels_b": self.labels_b,
            "resamples": self.resamples,
            "seed": self.seed,
            "confidence": self.confidence,
        }


def compare_paired(
    data: Paired,
    resamples: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
    arm_a: Arm | None = None,
    arm_b: Arm | None = None,
) -> Comparison:
    """Every paired statistic of two runs already paired by :func:`pair`; ``arm_a``/``arm_b``
    (:func:`~mcu_exp.evaluation.paired_recalibration.arm`) recalibrate a run in the resamples,
    None keeps its labels fixed."""
    a, b = arm_a or fixed("no calibration scores"), arm_b or fixed("no calibration scores")
    t = data.truth
    boot = paired_bootstrap(
        t, data.label_a, data.label_b, data.score_a, data.score_b, resamples, seed, confidence, a.relabel, b.relabel
    )
    delong = None
    if data.score_a is not None and data.score_b is not None:
        delong = delong_test(t, data.score_a, data.score_b)
    return Comparison(
        n=data.n,
        n_pos=int(t.sum()),
        f1_a=f1_score(t, data.label_a),
        f1_b=f1_score(t, data.label_b),
        delta_f1=boot["delta_f1"],
        accuracy_a=accuracy_score(t, data.label_a),
        accuracy_b=accuracy_score(t, data.label_b),
        delta_accuracy=boot["delta_accuracy"],
        auc_a=auc_score(t, data.score_a),
        auc_b=auc_score(t, data.score_b),
        delta_auc=boot["delta_auc"],
        delong=delong,
        mcnemar=mcnemar_test(t, data.label_a, data.label_b),
        prr_a=prr_score(t, data.score_a),
        prr_b=prr_score(t, data.score_b),
        delta_prr=boot["delta_prr"],
        resamples=resamples,
        seed=seed,
        confidence=confidence,
        labels_a=a.labels,
        labels_b=b.labels,
        note_a=a.note,
        note_b=b.note,
    )


def arms(
    data: Paired,
    calibration_a: RunCalibration | None,
    calibration_b: RunCalibration | None,
    seed: int,
    missing: tuple[str, str] = ("", ""),
) -> tuple[Arm, Arm]:
    """Both runs' arms on the paired programs (each run's extra-program draws seeded apart);
    ``missing``: why a run without a calibration has none."""
    why = [text or "no calibration scores" for text in missing]
    return paired_arms(
        prepare(calibration_a, data.program_ids, data.label_a, why[0]),
        prepare(calibration_b, data.program_ids, data.label_b, why[1]),
        seed,
    )


def compare_runs(
    a: pd.DataFrame,
    b: pd.DataFrame,
    resamples: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
    names_ab: tuple[str, str] = ("A", "B"),
    calibration_a: RunCalibration | None = None,
    calibration_b: RunCalibration | None = None,
) -> Comparison:
    """Two runs' per-program tables (index ``program_id``; columns ``human_label``,
    ``label`` and, for score-based proxies, ``score``) compared on their shared programs:
    F1, accuracy, AUC(score) and PRR of each, paired bootstrap intervals of the differences
    (a run with a :class:`RunCalibration` recalibrated in each resample), DeLong's and
    McNemar's tests."""
    data = pair(a, b, names_ab)
    return compare_paired(data, resamples, seed, confidence, *arms(data, calibration_a, calibration_b, seed))


def compare_many(
    frames: Mapping[str, pd.DataFrame],
    resamples: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
    calibrations: Mapping[str, RunCalibration] | None = None,
    pairings: Pairings | None = None,
) -> pd.DataFrame:
    """Every pair (in the order of ``frames``) as :meth:`Comparison.row` with columns
    ``run_a`` and ``run_b`` in front, plus ``delong_p_holm`` and ``mcnemar_p_holm``: each
    test's p-values Holm-adjusted over all the pairs (the family; undefined p-values left
    out of it). ``calibrations`` (by name) recalibrate those runs in the resamples. A pair
    that cannot be paired raises :class:`PairingError`. ``pairings``: pairs already built of
    these tables (see :class:`~mcu_exp.evaluation.pairing.Pairings`); each run's arm is
    prepared once per set of shared programs, whatever the number of pairs it is in."""
    found = calibrations or {}
    if pairings is None or not pairings.serves(frames):
        pairings = Pairings(frames)
    prepared: dict[tuple[str, tuple[object, ...], bytes], Calibrated | Arm] = {}

    def side(name: str, data: Paired, labels: np.ndarray) -> Calibrated | Arm:
        key = (name, tuple(data.program_ids.tolist()), labels.tobytes())
        if key not in prepared:
            prepared[key] = prepare(found.get(name), data.program_ids, labels, "no calibration scores")
        return prepared[key]

    rows = []
    for name_a, name_b in itertools.combinations(frames, 2):
        data = pairings(name_a, name_b)
        arm_a, arm_b = paired_arms(side(name_a, data, data.label_a), side(name_b, data, data.label_b), seed)
        cmp = compare_paired(data, resamples, seed, confidence, arm_a, arm_b)
        rows.append({"run_a": name_a, "run_b": name_b, **cmp.row()})
    table = pd.DataFrame(rows, columns=None if rows else ["run_a", "run_b", "delong_p", "mcnemar_p"])
    table["delong_p_holm"] = holm(table["delong_p"].to_numpy(dtype=float))
    table["mcnemar_p_holm"] = holm(table["mcnemar_p"].to_numpy(dtype=float))
    return table
