"""Printed outputs are compared after removing what wraps them (whitespace, a code fence, quotes)
and collapsing whitespace runs, and nothing else; on the atoms data that reproduces the study's
own judgement of every wrong answer and of all but 45 near-misses it accepted by hand."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from mcu_exp.scoring.outputs import normalise_output, output_key
from tests.data.conftest import _data_root


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("3 5", "3 5"),
        ("  3 5\n", "3 5"),
        ("3\n5", "3 5"),  # one printf per line: the key writes its lines with one space
        ("3 \t  5", "3 5"),
        ('"true"', "true"),
        ("'true'", "true"),
        ("`9`", "9"),
        ("```\n3 5\n```", "3 5"),
        ("```c\n3\n5\n```", "3 5"),  # the info string (language) is not output
        ('```text\n"abcdef"\n```', "abcdef"),  # layers are removed while they wrap
        ("```9```", "9"),
        ("", ""),
        ("   ", ""),
    ],
)
def test_wrappers_and_whitespace_are_removed(text: str, expected: str) -> None:
    assert normalise_output(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("True", "True"),  # case is output
        ("9.0", "9.0"),
        ("Output: 3 5", "Output: 3 5"),  # prose around the answer is not removed
        ('"3" "5"', '"3" "5"'),  # quotes that do not wrap the whole answer stay
        ("```\n3 5", "``` 3 5"),  # an unclosed fence (cut off at the token limit) is no fence
        ("'true\"", "'true\""),  # quotes must match
    ],
)
def test_nothing_inside_the_answer_is_changed(text: str, expected: str) -> None:
    assert normalise_output(text) == expected


def test_a_key_is_missing_when_absent_nan_or_empty() -> None:
    assert output_key(None) is None and output_key(float("nan")) is None and output_key("  ") is None
    assert output_key("3\n5") == "3 5" and output_key(0) == "0"


def test_on_atoms_the_rule_judges_the_subjects_as_the_study_did() -> None:
    root = _data_root() / "atoms"
    if not (root / "responses.csv").is_file():
        pytest.skip(f"no local atoms data at {root}")
    with (root / "programs.csv").open(newline="", encoding="utf-8") as handle:
        keys = {row["id"]: row["answer"] for row in csv.DictReader(handle)}
    agree: dict[tuple[str, bool], int] = {}
    with Path(root / "responses.csv").open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            ours = normalise_output(row["answer"]) == normalise_output(keys[row["program"]])
            agree[(row["correct"], ours)] = agree.get((row["correct"], ours), 0) + 1
    assert agree == {("F", False): 1698, ("T", True): 4326, ("T", False): 45}
