"""load_dataset: dispatch on format, natural order, limit, questions merged from a file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

from mcu_exp.config import DatasetConfig
from mcu_exp.data import Dataset, DatasetError, load_dataset, natural_key


def _question(program_id: str, question_id: str = "q1") -> dict[str, Any]:
    return {
        "program_id": program_id,
        "question_id": question_id,
        "text": "What does it return?",
        "options": ["a", "b", "c"],
        "correct": 2,
    }


def test_programs_sorted_naturally(scalabrino: Dataset) -> None:
    ids = scalabrino.program_ids
    assert ids == sorted(ids, key=natural_key)
    assert sorted(["10-X", "2-X", "1-Y"], key=natural_key) == ["1-Y", "2-X", "10-X"]


def test_limit_keeps_the_first_programs_and_their_evaluations(
    scalabrino: Dataset, scalabrino_dir: Path, dataset_cfg: Any
) -> None:
    small = load_dataset(dataset_cfg(format="scalabrino", root=str(scalabrino_dir), limit=5))
    assert small.program_ids == scalabrino.program_ids[:5]
    full = scalabrino.evaluations
    assert len(small.evaluations) == int(full["program_id"].isin(small.program_ids).sum())
    assert set(small.evaluations["program_id"]) == set(small.program_ids)


def test_structured_config_from_the_schema(scalabrino_dir: Path) -> None:
    cfg = OmegaConf.structured(DatasetConfig(name="scalabrino", format="scalabrino", root=str(scalabrino_dir), limit=3))
    dataset = load_dataset(cfg)
    assert len(dataset.programs) == 3
    assert dataset.name == "scalabrino"


def test_questions_file_is_merged_and_limited(
    scalabrino: Dataset, scalabrino_dir: Path, tmp_path: Path, dataset_cfg: Any, write_jsonl: Any
) -> None:
    first, last = scalabrino.program_ids[0], scalabrino.program_ids[-1]
    path = tmp_path / "q.jsonl"
    write_jsonl(path, [_question(first), _question(first, "q2"), _question(last)])
    merged = load_dataset(dataset_cfg(format="scalabrino", root=str(scalabrino_dir), questions=str(path)))
    assert [(q.program_id, q.question_id) for q in merged.questions] == [
        (first, "q1"),
        (first, "q2"),
        (last, "q1"),
    ]
    assert merged.questions[0].options[merged.questions[0].correct] == "c"
    limited = load_dataset(dataset_cfg(format="scalabrino", root=str(scalabrino_dir), questions=str(path), limit=1))
    assert [q.program_id for q in limited.questions] == [first, first]


def test_questions_for_unknown_programs_are_rejected(
    scalabrino_dir: Path, tmp_path: Path, dataset_cfg: Any, write_jsonl: Any
) -> None:
    path = tmp_path / "q.jsonl"
    write_jsonl(path, [_question("1-K9"), _question("99-Nowhere")])
    with pytest.raises(DatasetError, match=r"q\.jsonl:2: program_id '99-Nowhere' is not a program"):
        load_dataset(dataset_cfg(format="scalabrino", root=str(scalabrino_dir), questions=str(path)))


def test_questions_duplicating_the_folder_ones_are_rejected(
    custom_dir: Path, tmp_path: Path, dataset_cfg: Any, write_jsonl: Any
) -> None:
    path = tmp_path / "more.jsonl"
    write_jsonl(path, [_question("double"), _question("add")])
    with pytest.raises(DatasetError, match=r"more\.jsonl: question 'q1' of program 'add' is already"):
        load_dataset(dataset_cfg(root=str(custom_dir), questions=str(path)))
    write_jsonl(path, [_question("double")])
    dataset = load_dataset(dataset_cfg(root=str(custom_dir), questions=str(path)))
    assert sorted(q.program_id for q in dataset.questions) == ["add", "double"]


def test_custom_format_dispatch(custom_dir: Path, dataset_cfg: Any) -> None:
    dataset = load_dataset(dataset_cfg(name="mine", root=str(custom_dir)))
    assert dataset.name == "mine"
    assert dataset.program_ids == ["add", "double"]
    assert dataset.source == str(custom_dir)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"format": "parquet"},
            r"^unknown dataset format 'parquet' \(dataset\.format\) \(known: scalabrino, stakelab, atoms, custom\), or package\.module:function$",
        ),
        ({"format": "custom", "root": None}, r"dataset\.root is unset"),
        ({"limit": 0}, r"dataset\.limit is 0, expected a positive number"),
    ],
)
def test_bad_dataset_settings(custom_dir: Path, dataset_cfg: Any, overrides: dict[str, Any], message: str) -> None:
    cfg = dataset_cfg(root=str(custom_dir))
    for key, value in overrides.items():
        setattr(cfg, key, value)
    with pytest.raises(DatasetError, match=message):
        load_dataset(cfg)


def test_unknown_program_lookup_names_it(scalabrino: Dataset) -> None:
    with pytest.raises(KeyError, match="no program 'nope'"):
        scalabrino.program("nope")
