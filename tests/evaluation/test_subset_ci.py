"""Intervals of a subset of the programs (a reader subgroup, a reference proxy's programs):
τ is calibrated on all the proxy's programs, so each resample must recalibrate on a draw of
all of them and score only the subset's. Checked on synthetic data where recalibrating on
the subset alone gives intervals that miss their own point estimate."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mcu_exp import names
from mcu_exp.calibration import Scores, get_rule
from mcu_exp.calibration.threshold import threshold
from mcu_exp.config import DecisionConfig, EvaluationConfig
from mcu_exp.evaluation.bootstrap import Calibration, calibrated_resamples
from mcu_exp.job.alignment import alignment

EV = EvaluationConfig(bootstrap_resamples=1000, permutations=0)
DECISION = DecisionConfig(epsilon=0.1)


def _panel(seed: int, n: int = 50) -> tuple[pd.DataFrame, pd.Series, Scores]:
    """A proxy's table (label, score) and the humans' labels on ``n`` programs, α informative."""
    rng = np.random.default_rng(seed)
    ids = [f"p{i:02d}" for i in range(n)]
    y = (rng.random(n) < 0.55).astype(int)
    alpha_cal = np.clip(0.5 - 0.08 * y + rng.normal(0.0, 0.12, n), 0, 1)
    alpha_test = np.clip(0.5 - 0.08 * y + rng.normal(0.0, 0.12, n), 0, 1)
    tau = threshold(alpha_cal, DECISION.epsilon)
    table = pd.DataFrame({names.LABEL: (alpha_test <= tau).astype(int), names.SCORE: -alpha_test}, index=ids)
    return table, pd.Series(y, index=ids), Scores(alpha_cal=alpha_cal, alpha_test=alpha_test)


def _relabel(scores: Scores):
    rule = get_rule("conformal")
    return lambda positions: rule.relabel(scores, DECISION, positions)  # type: ignore[misc]


def _inside(value: float, interval: tuple[float, float]) -> bool:
    return interval[0] - 1e-12 <= value <= interval[1] + 1e-12


def test_subgroup_point_estimates_lie_inside_their_recalibrating_intervals() -> None:
    """Subgroup = the 15 programs with the lowest α_cal: on the subset alone τ would be
    recalibrated among low calibration scores and label most of them Low, an estimator other
    than the one that gave the point labels (τ from all 50 programs)."""
    outside = 0
    for seed in range(12):
        table, labels, scores = _panel(seed)
        subset = table.index[np.argsort(scores.alpha_cal)[:15]]
        group = labels.loc[subset]
        if group.nunique() < 2:
            continue
        report = alignment(table, group, EV, _relabel(scores), panel=labels)
        assert report is not None and report.ci_method == "recalibrate"
        for metric in ("f1", "accuracy", "auc_binary"):
            outside += not _inside(report.metrics[metric], report.ci[metric])
    assert outside == 0


def test_subgroup_equal_to_the_panel_gives_the_panel_interval_exactly() -> None:
    table, labels, scores = _panel(seed=4)
    whole = alignment(table, labels, EV, _relabel(scores))
    same = alignment(table, labels.copy(), EV, _relabel(scores), panel=labels)
    assert whole is not None and same is not None
    assert same.ci == whole.ci and same.metrics == whole.metrics


def test_each_resample_recalibrates_on_every_drawn_program() -> None:
    """By hand: τ of a row is the quantile of α_cal over all the row's drawn programs; the
    subset's drawn programs are scored with it, in their own class counts."""
    table, labels, scores = _panel(seed=7)
    members = np.sort(np.argsort(scores.alpha_cal)[:15])
    truth = labels.to_numpy()[members]
    cal = Calibration(strata=labels.to_numpy(), scored=members, relabel=_relabel(scores))
    rng = np.random.default_rng(3)
    indices, got = calibrated_resamples(truth, cal, 40, rng)
    assert indices.shape == got.shape == (40, 15)
    again = np.random.default_rng(3)
    from mcu_exp.evaluation.bootstrap import _draw, calibration_groups

    drawn = _draw(calibration_groups(truth, cal), 40, again)
    assert drawn.shape == (40, 50)
    for r in range(40):
        tau = threshold(scores.alpha_cal[drawn[r]], DECISION.epsilon)
        expected = (scores.alpha_test[drawn[r, :15]] <= tau).astype(int)
        assert got[r].tolist() == expected.tolist()
        assert members[indices[r]].tolist() == drawn[r, :15].tolist()
        assert truth[indices[r]].sum() == truth.sum()  # the subset's classes keep their counts


@pytest.mark.parametrize("missing", [0, 5])
def test_reference_programs_without_panel_label_are_drawn_in_a_stratum_of_their_own(missing: int) -> None:
    table, labels, scores = _panel(seed=9)
    panel = labels.iloc[missing:]
    reference = labels.iloc[::2]
    report = alignment(table, reference, EV, _relabel(scores), panel=panel)
    assert report is not None and report.n == len(reference)
    assert _inside(report.metrics["f1"], report.ci["f1"])
