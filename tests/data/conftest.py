"""Fixtures for the data tests: the local Scalabrino copy and tiny generic-format folders."""

from __future__ import annotations

import csv
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from mcu_exp.data import Dataset, DatasetWarning, load_dataset
from support.datasets import write_csv, write_jsonl

REPO = Path(__file__).resolve().parents[2]


def _data_root() -> Path:
    env = os.environ.get("MCU_EXP_DATA")
    return Path(env) if env else REPO.parent / "shared" / "data"


@pytest.fixture(scope="session")
def scalabrino_dir() -> Path:
    """The local copy of the Scalabrino data (never downloaded by the tests)."""
    path = _data_root() / "scalabrino"
    if not (path / "evaluations.csv").is_file():
        pytest.skip(f"no local Scalabrino data at {path} (set MCU_EXP_DATA)")
    return path


@pytest.fixture(scope="session")
def scalabrino_rows(scalabrino_dir: Path) -> list[dict[str, str]]:
    """evaluations.csv read with the plain csv module, as an independent reference."""
    with (scalabrino_dir / "evaluations.csv").open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="session")
def scalabrino_pairs(scalabrino_rows: list[dict[str, str]]) -> list[dict[str, Any]]:
    """One record per (program, participant) in order of first appearance, in plain Python.

    A row without an answer time (``TNPU``) was asked no questions (``total`` 0, else 3); a
    repeated pair keeps the mean ``AU`` (``correct``) and mean ``total`` of its rows.
    """
    grouped: dict[tuple[str, str], list[dict[str, str]]] = {}
    for row in scalabrino_rows:
        grouped.setdefault((row["file_name"], row["participant_id"].strip()), []).append(row)
    pairs = []
    for (program_id, participant), rows in grouped.items():
        totals = [3 if row["TNPU"].strip() else 0 for row in rows]
        pairs.append(
            {
                "file_name": program_id,
                "participant_id": participant,
                "developer_position": rows[0]["developer_position"],
                "correct": sum(int(row["AU"]) for row in rows) / len(rows),
                "total": sum(totals) / len(rows),
                "rows": len(rows),
                "identical": all(row == rows[0] for row in rows),
            }
        )
    return pairs


@pytest.fixture(scope="session")
def scalabrino(scalabrino_dir: Path) -> Dataset:
    with pytest.warns(DatasetWarning, match="7 repeated"):
        return load_dataset(dataset_cfg(format="scalabrino", root=str(scalabrino_dir)))


def dataset_cfg(**overrides: Any) -> SimpleNamespace:
    """A dataset config with the schema's fields and defaults."""
    fields: dict[str, Any] = {
        "name": overrides.get("format", "custom"),
        "format": "custom",
        "root": None,
        "download": False,
        "limit": None,
        "questions": None,
    }
    fields.update(overrides)
    return SimpleNamespace(**fields)


GOOD_CODE = 'int add(int a, int b) {\n    // sum, "quoted"\n    return a + b;\n}'
GOOD_FILE_CODE = "def double(x):\n    return 2 * x"


def make_custom(root: Path) -> Path:
    """A valid folder: 2 programs (inline code, code_file), 4 evaluations, 1 question."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "src").mkdir(exist_ok=True)
    (root / "src" / "double.py").write_text(GOOD_FILE_CODE + "\n", encoding="utf-8")
    write_csv(
        root / "programs.csv",
        [
            ["program_id", "language", "code", "code_file", "origin"],
            ["add", "java", GOOD_CODE, "", "handmade"],
            ["double", "python", "", "src/double.py", "handmade"],
        ],
    )
    write_csv(
        root / "evaluations.csv",
        [
            ["program_id", "participant_id", "correct", "total", "perceived", "group"],
            ["add", "p1", 3, 3, 1, "bachelor"],
            ["add", "p2", 1, 3, 0, "professional"],
            ["double", "p1", 1, 2, "", "bachelor"],
            ["double", "p3", 0, 2, 1, ""],
        ],
    )
    write_jsonl(
        root / "questions.jsonl",
        [
            {
                "program_id": "add",
                "question_id": "q1",
                "text": "What does add(2, 3) return?",
                "options": ["5", "6", "23", "-1"],
                "correct": 0,
            }
        ],
    )
    return root


@pytest.fixture
def custom_dir(tmp_path: Path) -> Path:
    """A fresh valid generic-format folder the test may break."""
    return make_custom(tmp_path / "custom")


@pytest.fixture(name="dataset_cfg")
def dataset_cfg_fixture() -> Any:
    return dataset_cfg


@pytest.fixture(name="write_csv")
def write_csv_fixture() -> Any:
    return write_csv


@pytest.fixture(name="write_jsonl")
def write_jsonl_fixture() -> Any:
    return write_jsonl
