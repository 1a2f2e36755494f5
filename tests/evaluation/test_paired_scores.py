"""A paired comparison computes each run's score side (AUC(score) and PRR, in every resample and
on all programs) once per distinct score: the runs of a sweep over ε share their score, and
their report's comparisons give bit for bit the numbers of computing both sides of every pair."""

from __future__ import annotations

from typing import cast

import numpy as np
import pandas as pd

from mcu_exp.evaluation import paired_scores
from mcu_exp.evaluation.bootstrap import stratified_indices
from mcu_exp.evaluation.paired import compare_many, paired_bootstrap_distribution
from mcu_exp.evaluation.registry import Ranking, metric
from mcu_exp.evaluation.rejection import prediction_rejection_ratio, prr_many


def both_sides(truth: np.ndarray, a: np.ndarray, b: np.ndarray, resamples: int, seed: int) -> dict[str, np.ndarray]:
    """ΔAUC and ΔPRR computed side by side in each resample, nothing kept (the rows drawn as the
    paired bootstrap draws them: one chunk)."""
    auc = metric("auc_score").compute
    idx = stratified_indices(truth, resamples, np.random.default_rng(seed))
    rows = truth[idx]
    return {
        "delta_auc": np.asarray(auc(Ranking(a, idx, rows))) - np.asarray(auc(Ranking(b, idx, rows))),  # type: ignore[arg-type]
        "delta_prr": prr_many(a[idx], rows) - prr_many(b[idx], rows),
    }


def runs(n: int = 40, seed: int = 0) -> tuple[dict[str, pd.DataFrame], np.ndarray]:
    """Six runs on the same programs as a decision-only sweep makes them: one score shared by
    the first four (their labels differ, like thresholds at several ε), another by the last two."""
    rng = np.random.default_rng(seed)
    human = rng.integers(0, 2, n)
    shared, other = human + rng.normal(0, 1.0, n), human + rng.normal(0, 1.4, n)
    ids = [f"p{i}" for i in range(n)]
    frames = {}
    for k, (score, cut) in enumerate(
        [(shared, 0.2), (shared, 0.5), (shared, 0.8), (shared, 1.1), (other, 0.4), (other, 0.9)]
    ):
        frames[f"run{k}"] = pd.DataFrame(
            {"program_id": ids, "human_label": human, "label": (score > cut).astype(int), "score": score}
        ).set_index("program_id")
    return frames, human


def test_equal_scores_differ_by_exactly_zero_and_unequal_ones_as_when_computed_side_by_side() -> None:
    frames, human = runs()
    a, b = frames["run0"]["score"].to_numpy(), frames["run4"]["score"].to_numpy()
    la, lb = frames["run0"]["label"].to_numpy(), frames["run1"]["label"].to_numpy()
    for sa, sb in ((a, a), (a, b), (b, a)):
        got = paired_bootstrap_distribution(human, la, lb, sa, sb, resamples=1000, seed=3)
        for key, values in both_sides(human, sa, sb, 1000, 3).items():
            assert np.array_equal(got[key], values, equal_nan=True)  # bit for bit
    same = paired_bootstrap_distribution(human, la, lb, a, a.copy(), resamples=1000, seed=3)
    assert not same["delta_auc"].any() and not np.nan_to_num(same["delta_prr"]).any()


def test_a_sweeps_comparisons_compute_each_distinct_score_once_with_the_same_rows() -> None:
    frames, human = runs(seed=1)
    paired_scores._kept.clear()
    table = compare_many(frames, resamples=1000, seed=5)
    kept = [key for key in paired_scores._kept if cast(tuple, key)[0] == "resamples"]
    assert len(table) == 15 and len(kept) == 2  # 15 pairs, two distinct scores
    for _, row in table.iterrows():
        a, b = (frames[row[name]]["score"].to_numpy() for name in ("run_a", "run_b"))
        paired_scores._kept.clear()  # each pair on its own, every side computed
        alone = compare_many({row["run_a"]: frames[row["run_a"]], row["run_b"]: frames[row["run_b"]]}, 1000, 5)
        columns = [c for c in table.columns if not c.endswith("_holm")]
        assert alone[columns].iloc[0].equals(row[columns])
        prr = prediction_rejection_ratio(human, a) - prediction_rejection_ratio(human, b)
        assert row["delta_prr"] == prr
        if np.array_equal(a, b):
            assert (row["delta_auc_score"], row["delta_auc_score_ci_low"], row["delta_auc_score_ci_high"]) == (0, 0, 0)
