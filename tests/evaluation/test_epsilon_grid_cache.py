"""The ε grid of the sensitivity curves is computed once per input under the result cache: the
jobs of a decision-only sweep (another ε, τ or reader group) read it back; other scores,
labels, ε grid or quantile rule compute a new one."""

from __future__ import annotations

import pickle
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mcu_exp.evaluation import DegenerateMetricWarning
from mcu_exp.evaluation.sensitivity import decision_grids

EPSILONS = [0.05, 0.1, 0.2, 0.3]


def _inputs(seed: int = 0) -> tuple[np.ndarray, pd.Series, dict[str, pd.Series]]:
    rng = np.random.default_rng(seed)
    ids = [f"p{i}" for i in range(40)]
    y = pd.Series((rng.random(40) < 0.55).astype(int), index=ids)
    alpha = pd.Series(np.clip(0.5 - 0.15 * y.to_numpy() + rng.normal(0.0, 0.1, 40), 0.0, 1.0), index=ids)
    labels = {"all": y, "students": y.iloc[:25]}
    return rng.random(30), alpha, labels


def _grids(cache: Path | None, tau: float, seed: int = 0, **changes: object) -> tuple[pd.DataFrame, pd.DataFrame]:
    alpha_cal, alpha_test, labels = _inputs(seed)
    settings: dict[str, object] = {"threshold_points": 11, "epsilons": EPSILONS, "quantile_rule": "empirical"}
    settings.update(changes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateMetricWarning)
        return decision_grids(alpha_cal, alpha_test, labels, tau=tau, cache_dir=cache, **settings)  # type: ignore[arg-type]


def _entries(cache: Path) -> list[Path]:
    return sorted((cache / "results").glob("*/*.pkl"))


def test_a_second_job_reads_the_epsilon_grid_back(tmp_path: Path) -> None:
    _, first = _grids(tmp_path, tau=0.4)
    entries = _entries(tmp_path)
    assert len(entries) == 2  # one per reader group
    for entry in entries:  # mark the stored grids: a job that recomputed would not see the mark
        frame = pickle.loads(entry.read_bytes())
        frame["coverage"] = -1.0
        entry.write_bytes(pickle.dumps(frame))
    thresholds, second = _grids(tmp_path, tau=0.45)  # another job's τ: the same ε grid
    assert _entries(tmp_path) == entries
    assert (second["coverage"] == -1.0).all()
    assert 0.45 in thresholds["threshold"].to_numpy()  # the threshold grid is still the job's own


def test_the_cached_epsilon_grid_is_the_computed_one(tmp_path: Path) -> None:
    fresh = _grids(None, tau=0.4)[1]
    _grids(tmp_path, tau=0.4)
    again = _grids(tmp_path, tau=0.3)[1]
    pd.testing.assert_frame_equal(again, fresh, check_exact=True)


@pytest.mark.parametrize(
    "change",
    [{"seed": 1}, {"epsilons": [0.05, 0.1]}, {"quantile_rule": "conformal"}],
    ids=["scores and labels", "epsilon grid", "quantile rule"],
)
def test_other_inputs_compute_a_new_epsilon_grid(tmp_path: Path, change: dict[str, object]) -> None:
    _grids(tmp_path, tau=0.4)
    before = _entries(tmp_path)
    changed = _grids(tmp_path, tau=0.4, **change)[1]
    assert len(_entries(tmp_path)) == len(before) + 2
    pd.testing.assert_frame_equal(changed, _grids(None, tau=0.4, **change)[1], check_exact=True)
