"""Small dataset files for tests: CSV and JSON-lines writers (the data tests' conftest and
any test that builds a dataset folder of its own use them)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any


def write_csv(path: Path, rows: list[list[Any]]) -> None:
    """``rows`` (the header first) as a CSV file."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows(rows)


def write_jsonl(path: Path, objects: list[Any]) -> None:
    """One JSON object per line."""
    path.write_text("".join(json.dumps(o) + "\n" for o in objects), encoding="utf-8")
