"""The results table says how many programs the proxy labelled High beside the humans' count,
warns when the labelling is nearly constant, and the verdict says when the humans' own F1 lies
below the always-1 baseline's (then "beats always-1" is not a fair bar)."""

from __future__ import annotations

import dataclasses

import numpy as np

from mcu_exp.evaluation import evaluate, render_table


def _report(pred: np.ndarray):  # -> an AlignmentReport
    truth = np.array([1] * 30 + [0] * 20)
    score = truth + np.random.default_rng(0).normal(0, 1, truth.size)
    return evaluate(truth, pred, score, resamples=1000, permutations=0)


def test_the_table_counts_programs_labelled_high_and_flags_a_near_constant_labelling() -> None:
    mixed = np.array([1] * 20 + [0] * 10 + [1] * 5 + [0] * 15)
    text = " ".join(render_table(_report(mixed)).split())
    assert "Labelled High: 25 of 50 programs (50.0%); the humans: 30 (60.0%)" in text and "nearly constant" not in text
    almost = np.ones(50, dtype=int)
    almost[-2:] = 0
    text = " ".join(render_table(_report(almost)).split())
    assert "Labelled High: 48 of 50 programs (96.0%)" in text and "nearly constant" in text


def test_the_verdict_says_when_the_humans_own_f1_is_below_always_one() -> None:
    report = _report(np.array([1] * 20 + [0] * 10 + [1] * 5 + [0] * 15))
    always = report.baselines["always_positive"]["f1"]
    below = dataclasses.replace(report, ceiling={"ceiling.f1": always - 0.05, "ceiling.programs": 50.0})
    above = dataclasses.replace(report, ceiling={"ceiling.f1": always + 0.05, "ceiling.programs": 50.0})
    assert "so beating always-1 is a bar the humans do not clear" in below.verdict
    assert "a bar the humans do not clear" not in above.verdict


def test_a_constant_labelling_has_mcc_zero_without_an_interval() -> None:
    report = _report(np.zeros(50, dtype=int))
    assert report.metrics["mcc"] == 0.0 and all(np.isnan(report.ci["mcc"]))
    assert any("MCC's interval is undefined: the labelling is constant" in w for w in report.warnings)
    mixed = _report(np.array([1] * 20 + [0] * 10 + [1] * 5 + [0] * 15))
    assert all(np.isfinite(mixed.ci["mcc"]))
