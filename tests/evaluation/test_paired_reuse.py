"""A sweep report's paired comparisons build each pair once (the label groups and the
comparisons share it) and prepare each recalibrated run once per set of shared programs, not
once per pair; the numbers are those of comparing every pair on its own."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from mcu_exp.calibration import RULES, RuleDecision, Scores, register_rule
from mcu_exp.calibration.threshold import thresholds
from mcu_exp.config import DecisionConfig
from mcu_exp.evaluation.paired import compare_many, compare_runs
from mcu_exp.evaluation.paired_recalibration import RECALIBRATED, RunCalibration
from mcu_exp.evaluation.pairing import Pairings
from mcu_exp.report.comparisons import label_groups

N = 40
RULE = "counted_conformal"


@pytest.fixture
def prepared() -> Iterator[list[int]]:
    """A conformal rule registered for these tests that counts its recalibrations on all of a
    run's programs at once (one row of indices): what preparing a run's arm does, once."""
    seen: list[int] = []

    def relabel(scores: Scores, cfg: DecisionConfig, indices: np.ndarray) -> np.ndarray:
        if indices.shape[0] == 1:
            seen.append(indices.shape[1])
        cal, test = np.asarray(scores["alpha_cal"])[indices], np.asarray(scores["alpha_test"])[indices]
        taus = thresholds(cal, float(cfg.epsilon), str(cfg.quantile))
        return (test <= taus[:, None]).astype(int)

    @register_rule(RULE, needs=("alpha_cal", "alpha_test"), relabel=relabel)
    def counted(scores: Scores, cfg: DecisionConfig) -> RuleDecision:
        labels = relabel(scores, cfg, np.arange(len(scores["alpha_test"]))[None, :])[0]
        return RuleDecision(RULE, labels)

    yield seen
    RULES.remove(RULE)


def runs(count: int, short: int | None = None) -> tuple[dict[str, pd.DataFrame], dict[str, RunCalibration]]:
    """``count`` calibrated runs on the same programs and human labels (run ``short`` on the
    first 30 programs only), each labelled by recalibrating on all its programs."""
    truth = np.random.default_rng(0).integers(0, 2, N)
    frames, calibrations = {}, {}
    for i in range(count):
        rng = np.random.default_rng(i + 1)
        alpha_cal = rng.uniform(0, 1, N)
        alpha_test = np.clip(alpha_cal + rng.normal(0, 0.25, N) - 0.3 * truth, 0, 1.5)
        epsilon = 0.1 + 0.1 * i
        tau = thresholds(alpha_cal[None, :], epsilon, "empirical")[0]
        keep = slice(0, 30 if i == short else N)
        index = pd.Index([f"p{j:02d}" for j in range(N)][keep], name="program_id")
        label = (alpha_test <= tau).astype(int)
        frames[f"run{i}"] = pd.DataFrame(
            {"human_label": truth[keep], "label": label[keep], "score": -alpha_test[keep]}, index=index
        )
        scores = pd.DataFrame({"human_label": truth, "alpha_cal": alpha_cal, "alpha_test": alpha_test})
        scores.index = pd.Index([f"p{j:02d}" for j in range(N)], name="program_id")
        decision = replace(DecisionConfig(epsilon=epsilon, quantile="empirical"), rule=RULE)
        calibrations[f"run{i}"] = RunCalibration(scores, decision)
    return frames, calibrations


def one_by_one(frames: dict[str, pd.DataFrame], calibrations: dict[str, RunCalibration]) -> pd.DataFrame:
    """Every pair compared on its own (:func:`compare_runs`), as rows of :func:`compare_many`."""
    names = list(frames)
    rows = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            got = compare_runs(frames[a], frames[b], 1000, 3, 0.95, (a, b), calibrations[a], calibrations[b])
            rows.append({"run_a": a, "run_b": b, **got.row()})
    return pd.DataFrame(rows)


def test_each_run_is_prepared_once_for_all_its_pairs(prepared: list[int]) -> None:
    frames, calibrations = runs(4)
    table = compare_many(frames, 1000, 3, 0.95, calibrations)
    assert len(table) == 6 and set(table["ci_labels_a"]) == {RECALIBRATED}
    assert prepared == [N] * 4  # one per run, not one per side of each of the 6 pairs
    prepared.clear()
    expected = one_by_one(frames, calibrations)
    assert len(prepared) == 12
    pd.testing.assert_frame_equal(table[expected.columns], expected, check_exact=True)


def test_a_run_is_prepared_again_for_other_shared_programs(prepared: list[int]) -> None:
    frames, calibrations = runs(3, short=2)  # run2 shares 30 programs with the others
    table = compare_many(frames, 1000, 3, 0.95, calibrations)
    # run0 and run1 once for the 40 programs they share and again for the 30 each shares with run2;
    # run2 once for both its pairs (each recalibration runs on all of a run's 40 scored programs)
    assert prepared == [N] * 5
    expected = one_by_one(frames, calibrations)
    pd.testing.assert_frame_equal(table[expected.columns], expected, check_exact=True)


def test_the_comparisons_use_the_pairs_the_label_groups_built() -> None:
    frames, _ = runs(3)
    pairings = Pairings(frames)
    groups, _ = label_groups(frames, pairings)
    assert groups == [["run0", "run1", "run2"]] and set(pairings.built) == {
        ("run0", "run1"),
        ("run0", "run2"),
        ("run1", "run2"),
    }
    built = pairings.built[("run0", "run1")]
    pairings.built[("run0", "run1")] = replace(
        built,
        program_ids=built.program_ids[:20],
        truth=built.truth[:20],
        label_a=built.label_a[:20],
        label_b=built.label_b[:20],
        score_a=built.score_a[:20],
        score_b=built.score_b[:20],
    )  # marked: a comparison that paired the runs again would see all 40 programs
    table = compare_many(frames, 1000, 0, 0.95, pairings=pairings)
    assert table["n"].tolist() == [20, N, N]
    assert compare_many(frames, 1000, 0, 0.95)["n"].tolist() == [N, N, N]  # its own pairs without them
