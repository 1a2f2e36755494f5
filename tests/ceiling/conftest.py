"""Fixtures for the ceiling tests: the Scalabrino data as the job loads it."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from mcu_exp.data import Dataset, DatasetWarning, load_dataset


@pytest.fixture(scope="session")
def scalabrino(data_root: Path) -> Dataset:
    """Scalabrino's 50 programs and 444 evaluations (7 repeated pairs collapsed on loading)."""
    cfg = SimpleNamespace(
        name="scalabrino",
        format="scalabrino",
        root=str(data_root / "scalabrino"),
        download=False,
        limit=None,
        questions=None,
    )
    with pytest.warns(DatasetWarning, match="repeated"):
        return load_dataset(cfg)
