"""An independent computation of the humans' split-half ceiling and Krippendorff's α, for the
data tests of the built-in datasets: per-evaluation values read from the raw CSV in plain
Python, half means with NumPy, ρ with SciPy, AUC and F1 with scikit-learn, Spearman–Brown by
hand, and α by its coincidence-matrix formula. Only the splits are the project's (its splitter,
on the order :func:`mcu_exp.ceiling.split_half.split_half` gives the evaluations), so that the
two computations see the same halves."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
from scipy.stats import spearmanr
from sklearn.metrics import f1_score, roc_auc_score

from mcu_exp.ceiling.split_half import _split_halves
from mcu_exp.data import Dataset

Key = tuple[str, str]  # (participant, program as the raw file names it)


def same_splits(
    dataset: Dataset, raw_program: Mapping[str, str], splits: int, seed: int
) -> tuple[list[Key], np.ndarray, np.ndarray]:
    """The project's ``splits`` splits (seeded as ``split_half(seed=seed)``): each evaluation's
    raw key, in split_half's order (the programs with two or more evaluations in the dataset's
    order, each one's evaluations in the dataset's order), its program code, and the
    (splits, evaluations) mask of half A. ``raw_program`` maps a program id to the raw file's name."""
    ev = dataset.evaluations
    by_program: dict[str, list[str]] = {}
    for pid, person in zip(ev["program_id"], ev["participant_id"], strict=True):
        by_program.setdefault(str(pid), []).append(str(person))
    kept = [pid for pid in dataset.program_ids if len(by_program.get(pid, [])) >= 2]
    keys = [(person, raw_program[pid]) for pid in kept for person in by_program[pid]]
    codes = np.repeat(np.arange(len(kept)), [len(by_program[pid]) for pid in kept])
    return keys, codes, _split_halves(codes, splits, np.random.default_rng(seed))


def recompute(
    keys: Sequence[Key],
    codes: np.ndarray,
    in_a: np.ndarray,
    right: Mapping[Key, int],
    questions: int,
    understood: Mapping[Key, bool],
) -> dict[str, float]:
    """The half-panel figures (mean over splits) and their Spearman–Brown extrapolation, from the
    raw questions right (of ``questions``) and ABU50 of each evaluation: ρ of half A's mean
    correctness with half B's, AUC of A's mean ABU50 against B's label (mean ABU50 ≥ 0.5), F1 of
    A's label against B's. Each mean is one division of two integers, so equal fractions are
    equal floats and tie exactly (a sum of thirds would not: 1/3 + 1/3 + 1/3 ≠ 1 in floats)."""
    counts = np.array([right[k] for k in keys], dtype=float)
    abu = np.array([float(understood[k]) for k in keys])
    n = int(codes.max()) + 1
    rho, auc, f1 = [], [], []
    for mask in in_a:
        halves = []
        for half in (mask, ~mask):
            size = np.bincount(codes[half], minlength=n)
            halves.append(
                (
                    np.bincount(codes[half], weights=counts[half], minlength=n) / (questions * size),
                    np.bincount(codes[half], weights=abu[half], minlength=n) / size,
                )
            )
        (correct_a, abu_a), (correct_b, abu_b) = halves
        rho.append(spearmanr(correct_a, correct_b).statistic)
        label_a, label_b = abu_a >= 0.5, abu_b >= 0.5
        assert 0 < label_b.sum() < n, "a split whose half B has one class: pick other seeds"
        auc.append(roc_auc_score(label_b, abu_a))
        f1.append(f1_score(label_b, label_a))
    r = float(np.mean(rho))
    reliability = 2 * r / (1 + r)
    return {
        "split_half_rho": r,
        "auc_score": float(np.mean(auc)),
        "f1": float(np.mean(f1)),
        "reliability": reliability,
        "spearman": math.sqrt(max(reliability, 0.0)),
    }


def nominal_alpha(understood: Mapping[Key, bool]) -> float:
    """Krippendorff's α of binary values by its formula: α = 1 − (n − 1) Σ_u o_u / (2 n₁ n₀), with
    o_u = 2 n₁ᵤ n₀ᵤ / (mᵤ − 1) the disagreeing pairs of unit u (mᵤ ≥ 2 values, n₁ᵤ ones) and n,
    n₁, n₀ the pairable values' totals."""
    units: dict[str, list[bool]] = {}
    for (_, program), value in understood.items():
        units.setdefault(program, []).append(value)
    pairable = [values for values in units.values() if len(values) >= 2]
    ones = sum(sum(values) for values in pairable)
    total = sum(len(values) for values in pairable)
    zeros = total - ones
    observed = sum(2 * sum(v) * (len(v) - sum(v)) / (len(v) - 1) for v in pairable)
    return 1 - (total - 1) * observed / (2 * ones * zeros)
