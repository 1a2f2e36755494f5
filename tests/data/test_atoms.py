"""The atoms-of-confusion loader on the local copy: counts, pairs, checksums, the offline
download (a confusion.db built from the CSV files, served on 127.0.0.1) and the reliability
command's α against krippendorff, and α and the split-half figures recomputed independently from
the raw file."""

from __future__ import annotations

import csv
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import krippendorff
import numpy as np
import pytest

from mcu_exp.app import config_dir
from mcu_exp.ceiling.split_half import split_half
from mcu_exp.cli.reliability import main as reliability_main
from mcu_exp.data import Dataset, DatasetError, human_labels, load_dataset
from mcu_exp.data import atoms as at
from support.file_server import serve_folder
from support.split_half_check import nominal_alpha, recompute, same_splits
from tests.data.conftest import _data_root, dataset_cfg

PRINTED = ("auc_score", "split_half_rho", "reliability", "spearman")  # the reliability command's columns


@pytest.fixture(scope="module")
def atoms_dir() -> Path:
    path = _data_root() / "atoms"
    if not (path / "responses.csv").is_file():
        pytest.skip(f"no local atoms data at {path} (set MCU_EXP_DATA)")
    return path


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def atoms(atoms_dir: Path) -> Dataset:
    return load_dataset(dataset_cfg(format="atoms", root=str(atoms_dir)))


def test_counts_match_the_files(atoms: Dataset, atoms_dir: Path) -> None:
    responses = _csv(atoms_dir / "responses.csv")
    assert len(responses) == len(atoms.evaluations) == 6069
    assert len(atoms.programs) == 126 and {p.language for p in atoms.programs} == {"c"}
    assert atoms.evaluations["participant_id"].nunique() == len({r["subject"] for r in responses}) == 73
    assert int(atoms.evaluations["correct"].sum()) == sum(r["correct"] == "T" for r in responses) == 4371
    assert (atoms.evaluations["total"] == 1).all() and atoms.evaluations["group"].isna().all()


def test_each_evaluation_keeps_the_answer_the_subject_wrote(atoms: Dataset, atoms_dir: Path) -> None:
    responses = _csv(atoms_dir / "responses.csv")
    written = {(r["program"], r["subject"]): r["answer"] for r in responses}
    kept = {(str(e.program_id), str(e.participant_id)): e.answer for e in atoms.evaluations.itertuples()}
    assert kept == written and str(atoms.evaluations["answer"].dtype) == "string"
    assert sum(a == "" for a in kept.values()) > 0  # an empty answer stays an answer, not a missing one


def test_programs_come_in_63_mutual_confusing_clean_pairs(atoms: Dataset) -> None:
    by_id = {p.id: p for p in atoms.programs}
    pairs = {frozenset((p.id, p.meta["pair"])) for p in atoms.programs}
    assert len(pairs) == 63
    for p in atoms.programs:
        twin = by_id[p.meta["pair"]]
        assert twin.meta["pair"] == p.id and {p.meta["type"], twin.meta["type"]} == {"Confusing", "Non-confusing"}
        assert p.meta["atom"] and p.meta["answer"] is not None


def test_class_balance_under_the_default_rule(atoms: Dataset) -> None:
    labels = human_labels(atoms, dataset_cfg(rule="mean_abu50", min_fraction=0.5, group="all", readers="all"))
    assert labels.balance()["n"] == 126 and 0 < labels.balance()["negatives"] < 126


def test_a_changed_file_fails_its_checksum(atoms_dir: Path, tmp_path: Path) -> None:
    copy = tmp_path / "atoms"
    shutil.copytree(atoms_dir, copy)
    assert at.checksum_problems(copy) == []
    data = bytearray((copy / "programs.csv").read_bytes())
    data[50] ^= 0x01
    (copy / "programs.csv").write_bytes(bytes(data))
    ((name, detail),) = at.checksum_problems(copy)
    assert name == "programs.csv" and detail.startswith("sha256 ") and "\n" not in detail


def _database(atoms_dir: Path, path: Path) -> None:
    """confusion.db's three tables (and a login table the loader must not need), from the CSVs."""
    integer = {"id", "pair", "subject", "program", "duration_ms", "position"}

    def values(row: dict[str, str]) -> list[Any]:
        return [int(v) if k in integer else v for k, v in row.items()]

    tags = _csv(atoms_dir / "atom_tags.csv")
    tag_ids = {name: i for i, name in enumerate(sorted({t["atom"] for t in tags}), start=1)}
    with sqlite3.connect(path) as db:
        db.execute("create table code (ID integer, Type text, Pair integer, Answer text, Code text)")
        db.executemany("insert into code values (?,?,?,?,?)", map(values, _csv(atoms_dir / "programs.csv")))
        db.execute("create table UserCode (UserID, CodeID, Correct, Answer, Duration, rank)")
        db.executemany("insert into UserCode values (?,?,?,?,?,?)", map(values, _csv(atoms_dir / "responses.csv")))
        db.execute("create table tag (ID integer, Tag text)")
        db.executemany("insert into tag values (?,?)", [(i, n) for n, i in tag_ids.items()])
        db.execute("create table CodeTags (CodeID integer, TagID integer)")
        db.executemany("insert into CodeTags values (?,?)", [(int(t["program"]), tag_ids[t["atom"]]) for t in tags])
        db.execute("create table users (name text, password text)")
    db.close()


@pytest.fixture
def server(atoms_dir: Path, tmp_path: Path) -> Iterator[str]:
    mirror = tmp_path / "mirror"
    (mirror / "snippet_study").mkdir(parents=True)
    _database(atoms_dir, mirror / at.DATABASE_PATH)
    with serve_folder(mirror) as url:
        yield url


def test_download_reads_the_database_into_verified_csv_files(
    server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("MCU_EXP_DATA", raising=False)
    monkeypatch.setenv(at.BASE_URL_ENV, server)
    dataset = load_dataset(dataset_cfg(format="atoms", name="atoms", download=True))
    assert dataset.source.endswith("(downloaded, sha256 verified)") and len(dataset.evaluations) == 6069
    cache = tmp_path / "xdg" / "mcu_exp" / "data" / "atoms"
    assert sorted(p.name for p in cache.iterdir()) == ["atom_tags.csv", "programs.csv", "responses.csv"]
    assert sorted(p.name for p in cache.parent.iterdir()) == ["atoms"]  # no temporary folder left


def test_a_database_that_gives_other_rows_is_refused(server: str, tmp_path: Path) -> None:
    mirror = tmp_path / "mirror" / at.DATABASE_PATH
    with sqlite3.connect(mirror) as db:
        db.execute("update UserCode set Correct='T' where UserID=1 and CodeID=1")
    db.close()
    with pytest.raises(
        DatasetError, match=r"^downloaded responses\.csv \(derived from the download\) fails verification: sha256"
    ):
        at.download(tmp_path / "cache", url=server)
    assert not (tmp_path / "cache").exists()


def test_reliability_command_alpha_matches_krippendorff(
    atoms: Dataset, atoms_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    responses = _csv(atoms_dir / "responses.csv")
    subjects = sorted({r["subject"] for r in responses})
    programs = sorted({r["program"] for r in responses})
    matrix = np.full((len(subjects), len(programs)), np.nan)
    for r in responses:
        matrix[subjects.index(r["subject"]), programs.index(r["program"])] = float(r["correct"] == "T")
    expected = krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal")
    reliability_main(["dataset=atoms", f"dataset.root={atoms_dir}", "evaluation.ceiling_splits=50"], config_dir())
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("│ all"))
    cells = [c.strip() for c in row.strip("│").split("│")]
    assert cells[1] == "126 (0)"
    assert cells[2] == f"{expected:.3f}"  # α
    understood = {(r["subject"], r["program"]): r["correct"] == "T" for r in responses}
    keys, codes, in_a = same_splits(atoms, {pid: pid for pid in atoms.program_ids}, 50, seed=0)
    half = recompute(keys, codes, in_a, {k: int(v) for k, v in understood.items()}, 1, understood)
    printed = [cells[3], cells[5], cells[6], cells[7]]  # the point before each [95 % CI over programs]
    assert [c.split(" [")[0] for c in printed] == [f"{half[k]:.3f}" for k in PRINTED]


def test_alpha_and_split_half_reproduce_from_the_raw_file(atoms: Dataset, atoms_dir: Path) -> None:
    # Per answer, in plain Python: one question, right when the study judged it so (T).
    understood = {(r["subject"], r["program"]): r["correct"] == "T" for r in _csv(atoms_dir / "responses.csv")}
    right = {key: int(value) for key, value in understood.items()}
    splits = 20
    found = split_half(atoms, splits=splits, seed=3).figures
    assert found["krippendorff_alpha"] == pytest.approx(nominal_alpha(understood), abs=1e-12)
    keys, codes, in_a = same_splits(atoms, {pid: pid for pid in atoms.program_ids}, splits, seed=3)
    assert (len(keys), int(codes.max()) + 1) == (6069, 126)
    expected = recompute(keys, codes, in_a, right, 1, understood)
    for name, value in expected.items():
        assert found[name] == pytest.approx(value, abs=1e-12), name
