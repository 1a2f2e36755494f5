"""Loader for the atoms-of-confusion study (Gopstein et al., FSE 2017): 126 small C programs in
63 confusing/clean pairs, 73 subjects, 6,069 answers to "what does this program print?".

Where the files come from (first that applies): ``dataset.root``; ``$MCU_EXP_DATA/atoms``; the
user cache when its files verify; else a pinned download of the study's ``confusion.db`` from
which the three published tables are read (``code``, ``UserCode``, ``CodeTags`` with ``tag``;
never its login tables) into ``programs.csv``, ``responses.csv`` and ``atom_tags.csv``, each
checked against its published sha256. The repository has no licence file: the data is
downloaded, never redistributed.

Each answer is one evaluation with one question (``total`` 1, ``correct`` 1 when the study judged
it right, ``answer`` the text the subject wrote), so its ABU50 is the answer being right. Programs have language ``c``; the pair is kept
in ``Program.meta`` (``pair``: the twin's id, ``type``: Confusing / Non-confusing, ``atom``,
``answer``: the exact output the answer key gives), with ``pair_role`` (the Non-confusing twin is
the ``control``, the Confusing one the ``treatment``) and ``pair_kind`` (the atom) as
:mod:`mcu_exp.data.pairs` reads every paired dataset.
"""

from __future__ import annotations

import csv
import io
import os
import sqlite3
from pathlib import Path
from typing import Any

import mcu_exp.data.download as dl
from mcu_exp.data.files import read_text
from mcu_exp.data.pairs import CONTROL, KIND, ROLE, TREATMENT
from mcu_exp.data.types import Dataset, DatasetError, Program, evaluations_frame

NAME = "atoms"
REPOSITORY = "dgopstein/atoms-of-confusion"
COMMIT = "7aed29b562fc8e9bfdab59800572555dea3a51d4"
DEFAULT_BASE_URL = f"https://raw.githubusercontent.com/{REPOSITORY}/{COMMIT}/"
BASE_URL_ENV = "MCU_EXP_ATOMS_URL"
"""Environment variable that replaces :data:`DEFAULT_BASE_URL` (a mirror, a test server)."""
DATABASE_PATH = "snippet_study/confusion.db"
PROGRAMS_FILE, RESPONSES_FILE, TAGS_FILE = "programs.csv", "responses.csv", "atom_tags.csv"
QUERIES = {
    PROGRAMS_FILE: (("id", "type", "pair", "answer", "code"), "select ID,Type,Pair,Answer,Code from code order by ID"),
    RESPONSES_FILE: (
        ("subject", "program", "correct", "answer", "duration_ms", "position"),
        "select UserID,CodeID,Correct,Answer,Duration,rank from UserCode order by UserID,CodeID",
    ),
    TAGS_FILE: (
        ("program", "atom"),
        "select ct.CodeID,t.Tag from CodeTags ct join tag t on t.ID=ct.TagID order by ct.CodeID",
    ),
}
"""Each CSV file: its header and the query on ``confusion.db`` that gives its rows (SOURCE.md)."""
SHA256 = {
    PROGRAMS_FILE: "cf7015f48e21935f82d1a511803373e453ec3da7bf974f5f1af9fe321774423b",
    RESPONSES_FILE: "086f797efdf7dbb04d569beba42443511efca38b3122462b6d78c60a363a0716",
    TAGS_FILE: "9bfbe8be3d8789897104627c6a969c9a30333aa4cf21399dc8d8c82b33ac608f",
}
TYPES = ("Confusing", "Non-confusing")
CLEAN = TYPES[1]  # the control of each pair: the program without the atom
JUDGEMENTS = {"T": 1, "F": 0}


def base_url(override: str | None = None) -> str:
    """The repository root URL: ``override``, else ``$MCU_EXP_ATOMS_URL``, else GitHub."""
    url = override or os.environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL
    return url if url.endswith("/") else url + "/"


def checksum_problems(root: Path) -> list[tuple[str, str]]:
    """``(relative path, what is wrong)`` for each CSV file failing its check (empty: verified)."""
    return dl.file_problems(root, SHA256)


def is_verified(root: Path) -> bool:
    """True when ``root`` holds the three CSV files with the published checksums."""
    return root.is_dir() and not checksum_problems(root)


def tables_from_database(folder: Path) -> None:
    """Write the three CSV files from ``folder/confusion.db`` (only the tables of :data:`QUERIES`),
    then delete the database: the cache keeps what the loader reads."""
    database = folder / Path(DATABASE_PATH).name
    try:
        connection = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
        try:
            for name, (header, query) in QUERIES.items():
                rows = connection.execute(query).fetchall()
                with (folder / name).open("w", newline="", encoding="utf-8") as handle:
                    writer = csv.writer(handle)
                    writer.writerow(header)
                    writer.writerows(rows)
        finally:
            connection.close()
    except sqlite3.Error as err:
        raise DatasetError(f"downloaded {DATABASE_PATH}: cannot read it as the study's SQLite database: {err}") from err
    database.unlink()


def download(dest: Path | None = None, url: str | None = None, timeout: float = 60.0) -> Path:
    """Fetch the pinned ``confusion.db``, read its three tables into CSV files, verify them."""
    dest = Path(dest) if dest is not None else dl.cache_root(NAME)
    urls = {Path(DATABASE_PATH).name: base_url(url) + DATABASE_PATH}
    return dl.download_verified(dest, urls, checksum_problems, timeout, derive=tables_from_database)


def resolve_root(cfg: Any, url: str | None = None) -> tuple[Path, str]:
    """The data folder and how it was found (see the module docstring)."""
    return dl.resolve_folder(cfg, NAME, is_verified, lambda cache: download(cache, url=url), files=tuple(SHA256))


def _read(path: Path, header: tuple[str, ...]) -> list[tuple[int, dict[str, str]]]:
    """``(line, row)`` of a CSV file whose header holds ``header`` (a quoted field may span lines)."""
    if not path.is_file():
        raise DatasetError(f"{path}: missing (expected the atoms-of-confusion data in {path.parent})")
    reader = csv.DictReader(io.StringIO(read_text(path), newline=""))
    missing = [c for c in header if c not in (reader.fieldnames or [])]
    if missing:
        raise DatasetError(f"{path}:1: missing columns {missing}")
    rows = []
    for row in reader:
        rows.append((reader.line_num, row))
    if not rows:
        raise DatasetError(f"{path}: no rows after the header")
    return rows


def _id(value: str | None, path: Path, line: int, column: str, known: set[str] | None = None) -> str:
    text = (value or "").strip()
    if not text.isdigit() or (known is not None and text not in known):
        what = "a program id of programs.csv" if known is not None else "a whole number"
        raise DatasetError(f"{path}:{line}: column {column} is {text!r}, expected {what}")
    return text


def read_atoms(root: Path, name: str = NAME, source: str = "") -> Dataset:
    """Load ``root/programs.csv``, ``responses.csv`` and ``atom_tags.csv`` into a :class:`Dataset`."""
    programs_path, responses_path, tags_path = root / PROGRAMS_FILE, root / RESPONSES_FILE, root / TAGS_FILE
    rows = _read(programs_path, QUERIES[PROGRAMS_FILE][0])
    records: dict[str, dict[str, str]] = {}
    for line, row in rows:
        pid = _id(row["id"], programs_path, line, "id")
        if row["type"] not in TYPES:
            raise DatasetError(f"{programs_path}:{line}: column type is {row['type']!r}, expected one of {list(TYPES)}")
        records[pid] = row
    for line, row in rows:
        twin = _id(row["pair"], programs_path, line, "pair", set(records))
        other = records[twin]
        if other["pair"].strip() != row["id"].strip() or other["type"] == row["type"]:
            raise DatasetError(
                f"{programs_path}:{line}: program {row['id']} pairs with {twin}, expected a mutual pair "
                "of one Confusing and one Non-confusing program"
            )
    atoms = {}
    for line, row in _read(tags_path, QUERIES[TAGS_FILE][0]):
        atoms[_id(row["program"], tags_path, line, "program", set(records))] = row["atom"]
    pids, subjects, correct, answers = [], [], [], []
    for line, row in _read(responses_path, QUERIES[RESPONSES_FILE][0]):
        pids.append(_id(row["program"], responses_path, line, "program", set(records)))
        subjects.append(_id(row["subject"], responses_path, line, "subject"))
        if row["correct"] not in JUDGEMENTS:
            raise DatasetError(f"{responses_path}:{line}: column correct is {row['correct']!r}, expected T or F")
        correct.append(JUDGEMENTS[row["correct"]])
        answers.append(row["answer"])
    programs = [
        Program(
            id=pid,
            language="c",
            code=row["code"].replace("\r\n", "\n").strip("\n"),
            meta={
                "pair": row["pair"].strip(),
                "type": row["type"],
                "atom": atoms.get(pid),
                "answer": row["answer"],
                ROLE: CONTROL if row["type"] == CLEAN else TREATMENT,
                KIND: atoms.get(pid) or atoms.get(row["pair"].strip()) or "",
            },
        )
        for pid, row in records.items()
    ]
    return Dataset(
        name=name,
        programs=programs,
        evaluations=evaluations_frame(pids, subjects, correct, [1] * len(pids), answer=answers),
        questions=[],
        source=f"{root} ({source})" if source else str(root),
        evaluations_file=str(responses_path),
    )


def load_atoms(cfg: Any, url: str | None = None) -> Dataset:
    """Resolve the data folder from ``cfg`` (see :func:`resolve_root`) and load it."""
    root, how = resolve_root(cfg, url)
    return read_atoms(root, name=getattr(cfg, "name", None) or NAME, source=how)
