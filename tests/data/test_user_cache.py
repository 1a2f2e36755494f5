"""A dataset found once through ``$MCU_EXP_DATA`` (or ``dataset.root``) is kept, checksummed, in
the user cache and found there again from any working directory without either; a copy that
fails its checksums is never kept."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from mcu_exp.data import DatasetError, load_dataset
from mcu_exp.data import download as dl
from mcu_exp.user_cache import CACHE_ENV

DATASETS = ("scalabrino", "stakelab", "atoms")


@pytest.fixture
def user_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty user cache under ``$XDG_CACHE_HOME``; downloads pointed at a closed port."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv(CACHE_ENV, raising=False)
    for variable in ("MCU_EXP_SCALABRINO_URL", "MCU_EXP_STAKELAB_URL", "MCU_EXP_ATOMS_URL"):
        monkeypatch.setenv(variable, "http://127.0.0.1:9/")
    return tmp_path / "xdg" / "mcu_exp" / "data"


@pytest.mark.parametrize("name", DATASETS)
def test_data_found_through_mcu_exp_data_is_found_again_from_the_user_cache(
    name: str, user_cache: Path, data_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dataset_cfg: Any
) -> None:
    monkeypatch.setenv("MCU_EXP_DATA", str(data_root))
    first = load_dataset(dataset_cfg(format=name, name=name, download=False))
    assert f"kept in the user cache {user_cache / name}" in first.source
    monkeypatch.delenv("MCU_EXP_DATA")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    again = load_dataset(dataset_cfg(format=name, name=name, download=False))
    assert again.source == f"{user_cache / name} (user cache, sha256 verified)"
    assert [p.code for p in again.programs] == [p.code for p in first.programs]
    assert again.evaluations.equals(first.evaluations)
    assert sorted(p.name for p in user_cache.iterdir()) == [name]  # no temporary folder left behind


def test_a_copy_that_fails_its_checksums_is_not_kept(
    user_cache: Path, data_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dataset_cfg: Any
) -> None:
    edited = tmp_path / "edited"
    shutil.copytree(data_root / "scalabrino", edited / "scalabrino")
    with (edited / "scalabrino" / dl.EVALUATIONS_FILE).open("a", encoding="utf-8") as handle:
        handle.write("\n")
    monkeypatch.setenv("MCU_EXP_DATA", str(edited))
    dataset = load_dataset(dataset_cfg(format="scalabrino", name="scalabrino", download=False))
    assert "kept in the user cache" not in dataset.source
    assert not (user_cache / "scalabrino").exists()
    monkeypatch.delenv("MCU_EXP_DATA")
    with pytest.raises(DatasetError, match=r"^Scalabrino data not found: .* is empty; "):
        load_dataset(dataset_cfg(format="scalabrino", name="scalabrino", download=False))


def test_mcu_exp_cache_moves_the_user_cache(
    user_cache: Path, data_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dataset_cfg: Any
) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "mine"))
    monkeypatch.setenv("MCU_EXP_DATA", str(data_root))
    load_dataset(dataset_cfg(format="atoms", name="atoms", download=False))
    assert sorted(os.listdir(tmp_path / "mine" / "data" / "atoms")) == [
        "atom_tags.csv",
        "programs.csv",
        "responses.csv",
    ]
    assert not user_cache.exists()
