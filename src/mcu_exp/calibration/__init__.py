"""Calibrated thresholds and decision rules: nonconformity scores in, High/Low labels out."""

from mcu_exp.calibration.threshold import (
    QUANTILE_RULES,
    Decision,
    conformal_level,
    decide,
    empirical_coverage,
    threshold,
)

__all__ = [
    "QUANTILE_RULES",
    "Decision",
    "conformal_level",
    "decide",
    "empirical_coverage",
    "threshold",
]
