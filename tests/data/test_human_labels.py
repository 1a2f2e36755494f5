"""Human labels from ABU50: the published counts, subgroups recomputed independently, errors."""

from __future__ import annotations

import logging
import warnings
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

from mcu_exp.config import LabelsConfig
from mcu_exp.data import GROUPS, Dataset, abu50, human_labels, load_custom, subgroup_labels

POSITION = {"bachelor": "1", "master": "2", "phd": "3", "professional": "4"}


def _reference(pairs: list[dict[str, Any]], min_fraction: float, position: str | None) -> dict[str, int]:
    """Per-program labels from the (participant, program) pairs, with plain Python."""
    votes: dict[str, list[int]] = defaultdict(list)
    for pair in pairs:
        if position is None or pair["developer_position"] == position:
            votes[pair["file_name"]].append(int(0 < pair["total"] <= 2 * pair["correct"]))
    return {pid: int(sum(v) / len(v) >= min_fraction - 1e-12) for pid, v in votes.items()}


@pytest.mark.parametrize(("min_fraction", "positives"), [(0.5, 26), (1 / 3, 42)])
def test_counts_stated_in_source_md(scalabrino: Dataset, min_fraction: float, positives: int) -> None:
    labels = human_labels(scalabrino, LabelsConfig(min_fraction=min_fraction))
    assert labels.balance()["n"] == 50
    assert labels.balance()["positives"] == positives
    assert labels.dropped == []


def test_abu50_agrees_with_the_csv_column(scalabrino: Dataset, scalabrino_rows: list[dict[str, str]]) -> None:
    ev = scalabrino.evaluations
    computed = dict(zip(zip(ev["program_id"], ev["participant_id"]), abu50(ev), strict=True))
    once = defaultdict(list)
    for row in scalabrino_rows:
        once[(row["file_name"], row["participant_id"])].append(int(row["ABU50"]))
    unique = {pair: v[0] for pair, v in once.items() if len(v) == 1}
    assert len(unique) == 444 - 14
    assert {pair: int(computed[pair]) for pair in unique} == unique


@pytest.mark.parametrize("group", GROUPS)
def test_subgroup_labels_match_an_independent_count(
    scalabrino: Dataset, scalabrino_pairs: list[dict[str, Any]], group: str
) -> None:
    cfg = OmegaConf.structured(LabelsConfig(min_fraction=0.5))
    result = subgroup_labels(scalabrino, cfg, [group])[group]
    expected = _reference(scalabrino_pairs, 0.5, POSITION[group])
    assert result.labels.to_dict() == expected
    assert result.group == group
    assert sorted(result.dropped) == sorted(set(scalabrino.program_ids) - set(expected))
    counts: dict[str, int] = defaultdict(int)
    for pair in scalabrino_pairs:
        if pair["developer_position"] == POSITION[group]:
            counts[pair["file_name"]] += 1
    assert result.n_evaluators.to_dict() == counts


def test_group_setting_filters_like_subgroup_labels(scalabrino: Dataset) -> None:
    direct = human_labels(scalabrino, LabelsConfig(group="professional"))
    via = subgroup_labels(scalabrino, LabelsConfig(group="bachelor"), ["professional"])["professional"]
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


def test_programs_without_evaluators_in_the_group_are_dropped(tmp_path: Path, write_csv: Any) -> None:
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
        ({"rule": "majority"}, r"unknown label rule 'majority' \(labels\.rule\).*known: mean_abu50"),
        (
            {"group": "postdoc"},
            r"labels\.group is 'postdoc', "
            r"expected one of: all, bachelor, master, phd, professional",
        ),
        ({"min_fraction": 1.5}, r"labels\.min_fraction is 1\.5, expected a number in \[0, 1\]"),
        ({"readers": "some"}, r"^labels\.readers is 'some', expected one of: all, tested$"),
    ],
)
def test_bad_settings_are_errors(scalabrino: Dataset, settings: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        human_labels(scalabrino, LabelsConfig(**settings))


@pytest.mark.parametrize(
    ("readers", "min_fraction", "positives", "evaluations"),
    [
        ("all", 0.5, 26, 437),
        ("all", 1 / 3, 42, 437),
        ("tested", 0.5, 42, 303),
        ("tested", 1 / 3, 46, 303),
    ],
)
def test_readers_setting_on_scalabrino(
    scalabrino: Dataset,
    scalabrino_pairs: list[dict[str, Any]],
    readers: str,
    min_fraction: float,
    positives: int,
    evaluations: int,
) -> None:
    labels = human_labels(scalabrino, LabelsConfig(min_fraction=min_fraction, readers=readers))
    kept = [p for p in scalabrino_pairs if readers == "all" or p["total"] > 0]
    assert labels.labels.to_dict() == _reference(kept, min_fraction, None)
    assert labels.balance()["positives"] == positives
    assert labels.balance()["n"] == 50
    assert int(labels.n_evaluators.sum()) == len(kept) == evaluations
    assert labels.readers == readers
    assert f"readers {readers}" in labels.describe()


def test_readers_without_questions_count_as_not_understood_unless_dropped(tmp_path: Path, write_csv: Any) -> None:
    # p was asked no questions on a (total 0); q answered 2 of 2 on a; b: r answered 1 of 4.
    dataset = _tiny(
        tmp_path / "d",
        write_csv,
        [["a", "p", 0, 0, ""], ["a", "q", 2, 2, ""], ["b", "r", 1, 4, ""]],
    )
    everyone = human_labels(dataset, LabelsConfig())
    assert everyone.fraction.to_dict() == {"a": 0.5, "b": 0.0}
    assert everyone.correctness.to_dict() == {"a": 0.5, "b": 0.25}
    tested = human_labels(dataset, LabelsConfig(readers="tested"))
    assert tested.fraction.to_dict() == {"a": 1.0, "b": 0.0}
    assert tested.correctness.to_dict() == {"a": 1.0, "b": 0.25}
    assert tested.n_evaluators.to_dict() == {"a": 1, "b": 1}


def test_a_program_whose_readers_were_all_untested_is_dropped(tmp_path: Path, write_csv: Any) -> None:
    dataset = _tiny(tmp_path / "d", write_csv, [["a", "p", 0, 0, ""], ["b", "r", 1, 4, ""]])
    tested = human_labels(dataset, LabelsConfig(readers="tested"))
    assert tested.dropped == ["a"]
    assert list(tested.correctness.index) == ["b"]


@pytest.mark.parametrize("readers", ["all", "tested"])
def test_correctness_is_the_mean_share_of_questions_answered_correctly(
    scalabrino: Dataset, scalabrino_pairs: list[dict[str, Any]], readers: str
) -> None:
    shares: dict[str, list[float]] = defaultdict(list)
    for pair in scalabrino_pairs:
        if pair["total"] > 0:
            shares[pair["file_name"]].append(pair["correct"] / pair["total"])
        elif readers == "all":
            shares[pair["file_name"]].append(0.0)
    labels = human_labels(scalabrino, LabelsConfig(readers=readers))
    assert list(labels.correctness.index) == list(labels.labels.index)
    assert labels.correctness.index.name == "program_id"
    expected = {pid: sum(v) / len(v) for pid, v in shares.items()}
    assert labels.correctness.to_dict() == pytest.approx(expected)
    assert labels.correctness.between(0, 1).all()


def test_correctness_follows_the_group_filter(scalabrino: Dataset) -> None:
    phd = human_labels(scalabrino, LabelsConfig(group="phd"))
    assert list(phd.correctness.index) == list(phd.labels.index)
    assert len(phd.correctness) < 50


def _balanced(tmp_path: Path, write_csv: Any, positives: int, negatives: int) -> Dataset:
    root = tmp_path / "d"
    root.mkdir()
    ids = [f"u{i}" for i in range(positives)] + [f"n{i}" for i in range(negatives)]
    programs = [[i, "c", "x;"] for i in ids]
    write_csv(root / "programs.csv", [["program_id", "language", "code"], *programs])
    write_csv(
        root / "evaluations.csv",
        [
            ["program_id", "participant_id", "correct", "total"],
            *[[i, "p", 3 if i.startswith("u") else 0, 3] for i in ids],
        ],
    )
    return load_custom(root)


@pytest.mark.parametrize(
    ("positives", "negatives", "expected"),
    [
        (
            31,
            1,
            "only 1 program is not understandable (fewer than 5): "
            "F1/AUC and their confidence intervals are uninformative",
        ),
        (
            3,
            7,
            "only 3 programs are understandable (fewer than 5): "
            "F1/AUC and their confidence intervals are uninformative",
        ),
        (
            2,
            0,
            "only 2 programs are understandable and only 0 programs are not understandable "
            "(fewer than 5 each): F1/AUC and their confidence intervals are uninformative",
        ),
        (5, 5, None),
    ],
)
def test_class_warning(tmp_path: Path, write_csv: Any, positives: int, negatives: int, expected: str | None) -> None:
    labels = human_labels(_balanced(tmp_path, write_csv, positives, negatives), LabelsConfig())
    assert labels.class_warning() == expected


def test_class_warning_threshold_and_published_data(scalabrino: Dataset) -> None:
    labels = human_labels(scalabrino, LabelsConfig())
    assert labels.class_warning() is None
    assert labels.class_warning(min_per_class=25) == (
        "only 24 programs are not understandable (fewer than 25): "
        "F1/AUC and their confidence intervals are uninformative"
    )


def test_no_group_information_no_subgroups(tmp_path: Path, write_csv: Any, caplog: pytest.LogCaptureFixture) -> None:
    root = tmp_path / "d"
    root.mkdir()
    write_csv(root / "programs.csv", [["program_id", "language", "code"], ["a", "c", "x;"]])
    write_csv(
        root / "evaluations.csv",
        [["program_id", "participant_id", "correct", "total"], ["a", "p", 1, 2], ["a", "q", 0, 2]],
    )
    dataset = load_custom(root)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with caplog.at_level(logging.DEBUG):
            result = subgroup_labels(dataset, LabelsConfig(), GROUPS)
    assert result == {}
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (
            logging.INFO,
            "no reader group in the evaluations of dataset custom: subgroups not evaluated",
        )
    ]


def test_groups_without_readers_are_skipped_in_one_line(
    tmp_path: Path, write_csv: Any, caplog: pytest.LogCaptureFixture
) -> None:
    dataset = _tiny(tmp_path / "d", write_csv, [["a", "p", 1, 2, "phd"], ["b", "q", 1, 3, ""]])
    with caplog.at_level(logging.DEBUG):
        result = subgroup_labels(dataset, LabelsConfig(), GROUPS)
    assert list(result) == ["phd"]
    assert result["phd"].labels.to_dict() == {"a": 1}
    assert [r.getMessage() for r in caplog.records] == [
        "no bachelor, master, professional reader in the evaluations of dataset custom: those subgroups not evaluated"
    ]
