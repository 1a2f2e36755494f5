"""The global threshold τ from calibration nonconformity scores, and the High/Low rule.

τ is an upper quantile of the calibration scores α_cal (one per program) at level 1 − ε.
Three rules (``decision.quantile``), for n calibration scores sorted ascending:

- ``empirical`` (default, the paper's "at least 1 − ε"): the smallest calibration score with
  at least ⌈n(1 − ε)⌉ scores at or below it, i.e. the ⌈n(1 − ε)⌉-th smallest (NumPy's
  ``inverted_cdf``). At least 1 − ε of the calibration scores are ≤ τ, always.
- ``conformal``: the finite-sample split-conformal quantile, the ⌈(n + 1)(1 − ε)⌉-th smallest,
  which guarantees coverage ≥ 1 − ε for an exchangeable new program; when that rank exceeds
  n the threshold is +∞ (every program High).
- ``linear``: NumPy's default linearly interpolated quantile. It can leave fewer than 1 − ε
  of the calibration scores at or below τ (n = 50, ε = 0.05 gives 0.94); kept only to
  reproduce runs made before ``empirical`` meant the rule above.

Each :class:`Decision` reports the achieved calibration fraction (share of α_cal ≤ τ) and the
test coverage with its exact binomial (Clopper–Pearson) interval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

QUANTILE_RULES = ("empirical", "conformal", "linear")
_SLACK = 1e-12  # n(1 − ε) = 45.000000000000004 for n = 50, ε = 0.1 must still give rank 45


def conformal_level(n: int, epsilon: float) -> float:
    """The quantile level ⌈(n + 1)(1 − ε)⌉ / n of the finite-sample conformal rule."""
    if n <= 0:
        raise ValueError("conformal_level needs at least one calibration score")
    return math.ceil((n + 1) * (1.0 - epsilon) - _SLACK) / n


def quantile_rank(n: int, epsilon: float, rule: str) -> int:
    """The 1-based rank of τ among ``n`` sorted calibration scores (``n + 1`` or more: +∞)
    under an order-statistic rule (``empirical`` or ``conformal``)."""
    if rule not in ("empirical", "conformal"):
        raise ValueError(f"quantile_rank: {rule!r} is not an order-statistic rule")
    return int(_ranks(np.array([n]), epsilon, rule)[0])


def _ranks(counts: np.ndarray, epsilon: float, rule: str) -> np.ndarray:
    """:func:`quantile_rank` of every count at once (0 where a count is 0)."""
    sizes = counts + (1 if rule == "conformal" else 0)
    ranks = np.ceil(sizes * (1.0 - epsilon) - _SLACK).astype(int)
    if rule == "empirical":
        ranks = np.maximum(ranks, 1)
    return np.where(counts > 0, ranks, 0)


def _check(epsilon: float, rule: str) -> None:
    if not 0.0 < epsilon < 1.0:
        raise ValueError(f"decision.epsilon must lie in (0, 1), got {epsilon}")
    if rule not in QUANTILE_RULES:
        raise ValueError(f"decision.quantile must be one of {', '.join(QUANTILE_RULES)}, got {rule!r}")


def threshold(alpha_cal: Sequence[float] | np.ndarray, epsilon: float, rule: str = "empirical") -> float:
    """τ = the (1 − ε) quantile of ``alpha_cal`` (NaNs ignored) under ``rule`` (see the
    module docstring)."""
    _check(epsilon, rule)
    scores = np.asarray(alpha_cal, dtype=float)
    scores = scores[~np.isnan(scores)]
    if scores.size == 0:
        raise ValueError("no calibration scores to compute a threshold from")
    if rule == "linear":
        return float(np.quantile(scores, 1.0 - epsilon))
    rank = quantile_rank(scores.size, epsilon, rule)
    if rank > scores.size:
        return math.inf
    return float(np.partition(scores, rank - 1)[rank - 1])


def thresholds(alpha_cal_rows: np.ndarray, epsilon: float, rule: str = "empirical") -> np.ndarray:
    """:func:`threshold` of each row of a (rows, n) matrix at once (NaNs ignored per row; a
    row without scores gives NaN): the calibration step of a bootstrap resample."""
    _check(epsilon, rule)
    rows = np.asarray(alpha_cal_rows, dtype=float)
    if rule == "linear":
        with np.errstate(all="ignore"):
            valid = (~np.isnan(rows)).any(axis=1)
            out = np.full(rows.shape[0], np.nan)
            if valid.any():
                out[valid] = np.nanquantile(rows[valid], 1.0 - epsilon, axis=1)
            return out
    ordered = np.sort(rows, axis=1)  # NaNs sort last
    counts = (~np.isnan(rows)).sum(axis=1)
    ranks = _ranks(counts, epsilon, rule)
    out = np.full(rows.shape[0], np.nan)
    inside = (ranks >= 1) & (ranks <= counts)
    out[inside] = ordered[np.flatnonzero(inside), ranks[inside] - 1]
    out[(counts > 0) & (ranks > counts)] = math.inf
    return out


def empirical_coverage(alpha_test: Sequence[float] | np.ndarray, tau: float) -> float:
    """Fraction of programs whose test nonconformity is within the threshold (α_test ≤ τ)."""
    scores = np.asarray(alpha_test, dtype=float)
    if scores.size == 0:
        return math.nan
    return float(np.mean(scores <= tau))


def clopper_pearson(successes: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """The exact binomial (Clopper–Pearson) interval of a proportion ``successes / trials``
    (NaN, NaN when there are no trials)."""
    if trials <= 0:
        return math.nan, math.nan
    from scipy import stats  # imported here: SciPy's stats take ~0.8 s to import

    tail = (1.0 - confidence) / 2.0
    low = 0.0 if successes == 0 else float(stats.beta.ppf(tail, successes, trials - successes + 1))
    high = 1.0 if successes == trials else float(stats.beta.ppf(1.0 - tail, successes + 1, trials - successes))
    return low, high


@dataclass(frozen=True)
class Decision:
    """The threshold a run used, the labels it gave (1 = High) and what it achieved:
    ``calibration_fraction`` (share of α_cal ≤ τ), test ``coverage`` and its Clopper–Pearson
    interval ``coverage_ci``."""

    tau: float
    epsilon: float
    quantile: str
    labels: np.ndarray
    coverage: float
    calibration_fraction: float = math.nan
    coverage_ci: tuple[float, float] = (math.nan, math.nan)

    def metrics(self, prefix: str = "") -> dict[str, float]:
        """τ, the calibration fraction, the coverage (nominal, achieved, interval) by name."""
        low, high = self.coverage_ci
        return {
            f"{prefix}tau": self.tau,
            f"{prefix}calibration_fraction": self.calibration_fraction,
            f"{prefix}coverage": self.coverage,
            f"{prefix}coverage_ci_low": low,
            f"{prefix}coverage_ci_high": high,
            f"{prefix}nominal_coverage": 1.0 - self.epsilon,
        }


def decide(
    alpha_cal: Sequence[float] | np.ndarray,
    alpha_test: Sequence[float] | np.ndarray,
    epsilon: float,
    quantile: str = "empirical",
) -> Decision:
    """Calibrate τ on ``alpha_cal`` and label each program High iff its α_test ≤ τ."""
    tau = threshold(alpha_cal, epsilon, quantile)
    cal = np.asarray(alpha_cal, dtype=float)
    cal = cal[~np.isnan(cal)]
    test = np.asarray(alpha_test, dtype=float)
    labels = (test <= tau).astype(int)
    return Decision(
        tau=tau,
        epsilon=epsilon,
        quantile=quantile,
        labels=labels,
        coverage=empirical_coverage(test, tau),
        calibration_fraction=float(np.mean(cal <= tau)),
        coverage_ci=clopper_pearson(int(labels.sum()), int(test.size)),
    )
