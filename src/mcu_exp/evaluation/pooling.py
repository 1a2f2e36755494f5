"""One proxy's rank correlation with human comprehension, pooled across datasets.

At 50 programs a single dataset's Spearman ρ has a standard error near 0.14, so single-dataset
verdicts are mostly "no evidence" (docs/DESIGN.md, "Evidence beyond one dataset"). This module
pools the same proxy's ρ over k datasets by a random-effects meta-analysis on Fisher's z:

* per dataset i: z_i = atanh(ρ_i) with variance v_i = 1.06 / (n_i − 3) — Fieller, Hartley and
  Pearson's (1957) variance for the z of a *Spearman* ρ (Pearson's would be 1 / (n − 3)). It
  does not depend on ρ, so the weights do not depend on the estimates; it is accurate for
  |ρ| ≲ 0.8 and too small for larger |ρ| (Bonett and Wright 2000);
* the random-effects model z_i = μ + u_i + e_i, u_i ~ N(0, τ²), e_i ~ N(0, v_i), fitted by
  statsmodels' :func:`~statsmodels.stats.meta_analysis.combine_effects` with
  ``method_re="pm"`` (Paule–Mandel: τ² solves Σ w_i (z_i − μ̂)² = k − 1 with
  w_i = 1 / (v_i + τ²), truncated at 0; recommended over DerSimonian–Laird by Veroniki et al.
  2016, and statsmodels' DerSimonian–Laird τ² is not truncated at 0);
* μ̂ = Σ w_i z_i / Σ w_i, SE(μ̂) = (Σ w_i)^(−1/2), the 1 − α interval μ̂ ± z_(1−α/2) SE
  (normal, as statsmodels' ``conf_int(use_t=False)``), all back-transformed by tanh;
* heterogeneity: Cochran's Q = Σ (z_i − μ̂_FE)² / v_i with k − 1 df and its χ² p-value,
  I² = max(0, (Q − df) / Q) (0 when Q = 0);
* the prediction interval for a new dataset's ρ (Higgins, Thompson and Spiegelhalter 2009):
  μ̂ ± t_(k−2, 1−α/2) √(τ² + SE²) on z, back-transformed. It needs k ≥ 3: with k = 2 there are no
  degrees of freedom left for τ², and the interval is **undefined** (NaN, with the reason),
  never a normal-quantile interval that would pretend τ² were known.

A dataset whose ρ is undefined (NaN, n < 4, |ρ| ≥ 1: z is infinite or its variance is not
positive) is left out of the pool and named in :attr:`PooledCorrelation.excluded` with the
reason. With fewer than 2 usable datasets every pooled figure is NaN and
:attr:`PooledCorrelation.reason` says why.

Assumptions: the datasets are independent (no shared programs), each ρ is of the same proxy
against the same human measure (mean correctness per program), and the normal random-effects
distribution on z describes the between-dataset spread. With k = 3 the Paule–Mandel τ² is very
imprecise and the normal interval for μ undercovers when τ² > 0 (the Hartung–Knapp interval,
statsmodels' ``ci_eff_re_wls``, is the usual remedy; not reported here).

:func:`pool_disattenuated` pools ρ_i / √r_i (r_i: the reliability of the human measure on
dataset i) the same way; see its docstring for the variance used.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from scipy import stats

if TYPE_CHECKING:
    import pandas as pd

SPEARMAN_VARIANCE = 1.06
"""The numerator of var(atanh ρ_Spearman) ≈ 1.06 / (n − 3) (Fieller, Hartley and Pearson 1957)."""

METHOD_RE = "pm"
"""statsmodels' τ² estimator: Paule–Mandel (iterated, truncated at 0)."""

POOLED = "pooled"  # the pooled row's name in :meth:`PooledCorrelation.rows`


class DatasetCorrelation(NamedTuple):
    """One dataset's input: its name, the proxy's Spearman ρ against the humans' mean
    correctness, the number of programs n, and (optional) the reliability of the human measure
    on that dataset (e.g. a Spearman–Brown split-half correlation), for disattenuation."""

    name: str
    rho: float
    n: int
    reliability: float | None = None


@dataclass(frozen=True)
class DatasetEstimate:
    """One pooled dataset: ρ (disattenuated when pooled so), z = atanh ρ, its variance, the
    1 − α interval tanh(z ± z_(1−α/2) √var), and its relative random-effects weight."""

    name: str
    n: int
    rho: float
    z: float
    variance: float
    ci_low: float
    ci_high: float
    weight: float = math.nan


@dataclass(frozen=True)
class PooledCorrelation:
    """A random-effects pool of per-dataset correlations (all z figures on Fisher's scale,
    ``rho*`` figures back-transformed by tanh). NaN figures are undefined; ``reason`` says why
    the pool is, ``pi_reason`` why the prediction interval is."""

    datasets: tuple[DatasetEstimate, ...]
    excluded: tuple[tuple[str, str], ...]
    alpha: float
    method: str
    disattenuated: bool
    z: float = math.nan
    se: float = math.nan
    rho: float = math.nan
    ci_low: float = math.nan
    ci_high: float = math.nan
    tau2: float = math.nan
    i2: float = math.nan
    q: float = math.nan
    q_df: int = 0
    q_p: float = math.nan
    pi_low: float = math.nan
    pi_high: float = math.nan
    reason: str | None = None
    pi_reason: str | None = None

    @property
    def k(self) -> int:
        """How many datasets entered the pool."""
        return len(self.datasets)

    def rows(self) -> list[dict[str, Any]]:
        """One row per pooled dataset, one per excluded dataset (its figures NaN, ``note`` the
        reason), then the pooled row (``name`` = ``"pooled"``, ``n`` the total programs)."""
        rows: list[dict[str, Any]] = [
            {
                "name": d.name,
                "n": d.n,
                "rho": d.rho,
                "ci_low": d.ci_low,
                "ci_high": d.ci_high,
                "z": d.z,
                "variance": d.variance,
                "weight": d.weight,
                "note": "",
            }
            for d in self.datasets
        ]
        nan = math.nan
        rows += [
            {
                "name": name,
                "n": None,
                "rho": nan,
                "ci_low": nan,
                "ci_high": nan,
                "z": nan,
                "variance": nan,
                "weight": nan,
                "note": f"excluded: {why}",
            }
            for name, why in self.excluded
        ]
        note = self.reason or (
            f"k={self.k}, tau2={self.tau2:.4g}, I2={self.i2:.1%}, Q={self.q:.3g} (df={self.q_df}, p={self.q_p:.3g})"
            + (
                f"; prediction interval [{self.pi_low:.3f}, {self.pi_high:.3f}]"
                if self.pi_reason is None
                else f"; prediction interval undefined: {self.pi_reason}"
            )
        )
        rows.append(
            {
                "name": POOLED,
                "n": sum(d.n for d in self.datasets),
                "rho": self.rho,
                "ci_low": self.ci_low,
                "ci_high": self.ci_high,
                "z": self.z,
                "variance": self.se**2,
                "weight": 1.0 if self.reason is None else nan,
                "note": note,
            }
        )
        return rows

    def to_frame(self) -> pd.DataFrame:
        """:meth:`rows` as a pandas DataFrame (pandas imported on first use)."""
        import pandas as pd

        return pd.DataFrame(self.rows())


def _as_input(item: DatasetCorrelation | Sequence[Any]) -> DatasetCorrelation:
    """A :class:`DatasetCorrelation` from itself or a ``(name, rho, n[, reliability])`` tuple."""
    if isinstance(item, DatasetCorrelation):
        return item
    return DatasetCorrelation(*item)


def _undefined_reason(rho: float, n: float) -> str | None:
    """Why a dataset's z cannot enter the pool, or None."""
    if not (isinstance(rho, numbers.Real) and math.isfinite(rho)):  # NumPy's floats too
        return "rho is undefined (NaN)"
    if not math.isfinite(n) or n < 4:
        return f"n = {n} < 4 (var(z) = 1.06/(n-3) needs n > 3)"
    if abs(rho) >= 1:
        return f"|rho| = {abs(rho):.4g} >= 1 (Fisher z is infinite)"
    return None


def _interval(z: float, variance: float, crit: float) -> tuple[float, float]:
    half = crit * math.sqrt(variance)
    return math.tanh(z - half), math.tanh(z + half)


def _pool(
    entries: list[tuple[str, int, float, float, float]],
    excluded: list[tuple[str, str]],
    *,
    alpha: float,
    disattenuated: bool,
) -> PooledCorrelation:
    """Pool ``(name, n, rho, z, var z)`` entries with statsmodels' ``combine_effects``."""
    crit = float(stats.norm.isf(alpha / 2))
    common: dict[str, Any] = {
        "excluded": tuple(excluded),
        "alpha": alpha,
        "method": METHOD_RE,
        "disattenuated": disattenuated,
    }
    k = len(entries)
    if k < 2:
        single = [
            DatasetEstimate(name, n, rho, z, v, *_interval(z, v, crit), weight=math.nan)
            for name, n, rho, z, v in entries
        ]
        return PooledCorrelation(
            datasets=tuple(single),
            reason=f"{k} usable dataset{'s' if k != 1 else ''}: pooling needs at least 2",
            pi_reason="no pooled estimate",
            **common,
        )

    from statsmodels.stats.meta_analysis import combine_effects

    z_arr = np.array([e[3] for e in entries], dtype=float)
    v_arr = np.array([e[4] for e in entries], dtype=float)
    res = combine_effects(z_arr, v_arr, method_re=METHOD_RE, row_names=[e[0] for e in entries], alpha=alpha)
    mu = float(res.mean_effect_re)
    se = float(res.sd_eff_w_re)
    tau2 = max(0.0, float(res.tau2))
    _, ci_re, _, _ = res.conf_int(alpha=alpha, use_t=False)
    homog = res.test_homogeneity()
    q = float(homog.statistic)
    df = k - 1
    i2 = max(0.0, (q - df) / q) if q > 0 else 0.0
    weights = np.asarray(res.weights_rel_re, dtype=float)

    if k >= 3:
        t = float(stats.t.isf(alpha / 2, k - 2))
        half = t * math.sqrt(tau2 + se**2)
        pi_low, pi_high, pi_reason = math.tanh(mu - half), math.tanh(mu + half), None
    else:
        pi_low = pi_high = math.nan
        pi_reason = "k = 2: a prediction interval needs k >= 3 (t with k - 2 df)"

    datasets = tuple(
        DatasetEstimate(name, n, rho, z, v, *_interval(z, v, crit), weight=float(w))
        for (name, n, rho, z, v), w in zip(entries, weights, strict=True)
    )
    return PooledCorrelation(
        datasets=datasets,
        z=mu,
        se=se,
        rho=math.tanh(mu),
        ci_low=math.tanh(float(ci_re[0])),
        ci_high=math.tanh(float(ci_re[1])),
        tau2=tau2,
        i2=i2,
        q=q,
        q_df=df,
        q_p=float(homog.pvalue),
        pi_low=pi_low,
        pi_high=pi_high,
        pi_reason=pi_reason,
        **common,
    )


def pool_correlations(
    per_dataset: Iterable[DatasetCorrelation | Sequence[Any]], *, alpha: float = 0.05
) -> PooledCorrelation:
    """Random-effects pool of one proxy's Spearman ρ over datasets (formulas: module docstring).

    ``per_dataset``: :class:`DatasetCorrelation` or ``(name, rho, n[, reliability])`` tuples,
    names unique. A dataset with NaN ρ, n < 4 or |ρ| ≥ 1 is excluded and named with the reason.
    """
    entries: list[tuple[str, int, float, float, float]] = []
    excluded: list[tuple[str, str]] = []
    for item in _unique(per_dataset):
        why = _undefined_reason(item.rho, item.n)
        if why is not None:
            excluded.append((item.name, why))
            continue
        z = math.atanh(item.rho)
        entries.append((item.name, int(item.n), float(item.rho), z, SPEARMAN_VARIANCE / (item.n - 3)))
    return _pool(entries, excluded, alpha=alpha, disattenuated=False)


def pool_disattenuated(
    per_dataset: Iterable[DatasetCorrelation | Sequence[Any]], *, alpha: float = 0.05
) -> PooledCorrelation:
    """Random-effects pool of the disattenuated ρ_c,i = ρ_i / √r_i, r_i the reliability of the
    human measure on dataset i (the proxy's score is taken as error-free).

    Variance by the delta method, r_i treated as known: with z = atanh ρ and z_c = atanh ρ_c,
    dz_c/dz = (1 − ρ²) / (√r (1 − ρ_c²)), so var(z_c) ≈ 1.06/(n − 3) · [(1 − ρ²) / (√r (1 − ρ_c²))]².
    For small ρ this is var(z)/r. Limits: the sampling error of r_i is ignored (so the intervals
    are too narrow when r_i comes from few readers or programs), the approximation degrades as
    |ρ_c| nears 1, and a dataset whose |ρ_c| ≥ 1 (ρ exceeds what the humans' own reliability
    allows) is excluded with the reason, like one without a reliability in (0, 1].
    """
    entries: list[tuple[str, int, float, float, float]] = []
    excluded: list[tuple[str, str]] = []
    for item in _unique(per_dataset):
        why = _undefined_reason(item.rho, item.n)
        r = item.reliability
        if why is None and r is None:
            why = "no reliability given"
        elif why is None and (r is None or not math.isfinite(r) or not 0 < r <= 1):
            why = f"reliability {r} is not in (0, 1]"
        if why is None:
            assert r is not None
            rho_c = item.rho / math.sqrt(r)
            if abs(rho_c) >= 1:
                why = f"|rho/sqrt(reliability)| = {abs(rho_c):.4g} >= 1 (Fisher z is infinite)"
        if why is not None:
            excluded.append((item.name, why))
            continue
        assert r is not None
        slope = (1 - item.rho**2) / (math.sqrt(r) * (1 - rho_c**2))
        variance = SPEARMAN_VARIANCE / (item.n - 3) * slope**2
        entries.append((item.name, int(item.n), rho_c, math.atanh(rho_c), variance))
    return _pool(entries, excluded, alpha=alpha, disattenuated=True)


def _unique(per_dataset: Iterable[DatasetCorrelation | Sequence[Any]]) -> list[DatasetCorrelation]:
    items = [_as_input(item) for item in per_dataset]
    names = [item.name for item in items]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ValueError(f"dataset names must be unique; repeated: {', '.join(duplicates)}")
    return items
