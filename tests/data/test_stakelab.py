"""The STAKE lab loader on the local copy: counts, snippet matching, groups, the warning,
checksums, the offline download, the reliability command's α against krippendorff, and α and
the split-half figures recomputed independently from the raw file."""

from __future__ import annotations

import csv
import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import krippendorff
import numpy as np
import pytest

from mcu_exp.app import config_dir
from mcu_exp.ceiling.split_half import split_half
from mcu_exp.cli.reliability import main as reliability_main
from mcu_exp.data import Dataset, DatasetError, DatasetWarning, load_dataset
from mcu_exp.data import stakelab as sl
from support.file_server import serve_folder
from support.split_half_check import nominal_alpha, recompute, same_splits
from tests.data.conftest import _data_root, dataset_cfg

PRINTED = ("auc_score", "split_half_rho", "reliability", "spearman")  # the reliability command's columns


@pytest.fixture(scope="module")
def stake_dir() -> Path:
    path = _data_root() / "stakelab"
    if not (path / "dataset.csv").is_file():
        pytest.skip(f"no local STAKE lab data at {path} (set MCU_EXP_DATA)")
    return path


@pytest.fixture(scope="module")
def rows(stake_dir: Path) -> list[dict[str, str]]:
    with (stake_dir / "dataset.csv").open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def stake(stake_dir: Path) -> Dataset:
    with pytest.warns(DatasetWarning, match=r"21 of the 70 snippets were never evaluated.*7 of the 49 methods"):
        return load_dataset(dataset_cfg(format="stakelab", root=str(stake_dir)))


def test_counts_match_the_file(stake: Dataset, rows: list[dict[str, str]]) -> None:
    assert len(rows) == len(stake.evaluations) == 396
    assert len(stake.programs) == len({r["title"] for r in rows}) == 49
    assert stake.evaluations["participant_id"].nunique() == len({r["developer"] for r in rows}) == 35
    assert all(p.language == "java" and p.code.strip() for p in stake.programs)
    assert int((stake.evaluations["correct"] >= 2).sum()) == 121  # ABU50, as SOURCE.md counts it
    assert (stake.evaluations["total"] == 3).all()


def test_every_title_matches_one_snippet_and_the_tie_goes_by_parameter_count(stake: Dataset) -> None:
    titles = Counter(p.meta["title"] for p in stake.programs)
    assert len(titles) == 49 and set(titles.values()) == {1}
    assert len({p.id for p in stake.programs}) == 49
    (tied,) = [p for p in stake.programs if "TimelineReaderWebServices.getEntities" in p.meta["title"]]
    assert tied.meta["title"].count(",") == 22
    assert sl.parameter_count(tied.code, tied.code.index("getEntities(") + len("getEntities")) == 23
    assert tied.id == "hadoop-trunk_TimelineReaderWebServices_8"


def test_occupations_map_to_reader_groups(stake: Dataset, rows: list[dict[str, str]]) -> None:
    assert stake.evaluations["group"].value_counts().to_dict() == {
        "bachelor": 264,
        "master": 96,
        "phd": 24,
        "professional": 12,
    }
    assert stake.evaluations["group"].tolist() == [sl.OCCUPATION_GROUPS[r["occupation"]] for r in rows]


def test_a_changed_file_fails_its_checksum(stake_dir: Path, tmp_path: Path) -> None:
    copy = tmp_path / "stakelab"
    shutil.copytree(stake_dir, copy)
    assert sl.checksum_problems(copy) == []
    data = bytearray((copy / "dataset.csv").read_bytes())
    data[100] ^= 0x01
    (copy / "dataset.csv").write_bytes(bytes(data))
    ((name, detail),) = sl.checksum_problems(copy)
    assert name == "dataset.csv" and detail.startswith("sha256 ") and "\n" not in detail


@pytest.fixture
def server(stake_dir: Path) -> Iterator[str]:
    with serve_folder(stake_dir) as url:
        yield url


def test_download_from_a_local_server_verifies_and_caches(
    server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("MCU_EXP_DATA", raising=False)
    monkeypatch.setenv(sl.BASE_URL_ENV, server)
    with pytest.warns(DatasetWarning):
        dataset = load_dataset(dataset_cfg(format="stakelab", name="stakelab", download=True))
    assert dataset.source.endswith("(downloaded, sha256 verified)") and len(dataset.programs) == 49
    assert sl.is_verified(tmp_path / "xdg" / "mcu_exp" / "data" / "stakelab")
    shutil.rmtree(tmp_path / "xdg")
    with pytest.raises(DatasetError, match=r"^stakelab data not found: .*dataset.download=true$"):
        sl.resolve_root(dataset_cfg(format="stakelab", download=False, root=None), url=server)
    with pytest.raises(DatasetError, match=r"downloading http://127\.0\.0\.1:\d+/nope/dataset\.csv failed: HTTP 404"):
        sl.download(tmp_path / "cache", url=server + "nope/")


def test_reliability_command_alpha_matches_krippendorff(
    stake: Dataset, stake_dir: Path, rows: list[dict[str, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    people = sorted({r["developer"] for r in rows})
    titles = sorted({r["title"] for r in rows})
    matrix = np.full((len(people), len(titles)), np.nan)
    for r in rows:  # ABU50 in plain Python: at least 2 of 3 right
        matrix[people.index(r["developer"]), titles.index(r["title"])] = float(float(r["correctness"]) > 0.5)
    expected = krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal")
    reliability_main(["dataset=stakelab", f"dataset.root={stake_dir}", "evaluation.ceiling_splits=50"], config_dir())
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("│ all"))
    cells = [c.strip() for c in row.strip("│").split("│")]
    assert cells[1] == "42 (7)"  # 7 methods with one evaluation are left out of the split half
    assert cells[2] == f"{expected:.3f}"  # α
    right = {(r["developer"], r["title"]): round(3 * float(r["correctness"])) for r in rows}
    keys, codes, in_a = same_splits(stake, {p.id: p.meta["title"] for p in stake.programs}, 50, seed=0)
    half = recompute(keys, codes, in_a, right, 3, {key: 2 * n >= 3 for key, n in right.items()})
    printed = [cells[3], cells[5], cells[6], cells[7]]  # the point before each [95 % CI over programs]
    assert [c.split(" [")[0] for c in printed] == [f"{half[k]:.3f}" for k in PRINTED]


def test_alpha_and_split_half_reproduce_from_the_raw_file(stake: Dataset, rows: list[dict[str, str]]) -> None:
    # Per evaluation, in plain Python: questions right out of 3, ABU50 = at least 2 of 3.
    right = {(r["developer"], r["title"]): round(3 * float(r["correctness"])) for r in rows}
    understood = {key: 2 * n >= 3 for key, n in right.items()}
    splits = 20
    found = split_half(stake, splits=splits, seed=3).figures
    assert found["krippendorff_alpha"] == pytest.approx(nominal_alpha(understood), abs=1e-12)
    people = sorted({p for p, _ in understood})
    titles = sorted({t for _, t in understood})
    matrix = np.full((len(people), len(titles)), np.nan)
    for (person, title), value in understood.items():
        matrix[people.index(person), titles.index(title)] = float(value)
    assert found["krippendorff_alpha"] == pytest.approx(
        krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal"), abs=1e-12
    )
    title = {p.id: p.meta["title"] for p in stake.programs}
    keys, codes, in_a = same_splits(stake, title, splits, seed=3)
    assert (len(keys), int(codes.max()) + 1) == (396 - 7, 42)  # 7 methods with one evaluation left out
    expected = recompute(keys, codes, in_a, right, 3, understood)
    for name, value in expected.items():
        assert found[name] == pytest.approx(value, abs=1e-12), name
