"""The generic dataset format: a valid folder loads faithfully, every broken one fails clearly."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from mcu_exp.data import DatasetError, DatasetWarning, load_custom, read_questions

PROGRAMS_HEADER = ["program_id", "language", "code", "code_file", "origin"]
EVALUATIONS_HEADER = ["program_id", "participant_id", "correct", "total", "perceived", "group"]


def read_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_valid_folder_loads_every_value(custom_dir: Path) -> None:
    dataset = load_custom(custom_dir, name="mine")
    rows = read_rows(custom_dir / "programs.csv")
    assert dataset.name == "mine"
    assert dataset.program_ids == [r["program_id"] for r in rows]
    assert dataset.program("add").code == rows[0]["code"]
    assert dataset.program("add").meta == {"origin": "handmade"}
    file_text = (custom_dir / "src" / "double.py").read_text(encoding="utf-8")
    assert dataset.program("double").code == file_text.rstrip("\n")
    assert dataset.program("double").language == "python"

    evaluations = dataset.evaluations
    expected = read_rows(custom_dir / "evaluations.csv")
    assert len(evaluations) == len(expected)
    assert evaluations["correct"].tolist() == [int(r["correct"]) for r in expected]
    assert evaluations["total"].tolist() == [int(r["total"]) for r in expected]
    assert [None if pd.isna(v) else bool(v) for v in evaluations["perceived"]] == [
        None if r["perceived"] == "" else r["perceived"] == "1" for r in expected
    ]
    assert [None if pd.isna(v) else v for v in evaluations["group"]] == [r["group"] or None for r in expected]

    line = json.loads((custom_dir / "questions.jsonl").read_text().splitlines()[0])
    (question,) = dataset.questions
    assert question.options == tuple(line["options"])
    assert question.options[question.correct] == line["options"][line["correct"]]
    assert dataset.questions_for("add") == [question]
    assert dataset.questions_for("double") == []


def test_line_numbers_count_physical_lines_of_multiline_code(custom_dir: Path, write_csv: Any) -> None:
    code = "a();\nb();\nc();"
    write_csv(
        custom_dir / "programs.csv",
        [["program_id", "language", "code"], ["x", "java", code], ["y", "java", "  "]],
    )
    # header = line 1, the 3-line code cell spans lines 2-4, so "y" starts on line 5.
    with pytest.raises(DatasetError, match=r"programs\.csv:5: empty code for program 'y'"):
        load_custom(custom_dir)


def _read_table(path: Path) -> list[list[str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


def _replace_row(path: Path, index: int, **changes: Any) -> None:
    rows = _read_table(path)
    header = rows[0]
    for column, value in changes.items():
        rows[index][header.index(column)] = str(value)
    with path.open("w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows(rows)


def _append_rows(path: Path, *rows: list[Any]) -> None:
    with path.open("a", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows(rows)


def _set_question(root: Path, **changes: Any) -> None:
    path = root / "questions.jsonl"
    obj = json.loads(path.read_text().splitlines()[0])
    obj.update(changes)
    path.write_text(json.dumps(obj) + "\n")


def _drop_column(path: Path, column: str) -> Path:
    rows = _read_table(path)
    i = rows[0].index(column)
    with path.open("w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows([r[:i] + r[i + 1 :] for r in rows])
    return path


# In the valid folder the "add" row's 4-line code cell spans programs.csv lines 2-5, so the
# "double" row is line 6; evaluations.csv rows are lines 2-5.
BREAKAGES: dict[str, tuple[Callable[[Path], object], str]] = {
    "missing programs.csv": (
        lambda r: (r / "programs.csv").unlink(),
        r"programs\.csv: missing file",
    ),
    "missing evaluations.csv": (
        lambda r: (r / "evaluations.csv").unlink(),
        r"evaluations\.csv: missing file",
    ),
    "missing language column": (
        lambda r: _drop_column(r / "programs.csv", "language"),
        r"programs\.csv:1: missing column\(s\) language",
    ),
    "no code column": (
        lambda r: [_drop_column(r / "programs.csv", c) for c in ("code", "code_file")],
        r"programs\.csv:1: missing column code or code_file",
    ),
    "missing total column": (
        lambda r: _drop_column(r / "evaluations.csv", "total"),
        r"evaluations\.csv:1: missing column\(s\) total",
    ),
    "unknown program in evaluations": (
        lambda r: _replace_row(r / "evaluations.csv", 3, program_id="nope"),
        r"evaluations\.csv:4: program_id 'nope' is not in programs\.csv",
    ),
    "unknown program in questions": (
        lambda r: _set_question(r, program_id="nope"),
        r"questions\.jsonl:1: program_id 'nope' is not a program",
    ),
    "duplicate program id": (
        lambda r: _replace_row(r / "programs.csv", 2, program_id="add"),
        r"programs\.csv:6: duplicate program_id 'add' \(first on line 2\)",
    ),
    "duplicate question id": (
        lambda r: (r / "questions.jsonl").write_text((r / "questions.jsonl").read_text() * 2),
        r"questions\.jsonl:2: duplicate question_id 'q1' for program 'add' \(first on line 1\)",
    ),
    "empty code": (
        lambda r: _replace_row(r / "programs.csv", 1, code="   \n "),
        r"programs\.csv:2: empty code for program 'add'",
    ),
    "empty code file": (
        lambda r: (r / "src" / "double.py").write_text("\n\n"),
        r"programs\.csv:6: empty code for program 'double'",
    ),
    "both code and code_file": (
        lambda r: _replace_row(r / "programs.csv", 2, code="x = 1"),
        r"programs\.csv:6: .*both code and code_file, expected exactly one",
    ),
    "missing code_file": (
        lambda r: (r / "src" / "double.py").unlink(),
        r"programs\.csv:6: code_file 'src/double\.py' not found",
    ),
    "correct above total": (
        lambda r: _replace_row(r / "evaluations.csv", 2, correct=4),
        r"evaluations\.csv:3: correct is 4, expected 0\.\.3",
    ),
    "correct below zero": (
        lambda r: _replace_row(r / "evaluations.csv", 1, correct=-1),
        r"evaluations\.csv:2: correct is -1, expected 0\.\.3",
    ),
    "total zero with answers": (
        lambda r: _replace_row(r / "evaluations.csv", 4, correct=1, total=0),
        r"evaluations\.csv:5: correct is 1, expected 0 \(total 0: the participant was not "
        r"asked the questions\)",
    ),
    "total negative": (
        lambda r: _replace_row(r / "evaluations.csv", 4, total=-2),
        r"evaluations\.csv:5: total is -2, expected 0 \(not asked\) or a positive number",
    ),
    "fractional count": (
        lambda r: _replace_row(r / "evaluations.csv", 1, correct="2.5"),
        r"evaluations\.csv:2: correct is '2\.5', expected an integer",
    ),
    "text count": (
        lambda r: _replace_row(r / "evaluations.csv", 2, total="three"),
        r"evaluations\.csv:3: total is 'three', expected an integer",
    ),
    "unknown group": (
        lambda r: _replace_row(r / "evaluations.csv", 2, group="postdoc"),
        r"evaluations\.csv:3: group is 'postdoc', "
        r"expected one of bachelor, master, phd, professional",
    ),
    "bad perceived": (
        lambda r: _replace_row(r / "evaluations.csv", 1, perceived="yes"),
        r"evaluations\.csv:2: perceived is 'yes', expected 0, 1 or empty",
    ),
    "wrong number of fields": (
        lambda r: _append_rows(r / "evaluations.csv", ["add", "p9", 1]),
        r"evaluations\.csv:6: expected 6 fields like the header, got 3",
    ),
    "correct option past the end": (
        lambda r: _set_question(r, correct=4),
        r"questions\.jsonl:1: correct is 4, expected an option index in 0\.\.3",
    ),
    "negative correct option": (
        lambda r: _set_question(r, correct=-1),
        r"questions\.jsonl:1: correct is -1, expected an option index",
    ),
    "boolean correct option": (
        lambda r: _set_question(r, correct=True),
        r"questions\.jsonl:1: correct is True, expected a 0-based option index \(or no key\)",
    ),
    "one option": (
        lambda r: _set_question(r, options=["only"], correct=0),
        r"questions\.jsonl:1: 1 option\(s\), expected at least 2",
    ),
    "options not strings": (
        lambda r: _set_question(r, options=[1, 2]),
        r"questions\.jsonl:1: options must be a list of strings",
    ),
    "missing question key": (
        lambda r: (r / "questions.jsonl").write_text('{"program_id": "add", "question_id": "q1"}\n'),
        r"questions\.jsonl:1: missing key\(s\) text, options$",
    ),
    "malformed json": (
        lambda r: (r / "questions.jsonl").write_text((r / "questions.jsonl").read_text() + "\n{not json\n"),
        r"questions\.jsonl:3: malformed JSON",
    ),
    "json not an object": (
        lambda r: (r / "questions.jsonl").write_text("[1, 2]\n"),
        r"questions\.jsonl:1: expected a JSON object, got list",
    ),
}


@pytest.mark.parametrize("breakage", sorted(BREAKAGES))
def test_broken_folder_fails_with_file_line_and_expectation(custom_dir: Path, breakage: str) -> None:
    load_custom(custom_dir)  # the folder is valid before the breakage
    break_it, message = BREAKAGES[breakage]
    break_it(custom_dir)
    with pytest.raises(DatasetError, match=message) as info:
        load_custom(custom_dir)
    assert "\n" not in str(info.value)
    assert isinstance(info.value, ValueError)


def test_program_without_evaluations_loads_with_a_warning(custom_dir: Path) -> None:
    _append_rows(custom_dir / "programs.csv", ["lonely", "java", "void f() {}", "", ""])
    with pytest.warns(DatasetWarning, match=r"1 of 3 programs have no evaluations .*'lonely'"):
        dataset = load_custom(custom_dir)
    assert dataset.unevaluated_program_ids == ["lonely"]
    assert "lonely" in dataset.program_ids


def test_questions_file_must_be_jsonl(custom_dir: Path) -> None:
    path = custom_dir / "questions.csv"
    path.write_text("program_id,question_id\n")
    with pytest.raises(DatasetError, match=r"questions\.csv: questions must be a \.jsonl file"):
        read_questions(path)


def test_missing_folder_is_named(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="dataset folder not found"):
        load_custom(tmp_path / "absent")


def test_group_is_case_insensitive_and_blank_lines_are_skipped(custom_dir: Path) -> None:
    _replace_row(custom_dir / "evaluations.csv", 1, group="PhD")
    with (custom_dir / "evaluations.csv").open("a") as handle:
        handle.write("\n")
    dataset = load_custom(custom_dir)
    assert dataset.evaluations["group"].iloc[0] == "phd"
    assert len(dataset.evaluations) == len(read_rows(custom_dir / "evaluations.csv"))


def test_total_zero_means_not_asked(custom_dir: Path) -> None:
    _replace_row(custom_dir / "evaluations.csv", 4, correct=0, total=0)
    dataset = load_custom(custom_dir)
    assert dataset.evaluations["total"].tolist() == [3, 3, 2, 0]
    assert dataset.evaluations["correct"].iloc[3] == 0
