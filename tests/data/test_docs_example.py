"""The complete example in docs/dataset-format.md loads and gives the labels the page states."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mcu_exp.config import LabelsConfig
from mcu_exp.data import human_labels, load_custom

DOC = Path(__file__).resolve().parents[2] / "docs" / "dataset-format.md"
FILE_BLOCK = re.compile(r"^`([\w./-]+)`\n\n```\w*\n(.*?)^```", re.MULTILINE | re.DOTALL)


@pytest.fixture
def example(tmp_path: Path) -> Path:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## A complete example", 1)[1].split("\n## ", 1)[0]
    files = FILE_BLOCK.findall(section)
    assert [name for name, _ in files] == [
        "programs.csv",
        "src/IsLeap.java",
        "evaluations.csv",
        "questions.jsonl",
    ]
    for name, content in files:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(content, encoding="utf-8")
    return tmp_path


def test_documented_example_loads(example: Path) -> None:
    dataset = load_custom(example)
    assert dataset.program_ids == ["sum-list", "is-leap"]
    assert len(dataset.evaluations) == 4
    assert len(dataset.questions) == 1
    question = dataset.questions[0]
    assert question.options[question.correct] == "false"
    assert dataset.program("is-leap").code.startswith("static boolean isLeap")
    assert dataset.program("sum-list").code.count("\n") == 4


def test_documented_example_labels(example: Path) -> None:
    labels = human_labels(load_custom(example), LabelsConfig())
    assert labels.labels.to_dict() == {"sum-list": 1, "is-leap": 0}
    assert labels.fraction.to_dict() == {"sum-list": 0.5, "is-leap": 0.0}
