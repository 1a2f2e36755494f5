"""Atoms-of-confusion C programs: after every edit they compile and print the answer key's output."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import pytest

from mcu_exp.counterfactual import EDITS, apply_edit, check_edit
from mcu_exp.counterfactual.run_c import gcc_path, run_c

# one program per atom kind, of those whose printed output is the key as written (10 atoms)
SAMPLE = ("1", "7", "13", "19", "31", "37", "43", "55", "61", "68")


def _programs() -> dict[str, dict[str, str]]:
    path = Path(os.environ["MCU_EXP_DATA"]) / "atoms" / "programs.csv"
    if not path.is_file():
        pytest.skip(f"{path} is missing: the atoms dataset is not installed")
    with path.open(newline="", encoding="utf-8") as f:
        return {row["id"]: row for row in csv.DictReader(f)}


def _atoms() -> dict[str, str]:
    path = Path(os.environ["MCU_EXP_DATA"]) / "atoms" / "atom_tags.csv"
    with path.open(newline="", encoding="utf-8") as f:
        return {row["program"]: row["atom"] for row in csv.DictReader(f)}


def test_the_sample_covers_ten_atoms() -> None:
    _programs()
    assert len({_atoms()[i] for i in SAMPLE}) == len(SAMPLE)


@pytest.mark.parametrize("program", SAMPLE)
def test_edited_atoms_program_passes_the_checks(program: str) -> None:
    code = _programs()[program]["code"]
    for edit in EDITS.names():
        assert check_edit(code, apply_edit(edit, code, "c", int(program)), "c", edit) == [], edit


@pytest.mark.parametrize("program", SAMPLE)
def test_edited_atoms_program_prints_the_key(program: str) -> None:
    if gcc_path() is None:
        pytest.skip("gcc is not installed: only the compile-and-run check is skipped (the edit checks still run)")
    row = _programs()[program]
    original = run_c(row["code"])
    assert original.compiled and original.stdout.strip() == row["answer"].strip()
    for edit in EDITS.names():
        run = run_c(apply_edit(edit, row["code"], "c", int(program)).code)
        assert run.compiled, (edit, run.errors)
        assert run.stdout == original.stdout, edit
