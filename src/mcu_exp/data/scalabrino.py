"""Loader for the Scalabrino et al. understandability data (50 Java methods, 444 evaluations).

Where the files come from (first that applies): ``dataset.root``; ``$MCU_EXP_DATA/scalabrino``;
the user cache when its files verify; a pinned, checksummed download into that cache.

A participant who said they did not understand a method was not asked its questions: the
row has no answer time (``TNPU`` empty) and ``AU`` 0. Such an evaluation gets ``total`` 0
(asked none), which :mod:`mcu_exp.data.labels` scores as not understood or leaves out
(``labels.readers``).

Every numeric column of ``evaluations.csv`` that describes the method rather than the
participant or their answers (the original study's code, documentation and readability
metrics: ``Cyclomatic complexity``, ``Readability``, ``LOC``, ...; see
:data:`NOT_PROGRAM_METRICS`) is constant within a program in the published file; each
becomes a per-program metric in ``Program.meta[DATASET_METRICS_KEY]`` (read with
:func:`mcu_exp.data.code_metrics.dataset_metrics`). A column that differs between two rows of
one program is left out, with one :class:`DatasetWarning`. Column names are kept as the
header spells them (``#assignments (avg)``, ``Operators/literals (area).1``, ...).
"""

from __future__ import annotations

import io
import os
import re
import textwrap
import warnings
from pathlib import Path
from typing import Any

import pandas as pd

import mcu_exp.data.download as dl
from mcu_exp.data.code_metrics import DATASET_METRICS_KEY
from mcu_exp.data.files import read_text
from mcu_exp.data.types import Dataset, DatasetError, DatasetWarning, Program, evaluations_frame

DATA_ENV = dl.DATA_ENV
"""Environment variable naming a folder that holds ``scalabrino/``."""

QUESTIONS_PER_EVALUATION = 3
POSITION_GROUPS = {1: "bachelor", 2: "master", 3: "phd", 4: "professional"}
REQUIRED_COLUMNS = (
    "participant_id",
    "system_name",
    "file_name",
    "snippet_signature",
    "developer_position",
    "AU",
    "PBU",
    "TNPU",
)
PARTICIPANT_COLUMNS = ("participant_id", "developer_position", "PE gen", "PE spec (java)")
"""Columns describing the participant (they vary within a program)."""
OUTCOME_COLUMNS = ("PBU", "TNPU", "AU", "TAU", "ABU50", "ABU", "BD50", "BD")
"""The participants' answers and the study's understandability targets (the human labels)."""
NOT_PROGRAM_METRICS = (
    *PARTICIPANT_COLUMNS,
    *OUTCOME_COLUMNS,
    "system_name",
    "file_name",
    "snippet_signature",
)
"""Columns never offered as program metrics; every other numeric column is one."""
_FILE_NAME = re.compile(r"^(\d+)-(\S+)$")


def _resolve(cfg: Any, url: str | None = None) -> tuple[Path, str]:
    """The data folder and a short note on how it was found (:func:`download.resolve_folder`)."""
    return dl.resolve_folder(
        cfg,
        "scalabrino",
        dl.is_verified,
        lambda cache: dl.download(cache, url=url),
        files=tuple(dl.file_urls(url)),
        label="Scalabrino",
    )


def resolve_root(cfg: Any, url: str | None = None) -> Path:
    """The folder holding ``evaluations.csv`` and ``snippets/``, downloading it if allowed.

    ``url`` (or ``$MCU_EXP_SCALABRINO_URL``) replaces the GitHub base URL of the download.
    """
    return _resolve(cfg, url)[0]


def strip_wrapper(text: str, path: Path | str = "<snippet>") -> str:
    """The method as participants saw it: without the splitter's package/class lines and ``}``.

    Leading tabs are expanded to 4 columns before de-indenting, since several files mix tab-
    and space-indented lines that only line up at that width.
    """
    lines = text.splitlines()
    if (
        len(lines) < 3
        or not lines[0].startswith("package ")
        or not re.match(r"^public class ds_6_snip\S*\s*\{\s*$", lines[1])
    ):
        raise DatasetError(f"{path}: expected line 1 'package ...;' and line 2 'public class ds_6_snip...{{'")
    body = "\n".join(lines[2:]).rstrip()
    if not body.endswith("}"):
        raise DatasetError(f"{path}: expected the class's closing '}}' on the last line")
    body = body[:-1].rstrip()
    expanded = []
    for line in body.split("\n"):
        indent = len(line) - len(line.lstrip(" \t"))
        expanded.append(line[:indent].expandtabs(4) + line[indent:])
    code = textwrap.dedent("\n".join(expanded)).strip("\n")
    if not code.strip():
        raise DatasetError(f"{path}: the snippet holds no code inside its wrapper")
    return code


def _snippet_for(program_id: str, snippets: Path, line: int, csv_path: Path) -> Path:
    match = _FILE_NAME.match(program_id)
    if not match:
        raise DatasetError(f"{csv_path}:{line}: file_name {program_id!r} is not of the form '<N>-<System>'")
    number, system = match.groups()
    prefix = f"ds_6_snip_{number}${system}_"
    found = sorted(p for p in snippets.iterdir() if p.name.startswith(prefix) and p.suffix == ".java")
    if len(found) != 1:
        raise DatasetError(
            f"{csv_path}:{line}: file_name {program_id!r} should match exactly one snippet "
            f"{snippets}/{prefix}*.java, found {len(found)}"
        )
    return found[0]


def _integers(frame: pd.DataFrame, column: str, allowed: set[int], path: Path) -> pd.Series:
    values = pd.to_numeric(frame[column], errors="coerce")
    bad = values.isna() | (values != values.round()) | ~values.isin(allowed)
    if bad.any():
        row = int(bad.to_numpy().nonzero()[0][0])
        raise DatasetError(
            f"{path}:{row + 2}: column {column} is '{frame[column].iloc[row]}', expected one of {sorted(allowed)}"
        )
    return values.astype(int)


def _program_metric_columns(frame: pd.DataFrame, path: Path) -> list[str]:
    """The numeric per-program metric columns, those constant within every program."""
    candidates = [c for c in frame.columns if c not in NOT_PROGRAM_METRICS and pd.api.types.is_numeric_dtype(frame[c])]
    if not candidates:
        return []
    varying = frame.groupby("file_name", sort=False)[candidates].nunique(dropna=False).gt(1)
    dropped = [c for c in candidates if varying[c].any()]
    if dropped:
        examples = []
        for column in dropped[:3]:
            program = varying.index[varying[column].to_numpy().nonzero()[0][0]]
            values = frame.loc[frame["file_name"] == program, column]
            first = values.iloc[0]
            other = next(i for i, v in values.items() if not (v == first or (pd.isna(v) and pd.isna(first))))
            examples.append(
                f"{column!r} (program {program!r}: {first} on line {values.index[0] + 2}, "
                f"{values[other]} on line {other + 2})"
            )
        warnings.warn(
            f"{path}: {len(dropped)} metric column(s) differ between rows of one program and "
            f"are left out of the program metrics: {', '.join(examples)}"
            f"{', ...' if len(dropped) > 3 else ''}",
            DatasetWarning,
            stacklevel=3,
        )
    return [c for c in candidates if c not in dropped]


_PARSED: dict[tuple[Any, ...], tuple[Dataset, list[warnings.WarningMessage]]] = {}
_REPLAYED: dict[Any, Any] = {}  # warnings registry of the replayed warnings: "default" shows each once
_MEMO_SIZE = 4


def _files_state(root: Path) -> tuple[Any, ...] | None:
    """What identifies the folder's parse: ``evaluations.csv``'s and every snippet's path, size,
    mtime and inode (None when either is missing: the parse reports it)."""
    try:
        csv = (root / dl.EVALUATIONS_FILE).stat()
        with os.scandir(root / dl.SNIPPETS_DIR) as entries:
            snippets = sorted((e.name, e.stat().st_size, e.stat().st_mtime_ns, e.inode()) for e in entries)
    except OSError:
        return None
    return (str(root.resolve()), csv.st_size, csv.st_mtime_ns, csv.st_ino, tuple(snippets))


def read_scalabrino(root: Path, name: str = "scalabrino", source: str = "") -> Dataset:
    """Load ``root/evaluations.csv`` and ``root/snippets/`` into a :class:`Dataset`.

    Parsed once per process and folder state (paths, sizes, mtimes): a sweep's in-process jobs
    share the parse, and its warnings are replayed to each (shown once under Python's default
    filter, as a repeated warning from one line would be). A changed file is parsed again."""
    state = _files_state(root)
    key = (state, name, source)
    found = _PARSED.get(key) if state is not None else None
    if found is None:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            dataset = _parse_scalabrino(root, name, source)
        found = (dataset, list(seen))
        if state is not None:
            if len(_PARSED) >= _MEMO_SIZE:
                _PARSED.clear()
            _PARSED[key] = found
    for w in found[1]:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, registry=_REPLAYED)
    return found[0]


def _parse_scalabrino(root: Path, name: str, source: str) -> Dataset:
    """Parse ``root/evaluations.csv`` and ``root/snippets/`` (no memo)."""
    csv_path = root / dl.EVALUATIONS_FILE
    snippets = root / dl.SNIPPETS_DIR
    for needed in (csv_path, snippets):
        if not needed.exists():
            raise DatasetError(f"{needed}: missing (expected the Scalabrino data in {root})")
    try:
        frame = pd.read_csv(io.StringIO(read_text(csv_path)), dtype={"participant_id": str, "file_name": str})
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        detail = " ".join(str(err).split())
        raise DatasetError(f"{csv_path}: cannot parse as CSV: {detail}") from err
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise DatasetError(f"{csv_path}:1: missing columns {missing}")
    if frame.empty:
        raise DatasetError(f"{csv_path}: no evaluations after the header, expected at least one row")
    for column in ("participant_id", "file_name"):
        empty = frame[column].isna()
        if empty.any():
            row = int(empty.to_numpy().nonzero()[0][0])
            raise DatasetError(f"{csv_path}:{row + 2}: column {column} is empty")
    correct = _integers(frame, "AU", set(range(QUESTIONS_PER_EVALUATION + 1)), csv_path)
    perceived = _integers(frame, "PBU", {0, 1}, csv_path)
    position = _integers(frame, "developer_position", set(POSITION_GROUPS), csv_path)
    asked = frame["TNPU"].notna()
    answered_unasked = ~asked & (correct > 0)
    if answered_unasked.any():
        row = int(answered_unasked.to_numpy().nonzero()[0][0])
        raise DatasetError(
            f"{csv_path}:{row + 2}: AU is {correct.iloc[row]} but TNPU is empty, expected AU 0 "
            "for a participant without an answer time (not asked the questions)"
        )

    metrics = _program_metric_columns(frame, csv_path)
    programs: list[Program] = []
    for first in (~frame["file_name"].duplicated()).to_numpy().nonzero()[0].tolist():
        record = frame.iloc[first]
        snippet = _snippet_for(record["file_name"], snippets, first + 2, csv_path)
        programs.append(
            Program(
                id=record["file_name"],
                language="java",
                code=strip_wrapper(read_text(snippet), snippet),
                meta={
                    "system_name": record["system_name"],
                    "snippet_signature": record["snippet_signature"],
                    "snippet_file": snippet.name,
                    DATASET_METRICS_KEY: {c: float(record[c]) for c in metrics},
                },
            )
        )
    evaluations = evaluations_frame(
        program_id=frame["file_name"].tolist(),
        participant_id=frame["participant_id"].str.strip().tolist(),
        correct=correct.tolist(),
        total=(asked.astype(int) * QUESTIONS_PER_EVALUATION).tolist(),
        perceived=perceived.astype(bool).tolist(),
        group=position.map(POSITION_GROUPS).tolist(),
    )
    where = f"{root} ({source})" if source else str(root)
    return Dataset(
        name=name,
        programs=programs,
        evaluations=evaluations,
        questions=[],
        source=where,
        evaluations_file=str(csv_path),
    )


def load_scalabrino(cfg: Any, url: str | None = None) -> Dataset:
    """Resolve the data folder from ``cfg`` (see :func:`resolve_root`) and load it."""
    root, how = _resolve(cfg, url)
    return read_scalabrino(root, name=getattr(cfg, "name", None) or "scalabrino", source=how)
