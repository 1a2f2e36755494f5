"""Repeated (participant, program) evaluations: each participant counts once per program."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from mcu_exp.config import LabelsConfig
from mcu_exp.data import Dataset, DatasetWarning, human_labels, load_custom, load_dataset
from mcu_exp.data.types import evaluations_frame

HEADER = ["program_id", "participant_id", "correct", "total", "perceived", "group"]


def _folder(root: Path, write_csv: Any, evaluations: list[list[Any]]) -> Path:
    root.mkdir()
    write_csv(
        root / "programs.csv",
        [["program_id", "language", "code"], ["a", "c", "x;"], ["b", "c", "y;"]],
    )
    write_csv(root / "evaluations.csv", [HEADER, *evaluations])
    return root


ROWS = [
    ["a", "p1", 2, 3, 1, "phd"],
    ["a", "p2", 3, 3, 1, ""],
    ["a", "p1", 2, 3, 1, "phd"],  # identical to the first row
    ["b", "p1", 1, 2, 1, "phd"],
    ["a", "p2", 0, 3, 0, ""],  # conflicts with p2's first row on a: mean 1.5 of 3
    ["b", "p2", 2, 4, 1, ""],
    ["b", "p2", 0, 0, 0, ""],  # not asked: adds nothing, so the pair keeps 2 of 4 (mean 1 of 2)
]


def test_identical_rows_collapse_and_conflicting_rows_are_averaged(tmp_path: Path, write_csv: Any) -> None:
    root = _folder(tmp_path / "d", write_csv, ROWS)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dataset = load_custom(root)
    messages = [str(w.message) for w in caught if issubclass(w.category, DatasetWarning)]
    assert messages == [
        f"{root / 'evaluations.csv'}: 3 repeated (participant, program) pairs, each now counted "
        "once: 1 with identical rows collapsed, 2 conflicting averaged (mean correct and mean "
        "total); 7 rows, 4 evaluations"
    ]
    assert (dataset.duplicates.identical, dataset.duplicates.conflicting) == (1, 2)
    ev = dataset.evaluations
    assert list(zip(ev["program_id"], ev["participant_id"], strict=True)) == [
        ("a", "p1"),
        ("a", "p2"),
        ("b", "p1"),
        ("b", "p2"),
    ]
    assert ev["correct"].tolist() == [2, 1.5, 1, 1]
    assert ev["total"].tolist() == [3, 3, 2, 2]
    assert pd.isna(ev["perceived"].iloc[1]) and bool(ev["perceived"].iloc[0])
    assert ev["group"].iloc[0] == "phd"
    labels = human_labels(dataset, LabelsConfig())
    assert labels.n_evaluators.to_dict() == {"a": 2, "b": 2}
    assert labels.fraction.to_dict() == {"a": 1.0, "b": 1.0}


def test_no_repeats_no_warning_and_zero_counts(custom_dir: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", DatasetWarning)
        dataset = load_custom(custom_dir)
    assert (dataset.duplicates.identical, dataset.duplicates.conflicting) == (0, 0)
    assert len(dataset.evaluations) == 4


def test_a_format_plugin_gets_the_same_treatment() -> None:
    frame = evaluations_frame(["a", "a", "a"], ["p", "p", "q"], [1, 1, 0], [2, 2, 2])
    with pytest.warns(DatasetWarning, match=r"dataset made up: 1 repeated .* 1 with identical"):
        dataset = Dataset(name="made up", programs=[], evaluations=frame, questions=[], source="")
    assert len(dataset.evaluations) == 2
    assert dataset.duplicates.identical == 1


def test_counts_follow_the_programs_kept(tmp_path: Path, write_csv: Any) -> None:
    with pytest.warns(DatasetWarning):
        dataset = load_custom(_folder(tmp_path / "d", write_csv, ROWS))
    only_b = dataset.subset(["b"])
    assert (only_b.duplicates.identical, only_b.duplicates.conflicting) == (0, 1)
    assert len(only_b.evaluations) == 2


def test_scalabrino_repeats(scalabrino_dir: Path, dataset_cfg: Any, scalabrino_pairs: list[dict[str, Any]]) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dataset = load_dataset(dataset_cfg(format="scalabrino", root=str(scalabrino_dir)))
    messages = [str(w.message) for w in caught if issubclass(w.category, DatasetWarning)]
    assert len(messages) == 1
    assert messages[0].startswith(f"{scalabrino_dir / 'evaluations.csv'}: 7 repeated")
    assert "5 with identical rows collapsed, 2 conflicting averaged" in messages[0]
    assert messages[0].endswith("444 rows, 437 evaluations")
    repeated = [p for p in scalabrino_pairs if p["rows"] > 1]
    assert dataset.duplicates.identical == sum(p["identical"] for p in repeated) == 5
    assert dataset.duplicates.conflicting == sum(not p["identical"] for p in repeated) == 2
    assert len(dataset.evaluations) == len(scalabrino_pairs) == 437
    pom = dataset.evaluations.set_index(["program_id", "participant_id"]).loc[("4-Pom", "32")]
    assert (pom["correct"], pom["total"]) == (2.5, 3)  # answered 3 and 2 of 3 correctly


def test_limit_keeps_the_counts_of_the_programs_kept(
    scalabrino_dir: Path, dataset_cfg: Any, scalabrino_pairs: list[dict[str, Any]]
) -> None:
    with pytest.warns(DatasetWarning, match="7 repeated"):  # the file's count, before the limit
        dataset = load_dataset(dataset_cfg(format="scalabrino", root=str(scalabrino_dir), limit=28))
    kept = [p for p in scalabrino_pairs if p["rows"] > 1 and p["file_name"] in dataset.program_ids]
    assert dataset.duplicates.identical == sum(p["identical"] for p in kept) == 3
    assert dataset.duplicates.conflicting == sum(not p["identical"] for p in kept) == 1
    both = dataset.subset(["2-K9", "3-MyExpenses"]).duplicates
    assert (both.identical, both.conflicting) == (1, 1)
