"""The ``decision`` section's values checked before a job runs: ε and θ in range, a quantile
rule and a decision rule that exist (read from their registries)."""

from __future__ import annotations

from collections.abc import Iterator

from mcu_exp.calibration.rules import RULES
from mcu_exp.calibration.threshold import QUANTILE_RULES
from mcu_exp.config import DecisionConfig


def decision_problems(d: DecisionConfig) -> Iterator[str]:
    """Every out-of-range value of ``decision``, as ``key=value: what is expected`` messages."""
    if not 0.0 < d.epsilon < 1.0:
        yield f"decision.epsilon={d.epsilon}: expected a value in (0, 1)"
    if d.quantile not in QUANTILE_RULES:
        yield f"decision.quantile={d.quantile!r}: expected one of {', '.join(QUANTILE_RULES)}"
    if d.rule not in RULES:
        yield RULES.unknown_message(d.rule)
    if not 0.0 <= d.theta <= 1.0:
        yield f"decision.theta={d.theta}: expected a value in [0, 1]"
