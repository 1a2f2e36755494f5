"""Calibrated thresholds and decision rules: nonconformity scores in, High/Low labels out."""

from mcu_exp.calibration.rules import (
    RULES,
    DecisionRule,
    RuleDecision,
    Scores,
    apply_rule,
    check_rule,
    get_rule,
    register_rule,
)
from mcu_exp.calibration.threshold import (
    QUANTILE_RULES,
    Decision,
    clopper_pearson,
    conformal_level,
    decide,
    empirical_coverage,
    quantile_rank,
    threshold,
    thresholds,
)

__all__ = [
    "QUANTILE_RULES",
    "RULES",
    "Decision",
    "DecisionRule",
    "RuleDecision",
    "Scores",
    "apply_rule",
    "check_rule",
    "clopper_pearson",
    "conformal_level",
    "decide",
    "empirical_coverage",
    "get_rule",
    "quantile_rank",
    "register_rule",
    "threshold",
    "thresholds",
]
