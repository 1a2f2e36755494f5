"""Decision-independent results are computed once and read back from ``cache.dir/results``:
keys by content, byte-identical values, recomputation on a miss or a damaged entry."""

from __future__ import annotations

import logging
import pickle
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mcu_exp.config import DatasetConfig, EvaluationConfig, LabelsConfig
from mcu_exp.data import human_labels, load_dataset
from mcu_exp.data.labels import HumanLabels
from mcu_exp.job.alignment import alignment
from mcu_exp.job.measures import attach_ceilings, measures_and_baselines, write_rejection
from mcu_exp.proxies.base import ProxyOutcome
from mcu_exp.result_cache import RESULTS_DIR, cached_result, content_hash

EV = EvaluationConfig(bootstrap_resamples=1000, permutations=500, plots=False, baselines="none")


def entries(cache: Path) -> list[Path]:
    return sorted((cache / RESULTS_DIR).rglob("*.pkl"))


def test_content_hash_follows_values_dtypes_order_and_names() -> None:
    frame = pd.DataFrame({"a": [1.0, 2.0], "b": [3.0, np.nan]}, index=pd.Index(["p1", "p2"], name="program_id"))
    same = content_hash(frame.copy(), 7, "x")
    assert content_hash(frame, 7, "x") == same
    changed = frame.copy()
    changed.iloc[0, 0] = np.nextafter(1.0, 2.0)  # the last bit
    others = [
        changed,
        frame[["b", "a"]],
        frame.astype({"a": "float32"}),
        frame.rename_axis("id"),
        frame.rename(columns={"a": "c"}),
    ]
    assert all(content_hash(other, 7, "x") != same for other in others)
    assert content_hash(frame, 7.0, "x") != same and content_hash(frame, 7, "y") != same
    assert content_hash([1, 2]) != content_hash((1, 2)) != content_hash(["1", "2"])
    with pytest.raises(TypeError, match="cannot key on a object"):
        content_hash(object())


def test_string_arrays_keep_their_digests_so_stored_entries_still_hit() -> None:
    """Ids and names (object arrays of strings, hashed in one go) give the digests they gave
    item by item, the same as mixed arrays: entries already in a cache keep being found."""
    assert content_hash(np.array(["p1", "ε·x", ""], dtype=object)) == (
        "cf36c7d71136bf6e0e3d56007ad560b1ea013d3bc1a0db84e86dd9f52c2e5f92"
    )
    assert content_hash(pd.Index(["a", "b"], name="program_id")) == (
        "ab4b9455bf0783625a3f6b58479f791f85341949b09effaddcf49fcda927625a"
    )
    assert content_hash(np.array(["a", 1, None], dtype=object)) == (
        "cd417b279bceb124bd45f942634c61b140e7d39f4a3a14485e36dc0f33adfacf"
    )


def test_computed_once_then_read_back(tmp_path: Path) -> None:
    calls: list[int] = []

    def compute() -> pd.DataFrame:
        calls.append(1)
        frame = pd.DataFrame({"x": np.random.default_rng(len(calls)).random(5)})
        frame.attrs["seed"] = 3
        return frame

    first = cached_result(tmp_path, "demo", [1, "a"], compute, code=("mcu_exp.result_cache",))
    again = cached_result(tmp_path, "demo", [1, "a"], compute, code=("mcu_exp.result_cache",))
    assert len(calls) == 1 and again.to_csv() == first.to_csv() and again.attrs == {"seed": 3}
    cached_result(tmp_path, "demo", [2, "a"], compute)  # another input: another entry
    assert len(calls) == 2 and len(entries(tmp_path)) == 2
    cached_result(None, "demo", [1, "a"], compute)  # no cache folder: always computed
    assert len(calls) == 3


def test_a_damaged_entry_is_recomputed_and_an_unwritable_folder_only_warns(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cached_result(tmp_path, "demo", [1], lambda: 41)
    (entry,) = entries(tmp_path)
    entry.write_bytes(b"not a pickle")
    assert cached_result(tmp_path, "demo", [1], lambda: 42) == 42
    assert pickle.loads(entry.read_bytes()) == 42
    blocked = tmp_path / "file"
    blocked.write_text("a file where the cache folder should be")
    with caplog.at_level(logging.WARNING, logger="mcu_exp"):
        assert cached_result(blocked, "demo", [1], lambda: 43) == 43
    assert "result cache: could not store demo" in caplog.text


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


def test_the_measure_table_is_reused_byte_for_byte(tmp_path: Path) -> None:
    outcome, labels = synthetic()
    fresh = measures_and_baselines(outcome, None, labels, EV)
    stored = measures_and_baselines(outcome, None, labels, EV, tmp_path)
    (entry,) = entries(tmp_path)
    reused = measures_and_baselines(outcome, None, labels, EV, tmp_path)
    assert fresh is not None and stored is not None and reused is not None
    assert reused.to_csv() == stored.to_csv() == fresh.to_csv() and reused.attrs == fresh.attrs
    # The second job read the entry: what the file holds is what it returns.
    marked = reused.copy()
    marked.loc["measure.a", "auc_score"] = -1.0
    entry.write_bytes(pickle.dumps(marked))
    assert measures_and_baselines(outcome, None, labels, EV, tmp_path).loc["measure.a", "auc_score"] == -1.0
    # Other inputs (another seed, other scores) are other entries.
    measures_and_baselines(outcome, None, labels, EvaluationConfig(**{**vars(EV), "seed": 1}), tmp_path)
    measures_and_baselines(synthetic(3)[0], None, labels, EV, tmp_path)
    assert len(entries(tmp_path)) == 3


def test_the_prr_interval_is_reused(tmp_path: Path) -> None:
    outcome, labels = synthetic()
    fresh = write_rejection(outcome, labels, tmp_path, EV)
    assert write_rejection(outcome, labels, tmp_path, EV, tmp_path / "cache") == fresh
    (entry,) = entries(tmp_path / "cache")
    entry.write_bytes(pickle.dumps((0.1, 0.2, 0.3)))
    found = write_rejection(outcome, labels, tmp_path, EV, tmp_path / "cache")
    assert found is not None and (found["prr_ci_low"], found["prr_ci_high"], found["prr_perm_p"]) == (0.1, 0.2, 0.3)
    assert found["prr"] == fresh["prr"]  # the point value is always computed


def bounds(cache: Path) -> list[Path]:
    """The entries holding a job's ceiling figures (per label set), not their humans' side."""
    return [e for e in entries(cache) if isinstance(pickle.loads(e.read_bytes()), dict)]


def test_the_humans_ceiling_is_reused_and_keyed_by_group_and_splits(tmp_path: Path, data_root: Path) -> None:
    """The ceiling and the proxy against it depend on the evaluations, the label rule, the
    groups, the splits, the resamples and the proxy's score, never on the decision: a sweep's
    later jobs read them back, the same reliability.csv."""
    dataset = load_dataset(DatasetConfig(name="scalabrino", format="scalabrino", root=str(data_root / "scalabrino")))
    labels_cfg = LabelsConfig()
    labels = human_labels(dataset, labels_cfg)
    outcome, _ = synthetic()
    table = outcome.table.set_axis(labels.labels.index[: len(outcome.table)])
    ev = EvaluationConfig(
        bootstrap_resamples=1000, permutations=0, plots=False, ceiling_splits=200, ceiling_resamples=100
    )
    reports = {"all": alignment(table, labels.labels, ev)}
    cache = tmp_path / "cache"
    runs = {}
    score = table["score"].astype(float)
    for name, folder in [("fresh", None), ("stored", cache), ("reused", cache)]:
        (tmp_path / name).mkdir()
        runs[name] = attach_ceilings(reports, dataset, labels_cfg, ev, tmp_path / name, folder, score)["all"].ceiling
    csvs = {(tmp_path / name / "reliability.csv").read_bytes() for name in runs}
    assert len(csvs) == 1 and runs["reused"] == runs["stored"]
    assert str(runs["fresh"]) == str(runs["reused"])
    (entry,) = bounds(cache)
    found = pickle.loads(entry.read_bytes())
    found["all"] = {**found["all"], "ceiling.splits": 7.0}  # what the entry holds is what a job reads
    entry.write_bytes(pickle.dumps(found))
    (tmp_path / "marked").mkdir()
    attach_ceilings(reports, dataset, labels_cfg, ev, tmp_path / "marked", cache, score)
    assert pd.read_csv(tmp_path / "marked" / "reliability.csv")["ceiling.splits"].tolist() == [7]
    attach_ceilings(reports, dataset, LabelsConfig(group="professional"), ev, tmp_path / "marked", cache, score)
    attach_ceilings(reports, dataset, labels_cfg, replace(ev, ceiling_splits=100), tmp_path / "marked", cache, score)
    attach_ceilings(reports, dataset, labels_cfg, ev, tmp_path / "marked", cache, score + 1.0)
    assert len(bounds(cache)) == 4
    # the humans' side on the scored programs: one per label set and splits, whatever the score
    assert len(entries(cache)) - len(bounds(cache)) == 3
