"""Human labels from ABU50: the published counts, subgroups recomputed independently, errors."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

from mcu_exp.config import LabelsConfig
from mcu_exp.data import GROUPS, Dataset, abu50, human_labels, load_custom, subgroup_labels

POSITION = {"bachelor": "1", "master": "2", "phd": "3", "professional": "4"}


def _reference(
    rows: list[dict[str, str]], min_fraction: float, position: str | None
) -> dict[str, int]:
    """Per-program labels from the CSV's own ABU50 column, with plain Python."""
    votes: dict[str, list[int]] = defaultdict(list)
    for row in rows:
        if position is None or row["developer_position"] == position:
            votes[row["file_name"]].append(int(row["ABU50"]))
    return {pid: int(sum(v) / len(v) >= min_fraction - 1e-12) for pid, v in votes.items()}


@pytest.mark.parametrize(("min_fraction", "positives"), [(0.5, 26), (1 / 3, 42)])
def test_counts_stated_in_source_md(
    scalabrino: Dataset, min_fraction: float, positives: int
) -> None:
    labels = human_labels(scalabrino, LabelsConfig(min_fraction=min_fraction))
    assert labels.balance()["n"] == 50
    assert labels.balance()["positives"] == positives
    assert labels.dropped == []


def test_abu50_agrees_with_the_csv_column(
    scalabrino: Dataset, scalabrino_rows: list[dict[str, str]]
) -> None:
    assert abu50(scalabrino.evaluations).astype(int).tolist() == [
        int(r["ABU50"]) for r in scalabrino_rows
    ]


@pytest.mark.parametrize("group", GROUPS)
def test_subgroup_labels_match_an_independent_count(
    scalabrino: Dataset, scalabrino_rows: list[dict[str, str]], group: str
) -> None:
    cfg = OmegaConf.structured(LabelsConfig(min_fraction=0.5))
    result = subgroup_labels(scalabrino, cfg, [group])[group]
    expected = _reference(scalabrino_rows, 0.5, POSITION[group])
    assert result.labels.to_dict() == expected
    assert result.group == group
    assert sorted(result.dropped) == sorted(set(scalabrino.program_ids) - set(expected))
    counts: dict[str, int] = defaultdict(int)
    for row in scalabrino_rows:
        if row["developer_position"] == POSITION[group]:
            counts[row["file_name"]] += 1
    assert result.n_evaluators.to_dict() == counts


def test_group_setting_filters_like_subgroup_labels(scalabrino: Dataset) -> None:
    direct = human_labels(scalabrino, LabelsConfig(group="professional"))
    via = subgroup_labels(scalabrino, LabelsConfig(group="bachelor"), ["professional"])[
        "professional"
    ]
    assert direct.labels.equals(via.labels)
    assert direct.fraction.equals(via.fraction)


def test_labels_follow_dataset_order(scalabrino: Dataset) -> None:
    labels = human_labels(scalabrino, LabelsConfig())
    assert list(labels.labels.index) == scalabrino.program_ids
    assert set(labels.labels.unique()) <= {0, 1}
    assert ((labels.fraction >= 0.5) == (labels.labels == 1)).all()


def test_balance_and_describe(scalabrino: Dataset) -> None:
    labels = human_labels(scalabrino, LabelsConfig())
    b = labels.balance()
    assert b["positives"] + b["negatives"] == b["n"]
    assert b["positive_rate"] == pytest.approx(b["positives"] / b["n"])
    line = labels.describe()
    assert "\n" not in line
    assert f"{b['positives']} of {b['n']} programs understandable" in line
    assert f"{100 * b['positive_rate']:.1f}%" in line


def _tiny(root: Path, write_csv: Any, evaluations: list[list[Any]]) -> Dataset:
    root.mkdir()
    write_csv(
        root / "programs.csv",
        [["program_id", "language", "code"], ["a", "c", "x;"], ["b", "c", "y;"]],
    )
    write_csv(
        root / "evaluations.csv",
        [["program_id", "participant_id", "correct", "total", "group"], *evaluations],
    )
    return load_custom(root)


def test_half_correct_counts_as_understood(tmp_path: Path, write_csv: Any) -> None:
    # a: one of 2 correct (exactly half, understood); b: one of 3 (less than half, not).
    dataset = _tiny(tmp_path / "d", write_csv, [["a", "p", 1, 2, ""], ["b", "p", 1, 3, ""]])
    assert abu50(dataset.evaluations).tolist() == [True, False]
    assert human_labels(dataset, LabelsConfig()).labels.to_dict() == {"a": 1, "b": 0}


def test_programs_without_evaluators_in_the_group_are_dropped(
    tmp_path: Path, write_csv: Any
) -> None:
    dataset = _tiny(
        tmp_path / "d",
        write_csv,
        [["a", "p", 2, 2, "phd"], ["b", "q", 0, 2, "master"], ["b", "r", 2, 2, ""]],
    )
    phd = human_labels(dataset, LabelsConfig(group="phd"))
    assert phd.labels.to_dict() == {"a": 1}
    assert phd.dropped == ["b"]
    assert "1 dropped" in phd.describe()
    everyone = human_labels(dataset, LabelsConfig())
    assert everyone.n_evaluators.to_dict() == {"a": 1, "b": 2}
    assert everyone.fraction.to_dict() == {"a": 1.0, "b": 0.5}


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"rule": "majority"}, r"labels\.rule is 'majority', expected one of: mean_abu50"),
        (
            {"group": "postdoc"},
            r"labels\.group is 'postdoc', "
            r"expected one of: all, bachelor, master, phd, professional",
        ),
        ({"min_fraction": 1.5}, r"labels\.min_fraction is 1\.5, expected a number in \[0, 1\]"),
    ],
)
def test_bad_settings_are_errors(
    scalabrino: Dataset, settings: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        human_labels(scalabrino, LabelsConfig(**settings))
