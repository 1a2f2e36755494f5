"""The generic dataset format: a folder anyone can produce (see docs/dataset-format.md).

``programs.csv`` (``program_id, language`` and ``code`` or ``code_file``), ``evaluations.csv``
(``program_id, participant_id, correct, total`` and optional ``perceived``, ``group``; ``total``
0 means the participant was not asked the questions) and an optional ``questions.jsonl``
(its ``correct`` keys are optional). Extra ``programs.csv`` columns are kept in
``Program.meta`` as text; those whose every cell is a number or empty are also the program's
metrics (``Program.meta[DATASET_METRICS_KEY]``, see :mod:`mcu_exp.data.code_metrics`), except
the optional ``pair`` and ``variant`` columns, which name each program's twin
(:mod:`mcu_exp.data.pairs`).
Every file must be UTF-8, and a ``code_file`` must resolve,
symlinks followed, inside the folder, to a regular file with no other hard link (a hard link
made inside the folder to a file outside it would pass the path check).
Everything is validated on load; the first problem raises a :class:`DatasetError` naming the
file, the line (header = line 1) and what was expected.
"""

from __future__ import annotations

import csv
import io
import json
import os
import stat
import warnings
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from mcu_exp.data.code_metrics import DATASET_METRICS_KEY, numeric_columns
from mcu_exp.data.files import decode_text, read_text
from mcu_exp.data.pairs import mark_pairs
from mcu_exp.data.types import (
    GROUPS,
    Dataset,
    DatasetError,
    DatasetWarning,
    Program,
    Question,
    evaluations_frame,
)

PROGRAMS_FILE = "programs.csv"
EVALUATIONS_FILE = "evaluations.csv"
QUESTIONS_FILE = "questions.jsonl"
PAIR_COLUMNS = ("pair", "variant")
"""Optional ``programs.csv`` columns naming each program's twin and its role (never metrics)."""
QUESTION_KEYS = ("program_id", "question_id", "text", "options")
"""Keys every question must have; ``correct`` is optional (only proxy P0 needs it)."""


def _rows(path: Path, required: tuple[str, ...], one_of: tuple[str, ...] = ()) -> Iterator[tuple[int, dict[str, str]]]:
    """Yield ``(line where the record starts, row)`` of a CSV file after checking its header.

    ``required`` columns must all be present, and at least one of ``one_of`` when given.
    """
    if not path.is_file():
        raise DatasetError(f"{path}: missing file")
    with io.StringIO(read_text(path), newline="") as handle:
        reader = csv.reader(handle)
        try:
            header = [h.strip() for h in next(reader)]
        except StopIteration:
            raise DatasetError(f"{path}:1: empty file, expected a header row") from None
        except csv.Error as err:
            raise DatasetError(f"{path}:1: {_csv_problem(err)} (in the header)") from None
        missing = [c for c in required if c not in header]
        if missing:
            raise DatasetError(f"{path}:1: missing column(s) {', '.join(missing)}; the header has {', '.join(header)}")
        if one_of and not any(c in header for c in one_of):
            raise DatasetError(f"{path}:1: missing column {' or '.join(one_of)} (one is required)")
        duplicated = sorted({h for h in header if header.count(h) > 1})
        if duplicated:
            raise DatasetError(f"{path}:1: column(s) {', '.join(duplicated)} appear twice")
        previous = reader.line_num
        while True:
            try:
                values = next(reader)
            except StopIteration:
                return
            except csv.Error as err:
                raise DatasetError(f"{path}:{previous + 1}: {_csv_problem(err)}") from None
            line, previous = previous + 1, reader.line_num
            if not values:
                continue
            if len(values) != len(header):
                raise DatasetError(f"{path}:{line}: expected {len(header)} fields like the header, got {len(values)}")
            yield line, dict(zip(header, values, strict=True))


def _csv_problem(err: csv.Error) -> str:
    """What the csv module's error means for the user: a cell over its size limit (long inline
    code) gets the way around it."""
    if "field larger than field limit" in str(err):
        return (
            f"a cell is longer than {csv.field_size_limit():,} characters (the CSV reader's limit); "
            "expected a shorter cell: put long source code in a file and name it in the code_file column"
        )
    return f"malformed CSV: {err}"


def _integer(value: str, column: str, where: str) -> int:
    try:
        return int(value.strip())
    except ValueError:
        raise DatasetError(f"{where}: {column} is {value!r}, expected an integer") from None


def _read_programs(root: Path) -> list[Program]:
    path = root / PROGRAMS_FILE
    programs: list[Program] = []
    extras: list[dict[str, str]] = []
    first_line: dict[str, int] = {}
    for line, row in _rows(path, ("program_id", "language"), one_of=("code", "code_file")):
        where = f"{path}:{line}"
        if DATASET_METRICS_KEY in row:
            raise DatasetError(
                f"{path}:1: column {DATASET_METRICS_KEY!r} is reserved (it holds the program "
                "metrics in Program.meta); rename it"
            )
        program_id = row["program_id"].strip()
        if not program_id:
            raise DatasetError(f"{where}: empty program_id")
        if program_id in first_line:
            raise DatasetError(f"{where}: duplicate program_id {program_id!r} (first on line {first_line[program_id]})")
        first_line[program_id] = line
        language = row["language"].strip()
        if not language:
            raise DatasetError(f"{where}: empty language for program {program_id!r}")
        code = _program_code(root, row, where, program_id)
        meta = {k: v for k, v in row.items() if k not in ("program_id", "language", "code", "code_file")}
        programs.append(Program(id=program_id, language=language, code=code, meta=meta))
        extras.append({k: v for k, v in meta.items() if k not in PAIR_COLUMNS})
    return _with_pairs(_with_metrics(programs, extras), path)


def _with_pairs(programs: list[Program], path: Path) -> list[Program]:
    """The programs with their twins marked (:func:`mcu_exp.data.pairs.mark_pairs`) when
    ``programs.csv`` has a ``pair`` column, which then needs a ``variant`` column too."""
    if not programs or "pair" not in programs[0].meta:
        return programs
    if "variant" not in programs[0].meta:
        raise DatasetError(f"{path}:1: column pair needs a variant column (e.g. original / edited) to orient each pair")
    rows = [(p.id, str(p.meta["pair"]).strip(), str(p.meta["variant"]).strip()) for p in programs]
    marks = mark_pairs(rows, str(path))
    return [replace(p, meta={**p.meta, **marks.get(p.id, {})}) for p in programs]


def _with_metrics(programs: list[Program], extras: list[dict[str, str]]) -> list[Program]:
    """Add the numeric extra columns (every cell a number or empty) as the program metrics."""
    columns = list(extras[0]) if extras else []
    numeric = numeric_columns(extras, columns)
    if not numeric:
        return programs
    return [
        replace(
            program,
            meta={**program.meta, DATASET_METRICS_KEY: {c: v[i] for c, v in numeric.items()}},
        )
        for i, program in enumerate(programs)
    ]


def _program_code(root: Path, row: dict[str, str], where: str, program_id: str) -> str:
    inline = row.get("code") or ""
    code_file = (row.get("code_file") or "").strip()
    if inline.strip() and code_file:
        raise DatasetError(f"{where}: program {program_id!r} has both code and code_file, expected exactly one")
    if code_file:
        relative = Path(code_file)
        if relative.is_absolute():
            raise DatasetError(f"{where}: code_file {code_file!r} must be relative to {root}")
        target = _inside(root, code_file, where)
        if not target.is_file():
            raise DatasetError(f"{where}: code_file {code_file!r} not found (looked for {target})")
        try:
            inline = decode_text(_own_file_bytes(target, code_file, where), target).rstrip("\n")
        except DatasetError as err:
            raise DatasetError(f"{where}: code_file {err}") from None
    if not inline.strip():
        raise DatasetError(f"{where}: empty code for program {program_id!r}")
    return inline


def _inside(root: Path, code_file: str, where: str) -> Path:
    """``root / code_file`` with every symlink followed; an error unless it stays in ``root``."""
    try:
        target = (root / code_file).resolve()
    except (OSError, RuntimeError) as err:
        raise DatasetError(f"{where}: code_file {code_file!r} cannot be resolved: {err}") from None
    base = root.resolve()
    if not target.is_relative_to(base):
        raise DatasetError(
            f"{where}: code_file {code_file!r} resolves to {target}, outside the dataset folder "
            f"{base}; expected a file inside it"
        )
    return target


def _own_file_bytes(target: Path, code_file: str, where: str) -> bytes:
    """The bytes of ``target``, read through one descriptor whose file is checked to be a
    regular file with a single link: a hard link inside the folder to a file elsewhere
    (``ln /etc/passwd data/x.java``) has the path of a dataset file and the content of another."""
    try:
        fd = os.open(target, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as err:
        raise DatasetError(f"{where}: code_file {code_file!r} cannot be read: {err.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise DatasetError(f"{where}: code_file {code_file!r} is not a regular file")
        if info.st_nlink > 1:
            raise DatasetError(
                f"{where}: code_file {code_file!r} has {info.st_nlink} hard links, so it may be a file from "
                "outside the dataset folder; expected a file of its own: replace it by a copy "
                f"(cp --remove-destination SOURCE {code_file})"
            )
        return handle.read()


def _read_evaluations(root: Path, known: set[str]) -> dict[str, list[Any]]:
    path = root / EVALUATIONS_FILE
    columns: dict[str, list[Any]] = {
        k: [] for k in ("program_id", "participant_id", "correct", "total", "perceived", "group")
    }
    for line, row in _rows(path, ("program_id", "participant_id", "correct", "total")):
        where = f"{path}:{line}"
        program_id = row["program_id"].strip()
        if program_id not in known:
            raise DatasetError(f"{where}: program_id {program_id!r} is not in {PROGRAMS_FILE}")
        participant = row["participant_id"].strip()
        if not participant:
            raise DatasetError(f"{where}: empty participant_id")
        correct = _integer(row["correct"], "correct", where)
        total = _integer(row["total"], "total", where)
        if total < 0:
            raise DatasetError(f"{where}: total is {total}, expected 0 (not asked) or a positive number of questions")
        if total == 0 and correct != 0:
            raise DatasetError(
                f"{where}: correct is {correct}, expected 0 (total 0: the participant was not asked the questions)"
            )
        if not 0 <= correct <= total:
            raise DatasetError(f"{where}: correct is {correct}, expected 0..{total} (total)")
        perceived = (row.get("perceived") or "").strip()
        if perceived not in ("", "0", "1"):
            raise DatasetError(f"{where}: perceived is {perceived!r}, expected 0, 1 or empty")
        group = (row.get("group") or "").strip().lower()
        if group and group not in GROUPS:
            raise DatasetError(f"{where}: group is {row['group']!r}, expected one of {', '.join(GROUPS)} or empty")
        columns["program_id"].append(program_id)
        columns["participant_id"].append(participant)
        columns["correct"].append(correct)
        columns["total"].append(total)
        columns["perceived"].append(perceived == "1" if perceived else None)
        columns["group"].append(group or None)
    return columns


def _question(obj: Any, where: str) -> Question:
    if not isinstance(obj, dict):
        raise DatasetError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    missing = [k for k in QUESTION_KEYS if k not in obj]
    if missing:
        raise DatasetError(f"{where}: missing key(s) {', '.join(missing)}")
    ids = {}
    for key in ("program_id", "question_id"):
        value = obj[key]
        if isinstance(value, bool) or not isinstance(value, (str, int)) or not str(value).strip():
            raise DatasetError(f"{where}: {key} is {value!r}, expected a non-empty string")
        ids[key] = str(value).strip()
    text, options, correct = obj["text"], obj["options"], obj.get("correct")
    if not isinstance(text, str) or not text.strip():
        raise DatasetError(f"{where}: text is {text!r}, expected a non-empty string")
    if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
        raise DatasetError(f"{where}: options must be a list of strings")
    if len(options) < 2:
        raise DatasetError(f"{where}: {len(options)} option(s), expected at least 2")
    if correct is None:
        return Question(text=text, options=tuple(options), correct=None, source=where, **ids)
    if isinstance(correct, bool) or not isinstance(correct, int):
        raise DatasetError(f"{where}: correct is {correct!r}, expected a 0-based option index (or no key)")
    if not 0 <= correct < len(options):
        raise DatasetError(f"{where}: correct is {correct}, expected an option index in 0..{len(options) - 1}")
    return Question(text=text, options=tuple(options), correct=correct, source=where, **ids)


def read_questions(path: Path | str, program_ids: set[str] | None = None) -> list[Question]:
    """Read multiple-choice questions from a JSONL file, one object per line.

    Each object: ``{"program_id", "question_id", "text", "options": [...], "correct": i}``
    with ``correct`` the 0-based index of the right option, or absent (or null) when the key
    is unknown: such a question loads with ``correct=None`` (proxy P0 then refuses the data;
    P1–P3 do not use questions). ``program_ids``, when given, is the set every ``program_id``
    must belong to. Blank lines are skipped; each question's ``source`` is its file and line.
    """
    path = Path(path).expanduser()
    if not path.is_file():
        raise DatasetError(f"{path}: missing questions file")
    if path.suffix.lower() != ".jsonl":
        raise DatasetError(f"{path}: questions must be a .jsonl file (one JSON object per line)")
    questions: list[Question] = []
    first_line: dict[tuple[str, str], int] = {}
    with io.StringIO(read_text(path), newline=None) as handle:
        for line, text in enumerate(handle, start=1):
            if not text.strip():
                continue
            where = f"{path}:{line}"
            try:
                obj = json.loads(text)
            except json.JSONDecodeError as err:
                raise DatasetError(f"{where}: malformed JSON: {err.msg} at column {err.colno}") from err
            question = _question(obj, where)
            if program_ids is not None and question.program_id not in program_ids:
                raise DatasetError(f"{where}: program_id {question.program_id!r} is not a program of the dataset")
            key = (question.program_id, question.question_id)
            if key in first_line:
                raise DatasetError(
                    f"{where}: duplicate question_id {key[1]!r} for program {key[0]!r} "
                    f"(first on line {first_line[key]})"
                )
            first_line[key] = line
            questions.append(question)
    return questions


def load_custom(root: Path | str, name: str = "custom") -> Dataset:
    """Load and validate a dataset folder in the generic format."""
    root = Path(root).expanduser()
    if not root.is_dir():
        raise DatasetError(f"{root}: dataset folder not found (expected {PROGRAMS_FILE} etc. in it)")
    programs = _read_programs(root)
    if not programs:
        raise DatasetError(f"{root / PROGRAMS_FILE}: no programs, expected at least one row")
    known = {p.id for p in programs}
    columns = _read_evaluations(root, known)
    if not columns["program_id"]:
        raise DatasetError(f"{root / EVALUATIONS_FILE}: no evaluations after the header, expected at least one row")
    evaluations = evaluations_frame(**columns)
    questions_path = root / QUESTIONS_FILE
    questions = read_questions(questions_path, known) if questions_path.exists() else []
    dataset = Dataset(
        name=name,
        programs=programs,
        evaluations=evaluations,
        questions=questions,
        source=str(root),
        evaluations_file=str(root / EVALUATIONS_FILE),
    )
    unevaluated = dataset.unevaluated_program_ids
    if unevaluated:
        warnings.warn(
            f"{root / EVALUATIONS_FILE}: {len(unevaluated)} of {len(programs)} programs have no "
            f"evaluations and get no human label (first: {unevaluated[0]!r})",
            DatasetWarning,
            stacklevel=2,
        )
    return dataset
