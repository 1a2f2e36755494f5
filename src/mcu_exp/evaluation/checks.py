"""The ``evaluation`` section's values checked before a job runs: resample and permutation counts
large enough for stable intervals, levels and grids in range, choices that exist."""

from __future__ import annotations

from collections.abc import Iterator

from mcu_exp.config import EvaluationConfig
from mcu_exp.data.types import GROUPS
from mcu_exp.evaluation.alignment_report import CI_METHODS
from mcu_exp.evaluation.bootstrap import MIN_RESAMPLES
from mcu_exp.evaluation.significance import MIN_PERMUTATIONS

BASELINES = ("none", "code", "all")  # evaluation.baselines: which code metrics the measure table scores


def evaluation_problems(ev: EvaluationConfig) -> Iterator[str]:
    """Every out-of-range value of ``evaluation``, as ``key=value: what is expected`` messages."""
    if ev.baselines not in BASELINES:
        yield f"evaluation.baselines={ev.baselines!r}: expected one of {', '.join(BASELINES)}"
    if ev.bootstrap_resamples < MIN_RESAMPLES:
        yield f"evaluation.bootstrap_resamples={ev.bootstrap_resamples}: expected at least {MIN_RESAMPLES}"
    if ev.ci not in CI_METHODS:
        yield f"evaluation.ci={ev.ci!r}: expected one of {', '.join(CI_METHODS)}"
    if ev.permutations < MIN_PERMUTATIONS:
        yield f"evaluation.permutations={ev.permutations}: expected at least {MIN_PERMUTATIONS}"
    if ev.min_per_class < 1:
        yield f"evaluation.min_per_class={ev.min_per_class}: expected at least 1"
    if not 0.0 < ev.confidence < 1.0:
        yield f"evaluation.confidence={ev.confidence}: expected a value in (0, 1)"
    if ev.ceiling_splits < 2:
        yield f"evaluation.ceiling_splits={ev.ceiling_splits}: expected at least 2 splits of the readers"
    if ev.ceiling_resamples < 1:
        yield f"evaluation.ceiling_resamples={ev.ceiling_resamples}: expected at least 1 program resample"
    if ev.ceiling_inner_splits < 2:
        yield f"evaluation.ceiling_inner_splits={ev.ceiling_inner_splits}: expected at least 2 splits per resample"
    if ev.threshold_grid < 2:
        yield f"evaluation.threshold_grid={ev.threshold_grid}: expected at least 2 points"
    bad_eps = [e for e in ev.epsilon_grid if not 0.0 < e < 1.0]
    if bad_eps or not ev.epsilon_grid:
        yield f"evaluation.epsilon_grid={list(ev.epsilon_grid)}: expected a non-empty list of values in (0, 1)"
    bad_groups = [g for g in ev.subgroups if g not in GROUPS]
    if bad_groups:
        yield f"evaluation.subgroups: unknown {bad_groups}; expected some of {', '.join(GROUPS)}"
