"""Paired intervals recalibrate each calibrated run in every resample, as its own intervals do:
checked against a per-row loop that computes the empirical quantile by its definition and F1
with scikit-learn; runs without calibration scores, or whose settings do not give back their
labels, keep their labels fixed and say why."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import f1_score

from mcu_exp.config import DecisionConfig
from mcu_exp.evaluation.bootstrap import stratified_indices
from mcu_exp.evaluation.paired import compare_many, compare_runs
from mcu_exp.evaluation.paired_recalibration import (
    LABELS_FIXED,
    RECALIBRATED,
    RunCalibration,
    arm,
    decision_from,
    paired_arms,
    prepare,
)

N = 50


def empirical_tau(cal: np.ndarray, epsilon: float) -> float:
    """The ⌈n(1 − ε)⌉-th smallest calibration α (ε chosen so that n(1 − ε) is a whole number)."""
    k = round(cal.size * (1 - epsilon))
    return float(np.sort(cal)[k - 1])


def run(seed: int, epsilon: float, truth: np.ndarray, ids: list[str]) -> tuple[pd.DataFrame, RunCalibration]:
    """A calibrated run: per_program.csv (labels α_test ≤ τ) and its scores.csv and settings."""
    rng = np.random.default_rng(seed)
    alpha_cal = rng.uniform(0, 1, truth.size)
    alpha_test = np.clip(alpha_cal + rng.normal(0, 0.25, truth.size) - 0.3 * truth, 0, 1.5)
    label = (alpha_test <= empirical_tau(alpha_cal, epsilon)).astype(int)
    index = pd.Index(ids, name="program_id")
    per_program = pd.DataFrame({"human_label": truth, "label": label, "score": -alpha_test}, index=index)
    scores = pd.DataFrame({"human_label": truth, "alpha_cal": alpha_cal, "alpha_test": alpha_test}, index=index)
    return per_program, RunCalibration(scores, DecisionConfig(epsilon=epsilon, quantile="empirical"))


@pytest.fixture(scope="module")
def two_runs() -> dict[str, object]:
    truth = np.random.default_rng(0).integers(0, 2, N)
    ids = [f"p{i:02d}" for i in range(N)]
    (fa, ca), (fb, cb) = run(1, 0.2, truth, ids), run(2, 0.4, truth, ids)
    return {"truth": truth, "ids": ids, "fa": fa, "ca": ca, "fb": fb, "cb": cb}


def test_delta_f1_interval_recalibrates_both_arms_on_the_same_resamples(two_runs: dict) -> None:
    truth, fa, fb, ca, cb = (two_runs[k] for k in ("truth", "fa", "fb", "ca", "cb"))
    got = compare_runs(fa, fb, resamples=1000, seed=4, calibration_a=ca, calibration_b=cb)
    assert (got.labels_a, got.labels_b) == (RECALIBRATED, RECALIBRATED)
    assert got.note_a == "conformal, ε = 0.2, empirical quantile"
    idx = stratified_indices(truth, 1000, np.random.default_rng(4))  # the paired bootstrap's draws
    deltas = []
    for rows in idx:
        f1s = []
        for cal in (ca, cb):
            alpha_cal, alpha_test = cal.scores["alpha_cal"].to_numpy(), cal.scores["alpha_test"].to_numpy()
            labels = alpha_test[rows] <= empirical_tau(alpha_cal[rows], cal.decision.epsilon)
            f1s.append(f1_score(truth[rows], labels, zero_division=np.nan))
        deltas.append(f1s[0] - f1s[1])
    expected = np.nanpercentile(deltas, [2.5, 97.5])
    assert (got.delta_f1.low, got.delta_f1.high) == pytest.approx(expected, abs=1e-12)
    assert got.delta_f1.value == pytest.approx(f1_score(truth, fa["label"]) - f1_score(truth, fb["label"]))
    fixed = compare_runs(fa, fb, resamples=1000, seed=4)  # labels fixed: the old, narrower interval
    assert (fixed.labels_a, fixed.labels_b) == (LABELS_FIXED, LABELS_FIXED)
    assert got.delta_f1.high - got.delta_f1.low > fixed.delta_f1.high - fixed.delta_f1.low
    assert fixed.delta_f1.value == got.delta_f1.value and fixed.mcnemar == got.mcnemar


def test_a_run_without_calibration_keeps_its_labels_and_says_why(two_runs: dict) -> None:
    fa, fb, ca = two_runs["fa"], two_runs["fb"], two_runs["ca"]
    got = compare_runs(fa, fb, resamples=1000, seed=4, calibration_a=ca)
    assert (got.labels_a, got.labels_b, got.note_b) == (RECALIBRATED, LABELS_FIXED, "no calibration scores")
    table = compare_many({"A": fa, "B": fb}, resamples=1000, seed=4, calibrations={"A": ca})
    assert (table.iloc[0]["ci_labels_a"], table.iloc[0]["ci_labels_b"]) == (RECALIBRATED, LABELS_FIXED)
    assert table.iloc[0]["delta_f1_ci_low"] == got.delta_f1.low


def test_settings_that_do_not_give_back_the_labels_keep_them_fixed(two_runs: dict) -> None:
    fa, ca, ids = two_runs["fa"], two_runs["ca"], two_runs["ids"]
    wrong = RunCalibration(ca.scores, DecisionConfig(epsilon=0.4, quantile="empirical"))  # the run used 0.2
    got = arm(wrong, ids, fa["label"].to_numpy(), seed=0)
    assert got.labels == LABELS_FIXED and got.relabel is None
    assert got.note.startswith(
        "recalibrating with its settings (conformal, ε = 0.4, empirical quantile) gives other labels than the run's on "
    )
    theta = RunCalibration(ca.scores, DecisionConfig(rule="theta"))
    assert arm(theta, ids, fa["label"].to_numpy(), seed=0).note == "rule theta calibrates no threshold"
    short = arm(ca, [*ids, "elsewhere"], np.r_[fa["label"].to_numpy(), 1], seed=0)
    assert short.note == "no calibration scores for 1 of 51 shared programs"


def test_programs_the_other_run_lacks_still_calibrate(two_runs: dict) -> None:
    """A's τ came from all 50 programs; compared on 40 of them, each resample still draws all 50."""
    fa, ca, ids = two_runs["fa"], two_runs["ca"], two_runs["ids"]
    shared = ids[:40]
    got = arm(ca, shared, fa["label"].to_numpy()[:40], seed=3)
    assert got.labels == RECALIBRATED
    idx = stratified_indices(two_runs["truth"][:40], 50, np.random.default_rng(1))
    labels = got.relabel(idx)
    assert labels.shape == (50, 40) and set(np.unique(labels)) <= {0, 1}
    identity = np.tile(np.arange(40), (3, 1))
    assert 0 < labels.mean() < 1 and not (got.relabel(identity) == labels[:3]).all()


def test_decision_settings_from_params_or_a_config_section() -> None:
    params = {
        "decision.rule": "conformal",
        "decision.epsilon": "0.1",
        "decision.quantile": "conformal",
        "decision.theta": "0.45",
        "model.name": "x",
    }
    assert decision_from(params) == DecisionConfig(epsilon=0.1, quantile="conformal", rule="conformal", theta=0.45)
    assert decision_from({"rule": "p1_and_theta", "epsilon": 0.2, "quantile": "empirical", "theta": 0.3}).theta == 0.3
    assert decision_from({"decision.rule": "conformal"}) is None
    assert decision_from({"rule": "conformal", "epsilon": "abc", "quantile": "empirical"}) is None
    assert not math.isnan(DecisionConfig().theta)


def unlabelled(frame: pd.DataFrame, calibration: RunCalibration, count: int) -> tuple[pd.DataFrame, RunCalibration]:
    """The run with its first ``count`` programs' human labels removed (a reader group that did
    not read them): they still calibrate τ, but no pair can share them."""
    frame, scores = frame.copy(), calibration.scores.copy()
    frame.iloc[:count, frame.columns.get_loc("human_label")] = np.nan
    scores.iloc[:count, scores.columns.get_loc("human_label")] = np.nan
    return frame, RunCalibration(scores, calibration.decision)


def test_a_run_compared_with_itself_differs_by_exactly_zero_with_unlabelled_programs(two_runs: dict) -> None:
    """Programs both runs calibrated on but without a human label are drawn jointly: each
    resample gives both arms the same calibration set, so the run against itself is 0 in every
    resample (they were drawn apart: ΔF1 in [-0.11, 0.11] with 35 of 50 unlabelled)."""
    for count in (10, 35):
        fa, ca = unlabelled(two_runs["fa"], two_runs["ca"], count)
        got = compare_runs(fa, fa, resamples=1000, seed=4, calibration_a=ca, calibration_b=ca)
        assert (got.labels_a, got.labels_b) == (RECALIBRATED, RECALIBRATED)
        assert (got.delta_f1.low, got.delta_f1.high) == (0.0, 0.0)
        assert (got.delta_accuracy.low, got.delta_accuracy.high) == (0.0, 0.0)
        table = compare_many({"x": fa, "y": fa}, resamples=1000, seed=4, calibrations={"x": ca, "y": ca})
        assert (table.iloc[0]["delta_f1_ci_low"], table.iloc[0]["delta_f1_ci_high"]) == (0.0, 0.0)


def test_two_settings_on_one_calibration_set_recalibrate_on_the_same_draws(two_runs: dict) -> None:
    """ε = 0.2 and ε = 0.4 on the same scores: on one calibration multiset the larger ε gives
    a lower τ, so its labels are never 1 where the smaller ε's are 0. That holds in every
    resample row only if both arms drew the same unlabelled programs."""
    fa, ca = unlabelled(two_runs["fa"], two_runs["ca"], 35)
    loose = RunCalibration(ca.scores, DecisionConfig(epsilon=0.4, quantile="empirical"))
    ids = [str(i) for i in fa.index[35:]]
    alpha_test = ca.scores["alpha_test"].to_numpy()[35:]
    tau_loose = empirical_tau(ca.scores["alpha_cal"].to_numpy(), 0.4)
    strict_arm, loose_arm = paired_arms(
        prepare(ca, ids, fa["label"].to_numpy()[35:]),
        prepare(loose, ids, (alpha_test <= tau_loose).astype(int)),
        seed=4,
    )
    assert (strict_arm.labels, loose_arm.labels) == (RECALIBRATED, RECALIBRATED)
    idx = stratified_indices(two_runs["truth"][35:], 400, np.random.default_rng(1))
    strict, lax = strict_arm.relabel(idx), loose_arm.relabel(idx)
    assert (lax <= strict).all() and (lax < strict).any()
