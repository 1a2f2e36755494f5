"""The humans' ceiling as a run logs it, for the tests of its readers (report, compare, sweep
summary): the keys of today's job, written by the job's own writer
(:func:`mcu_exp.ceiling.versus.comparison_figures`) from chosen figures, and the keys of a run
logged before the bounds (``share.*``, intervals over reader splits)."""

from __future__ import annotations

from mcu_exp.ceiling.bounds import BetaBinomialFit
from mcu_exp.ceiling.program_bootstrap import (
    BoundComparison,
    CeilingBootstrap,
    Difference,
    Disattenuated,
    Estimate,
)
from mcu_exp.ceiling.versus import comparison_figures

NAN = float("nan")
PROXY_AUC = (0.58, 0.42, 0.74)  # the proxy's AUC (score) on the ceiling's programs, with its interval


def _estimate(point: float, low: float, high: float, mc: float = 0.0) -> Estimate:
    return Estimate(point, low, high, mc, 0.0)


def bounds_metrics(
    prefix: str = "", auc: float = 0.65, upper: float = 0.82, rho: float = 0.8, proxy: float = PROXY_AUC[0]
) -> dict[str, float]:
    """A label set's figures under ``prefix``: lower bound ``auc`` [auc − 0.09, auc + 0.1], upper
    bound ``upper`` [upper − 0.06, upper + 0.06], ρ ceiling ``rho`` [rho − 0.1, rho + 0.05], the
    proxy's AUC ``proxy`` minus the lower bound [−0.2, +0.06] (P below 0.86) and minus the upper
    [−0.37, −0.11] (P below 1), disattenuated ρ 0.2625 [−0.09, 0.6]."""
    figures = {
        "auc_score": _estimate(auc, auc - 0.09, auc + 0.1, 0.004),
        "f1": _estimate(0.7, 0.6, 0.8, 0.01),
        "split_half_rho": _estimate(0.47, 0.3, 0.6, 0.01),
        "reliability": _estimate(rho**2, 0.4, 0.8),
        "spearman": _estimate(rho, rho - 0.1, rho + 0.05),
        "upper_auc_score": _estimate(upper, upper - 0.06, upper + 0.06),
        "second_panel_auc_score": _estimate(0.74, 0.68, 0.8),
        "upper_spearman": _estimate(0.9, 0.85, 0.95),
        "model_icc": _estimate(0.3, 0.2, 0.4),
    }
    ceiling = CeilingBootstrap(
        figures=figures,
        replicates={},
        fit=BetaBinomialFit(a=2.0, b=1.0, loglik=-10.0, programs=50),
        programs=50,
        programs_left_out=0,
        resamples=1000,
        splits=1000,
        confidence=0.95,
        seed=0,
    )
    differences = {
        "half_panel": Difference("half_panel", proxy - auc, -0.2, 0.06, 0.86),
        "second_panel": Difference("second_panel", proxy - 0.74, -0.3, -0.02, 0.98),
        "upper": Difference("upper", proxy - upper, -0.37, -0.11, 1.0),
    }
    disattenuated = Disattenuated(0.2625, -0.09, 0.6, False, False, figures["reliability"])
    found = BoundComparison(
        proxy_auc=_estimate(proxy, PROXY_AUC[1], PROXY_AUC[2]),
        proxy_rho=_estimate(0.21, -0.07, 0.46),
        differences=differences,
        disattenuated=disattenuated,
        ceiling=ceiling,
    )
    return {f"{prefix}{k}": v for k, v in comparison_figures(found, alpha=0.12).items()}


def undefined_bounds(prefix: str = "") -> dict[str, float]:
    """A label set with too few splittable programs: every figure NaN, the counts kept."""
    counts = ("programs", "programs_left_out", "resamples", "splits", "inner_splits", "flagged")
    return {k: v if k.endswith(counts) else NAN for k, v in bounds_metrics(prefix).items()}


OLD_CEILING = {
    "ceiling.auc_score": 0.65,
    "ceiling.auc_score_ci_low": 0.56,
    "ceiling.auc_score_ci_high": 0.75,
    "ceiling.f1": 0.7,
    "ceiling.f1_ci_low": 0.6,
    "ceiling.f1_ci_high": 0.8,
    "ceiling.spearman": 0.8,
    "ceiling.spearman_ci_low": 0.7,
    "ceiling.spearman_ci_high": 0.85,
    "ceiling.split_half_rho": 0.47,
    "ceiling.reliability": 0.64,
    "ceiling.krippendorff_alpha": 0.12,
    "ceiling.programs": 50.0,
    "ceiling.programs_left_out": 0.0,
}
"""A run logged before the bounds: its ceiling, intervals over reader splits."""
OLD_SHARE = {
    "share.auc_score": 0.533,
    "share.auc_score_ci_low": -0.5,
    "share.auc_score_ci_high": 1.2,
    "share.spearman": 0.2625,
    "share.spearman_ci_low": -0.09,
    "share.spearman_ci_high": 0.6,
}
"""Its share of that ceiling, as it logged it."""


def old_metrics(prefix: str = "") -> dict[str, float]:
    """Everything such a run logged for one label set, under ``prefix``."""
    return {f"{prefix}{k}": v for k, v in {**OLD_CEILING, **OLD_SHARE}.items()}
