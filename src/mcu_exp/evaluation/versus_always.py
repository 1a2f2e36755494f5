"""ΔF1 against the always-understandable baseline, with its paired bootstrap interval.

The headline a sweep is sorted by: how far the proxy's F1 lies above labelling every program
understandable (the always-1 baseline), ``f1_minus_always`` = F1 − F1(always-1), with
``f1_minus_always_ci_low`` / ``_ci_high``.

The interval is the paired one: in every bootstrap resample, the proxy's F1 minus the always-1
labeller's F1 *on the same resample*. The resamples are stratified
(:mod:`mcu_exp.evaluation.bootstrap`): each draws as many positives and negatives as the data
hold, so the always-1 F1, 2n₊ / (2n₊ + n₋), is the same number in every resample and the paired
difference is the F1 distribution shifted by that constant. Its percentile interval is
therefore the F1 interval minus the baseline, exactly; it is not the difference of two
intervals' bounds, which would add the baseline's (here zero) spread. The interval lies above 0
exactly when the job's verdict says F1 beats the baseline (``verdict.f1_vs_always`` = 1).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

KEY = "f1_minus_always"
LOW, HIGH = f"{KEY}_ci_low", f"{KEY}_ci_high"
F1, ALWAYS_F1 = "f1", "baseline_always_f1"


def _number(metrics: Mapping[str, object], key: str) -> float:
    """``metrics[key]`` as a float; NaN when absent or null (an undefined metric)."""
    value = metrics.get(key)
    return math.nan if value is None else float(value)  # type: ignore[arg-type]


def f1_minus_always(metrics: Mapping[str, object], prefix: str = "") -> dict[str, float]:
    """``f1_minus_always`` and its interval bounds (keys prefixed like ``metrics``'s, e.g.
    ``group.phd.``) from a job's metrics (``f1``, ``f1_ci_low``, ``f1_ci_high``,
    ``baseline_always_f1``); NaN where F1 or the baseline is undefined. Works on the
    ``metrics.json`` of runs made before the key existed."""
    base = _number(metrics, prefix + ALWAYS_F1)
    return {
        prefix + KEY: _number(metrics, prefix + F1) - base,
        prefix + LOW: _number(metrics, prefix + F1 + "_ci_low") - base,
        prefix + HIGH: _number(metrics, prefix + F1 + "_ci_high") - base,
    }


def rank_key(first_low: float, auc_low: float) -> tuple[float, float]:
    """The headline order every summary of several runs uses, as an ascending sort key (best
    first): the ranking criterion's lower bound (MCC's: :mod:`mcu_exp.report.ranking`), then the
    AUC's lower bound, both descending; an undefined bound after every defined one."""

    def desc(number: float) -> float:
        return -number if math.isfinite(number) else math.inf

    return desc(first_low), desc(auc_low)


def headline_text(metrics: Mapping[str, object]) -> str:
    """A job's result in one line: MCC [CI] (the sweeps' ranking), ΔF1 against always-1 [CI] in
    percentage points, AUC (score) [CI] and whether ΔF1's interval lies above 0 (✓ beats
    always-1) or not (✗)."""
    delta = {**metrics, **f1_minus_always(metrics)} if KEY not in metrics else metrics
    value, low, high = (_number(delta, k) for k in (KEY, LOW, HIGH))
    auc, auc_low, auc_high = (_number(metrics, k) for k in ("auc_score", "auc_score_ci_low", "auc_score_ci_high"))
    if math.isnan(value):
        shown, mark = "ΔF1 vs always-1 undefined", "—"
    else:
        shown = f"ΔF1 vs always-1 {100 * value:+.1f} pp [{100 * low:+.1f}, {100 * high:+.1f}]"
        mark = "✓ beats always-1" if low > 0 else "✗ does not beat always-1"
    if not math.isnan(auc):
        shown += f", AUC (score) {auc:.3f} [{auc_low:.3f}, {auc_high:.3f}]"
    mcc, mcc_low, mcc_high = (_number(metrics, k) for k in ("mcc", "mcc_ci_low", "mcc_ci_high"))
    if not math.isnan(mcc):
        shown = f"MCC {mcc:.2f} [{mcc_low:.2f}, {mcc_high:.2f}], " + shown
    return f"{shown}: {mark}"
