"""The global threshold τ from calibration nonconformity scores, and the High/Low rule.

τ is the (1 − ε) quantile of the calibration scores α_cal over programs. ``empirical`` is
NumPy's default (linear) quantile at level 1 − ε, as in the paper; ``conformal`` is the
finite-sample split-conformal quantile: the ⌈(n + 1)(1 − ε)⌉-th smallest score (level
⌈(n + 1)(1 − ε)⌉ / n, NumPy's ``inverted_cdf``), which guarantees coverage ≥ 1 − ε for an
exchangeable new program. When that rank exceeds n the threshold is +∞ (every program High).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

QUANTILE_RULES = ("empirical", "conformal")


def conformal_level(n: int, epsilon: float) -> float:
    """The quantile level ⌈(n + 1)(1 − ε)⌉ / n of the finite-sample conformal rule."""
    if n <= 0:
        raise ValueError("conformal_level needs at least one calibration score")
    return math.ceil((n + 1) * (1.0 - epsilon) - 1e-12) / n


def threshold(alpha_cal: Sequence[float] | np.ndarray, epsilon: float, rule: str = "empirical") -> float:
    """τ = the (1 − ε) quantile of ``alpha_cal`` under ``rule`` (see the module docstring)."""
    if not 0.0 < epsilon < 1.0:
        raise ValueError(f"decision.epsilon must lie in (0, 1), got {epsilon}")
    scores = np.asarray(alpha_cal, dtype=float)
    scores = scores[~np.isnan(scores)]
    if scores.size == 0:
        raise ValueError("no calibration scores to compute a threshold from")
    if rule == "empirical":
        return float(np.quantile(scores, 1.0 - epsilon))
    if rule == "conformal":
        rank = math.ceil((scores.size + 1) * (1.0 - epsilon) - 1e-12)
        if rank > scores.size:
            return math.inf
        return float(np.partition(scores, rank - 1)[rank - 1])
    raise ValueError(f"decision.quantile must be one of {QUANTILE_RULES}, got {rule!r}")


def empirical_coverage(alpha_test: Sequence[float] | np.ndarray, tau: float) -> float:
    """Fraction of programs whose test nonconformity is within the threshold (α_test ≤ τ)."""
    scores = np.asarray(alpha_test, dtype=float)
    if scores.size == 0:
        return math.nan
    return float(np.mean(scores <= tau))


@dataclass(frozen=True)
class Decision:
    """The threshold a run used and the labels it gave (1 = High)."""

    tau: float
    epsilon: float
    quantile: str
    labels: np.ndarray
    coverage: float


def decide(
    alpha_cal: Sequence[float] | np.ndarray,
    alpha_test: Sequence[float] | np.ndarray,
    epsilon: float,
    quantile: str = "empirical",
) -> Decision:
    """Calibrate τ on ``alpha_cal`` and label each program High iff its α_test ≤ τ."""
    tau = threshold(alpha_cal, epsilon, quantile)
    test = np.asarray(alpha_test, dtype=float)
    labels = (test <= tau).astype(int)
    return Decision(tau=tau, epsilon=epsilon, quantile=quantile, labels=labels,
                    coverage=empirical_coverage(test, tau))
