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
    conformal_level,
    decide,
    empirical_coverage,
    threshold,
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
    "conformal_level",
    "decide",
    "empirical_coverage",
    "get_rule",
    "register_rule",
    "threshold",
]
