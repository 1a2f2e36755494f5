"""A result-cache entry of the wrong kind (a dict where a table is expected, a pair where a
triple is, ``None``) or a damaged one is recomputed and replaced, never a traceback: each of
the job's cached steps, run on real entries in a real cache folder, gives the clean run's
result again after its entries were overwritten."""

from __future__ import annotations

import pickle
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from mcu_exp.config import DatasetConfig, EvaluationConfig, LabelsConfig
from mcu_exp.data import human_labels, load_dataset
from mcu_exp.data.labels import HumanLabels
from mcu_exp.evaluation import DegenerateMetricWarning
from mcu_exp.evaluation.sensitivity import decision_grids
from mcu_exp.job.alignment import alignment
from mcu_exp.job.measures import attach_ceilings, measures_and_baselines, write_rejection
from mcu_exp.proxies.base import ProxyOutcome
from mcu_exp.result_cache import RESULTS_DIR

EV = EvaluationConfig(bootstrap_resamples=1000, permutations=500, plots=False, baselines="none", ceiling_splits=50)
WRONG = {
    "a dict": pickle.dumps({"wrong": "kind"}),
    "a pair": pickle.dumps((0.1, 0.2)),
    "none": pickle.dumps(None),
    "a string": pickle.dumps("measure_table"),
    "damaged": b"\x80\x05not a pickle",
}


def synthetic(seed: int = 2) -> tuple[ProxyOutcome, HumanLabels]:
    rng = np.random.default_rng(seed)
    ids = pd.Index([f"p{i}" for i in range(50)], name="program_id")
    truth = pd.Series([1] * 26 + [0] * 24, index=ids)
    score = truth + rng.normal(0, 1.5, 50)
    table = pd.DataFrame(
        {"label": truth, "score": score, "measure.a": score + rng.normal(0, 1, 50), "measure.b": rng.normal(0, 1, 50)},
        index=ids,
    )
    labels = HumanLabels(
        labels=truth,
        fraction=truth.astype(float),
        n_evaluators=pd.Series(9, index=ids),
        dropped=[],
        group="all",
        correctness=truth.astype(float),
    )
    return ProxyOutcome(table=table), labels


def measures(cache: Path | None, out: Path) -> str:
    outcome, labels = synthetic()
    table = measures_and_baselines(outcome, None, labels, EV, cache)
    assert table is not None
    return str(table.to_csv())


def rejection(cache: Path | None, out: Path) -> str:
    outcome, labels = synthetic()
    return repr(write_rejection(outcome, labels, out, EV, cache))


def score_parts(cache: Path | None, out: Path) -> str:
    outcome, labels = synthetic()
    report = alignment(outcome.table, labels.labels, EV, cache_dir=cache)
    assert report is not None
    return repr((report.metrics, report.ci, report.tests))


def epsilon_grid(cache: Path | None, out: Path) -> str:
    rng = np.random.default_rng(0)
    ids = [f"p{i}" for i in range(40)]
    y = pd.Series((rng.random(40) < 0.55).astype(int), index=ids)
    alpha = pd.Series(np.clip(0.5 - 0.15 * y.to_numpy() + rng.normal(0.0, 0.1, 40), 0.0, 1.0), index=ids)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateMetricWarning)
        thr, eps = decision_grids(
            rng.random(30),
            alpha,
            {"all": y},
            threshold_points=11,
            epsilons=[0.05, 0.1, 0.2],
            quantile_rule="empirical",
            tau=0.4,
            cache_dir=cache,
        )
    return str(thr.to_csv()) + str(eps.to_csv())


STEPS: dict[str, Callable[[Path | None, Path], str]] = {
    "measure table": measures,
    "prr interval": rejection,
    "score bootstrap and permutation p": score_parts,
    "epsilon grid": epsilon_grid,
}


def entries(cache: Path) -> list[Path]:
    return sorted((cache / RESULTS_DIR).rglob("*.pkl"))


@pytest.mark.parametrize("wrong", list(WRONG))
@pytest.mark.parametrize("step", list(STEPS))
def test_a_wrong_kind_of_entry_is_recomputed_and_replaced(step: str, wrong: str, tmp_path: Path) -> None:
    run = STEPS[step]
    clean = run(None, tmp_path)
    cache = tmp_path / "cache"
    assert run(cache, tmp_path) == clean
    found = entries(cache)
    assert found
    for entry in found:  # the entries under the very keys the step uses
        entry.write_bytes(WRONG[wrong])
    assert run(cache, tmp_path) == clean
    for entry in found:  # replaced by the recomputed value, which the next run reads back
        assert entry.read_bytes() != WRONG[wrong]
    assert run(cache, tmp_path) == clean


@pytest.mark.parametrize("wrong", ["a dict", "a list"])
def test_a_wrong_kind_of_ceiling_entry_is_recomputed(wrong: str, tmp_path: Path, data_root: Path) -> None:
    dataset = load_dataset(DatasetConfig(name="scalabrino", format="scalabrino", root=str(data_root / "scalabrino")))
    labels_cfg = LabelsConfig()
    labels = human_labels(dataset, labels_cfg)
    outcome, _ = synthetic()
    table = outcome.table.set_axis(labels.labels.index[: len(outcome.table)])
    reports = {"all": alignment(table, labels.labels, EV)}
    values: dict[str, Any] = {"a dict": {"all": "not a reliability"}, "a list": [1, 2]}
    outputs = []
    for name, cache in [("clean", None), ("stored", tmp_path / "cache"), ("wrong", tmp_path / "cache")]:
        if name == "wrong":
            for entry in entries(tmp_path / "cache"):
                entry.write_bytes(pickle.dumps(values[wrong]))
        (tmp_path / name).mkdir()
        attach_ceilings(reports, dataset, labels_cfg, EV, tmp_path / name, cache)  # type: ignore[arg-type]
        outputs.append((tmp_path / name / "reliability.csv").read_bytes())
    assert outputs[0] == outputs[1] == outputs[2]
