"""Fixtures for the ceiling tests: the local Scalabrino copy (never downloaded)."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from mcu_exp.data import Dataset, DatasetWarning, load_dataset

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def scalabrino() -> Dataset:
    env = os.environ.get("MCU_EXP_DATA")
    root = (Path(env) if env else REPO.parent / "shared" / "data") / "scalabrino"
    if not (root / "evaluations.csv").is_file():
        pytest.skip(f"no local Scalabrino data at {root} (set MCU_EXP_DATA)")
    cfg = SimpleNamespace(
        name="scalabrino", format="scalabrino", root=str(root), download=False, limit=None, questions=None
    )
    with pytest.warns(DatasetWarning, match="7 repeated"):
        return load_dataset(cfg)
