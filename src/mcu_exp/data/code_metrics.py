"""Per-program code metrics: the baselines a model has to beat ("does it beat lines of code?").

:func:`code_metrics` measures every program's code with ``lizard`` plus plain counts;
:func:`dataset_metrics` returns the metrics a dataset ships per program (Scalabrino's original
study metrics, extra numeric columns of a custom ``programs.csv``); :func:`program_metrics`
joins both. Each frame is indexed by ``program_id`` in dataset order, one float column per
metric, values raw: higher means more of the metric. Each code metric declares in advance
which way it points (:data:`CODE_DIRECTIONS`: higher = harder to understand), and the measure
table scores it in that direction, so an AUC above 0.5 reads "ranks as the literature
expects"; the dataset's own metrics have no declared direction and are scored raw.

Loaders hand their per-program metrics over in ``Program.meta[DATASET_METRICS_KEY]``, a dict
``{column: float}`` (NaN where a program has no value): no new field on the records, and the
values follow :meth:`Dataset.subset` and ``load_dataset``'s reordering with the programs.
"""

from __future__ import annotations

import keyword
import math
import re
import warnings
from collections.abc import Callable, Iterator
from functools import lru_cache
from typing import Any

import pandas as pd

from mcu_exp.data.types import Dataset, DatasetError, DatasetWarning, Program

DATASET_METRICS_KEY = "dataset_metrics"
"""Key of ``Program.meta`` under which a loader stores ``{column: float}`` per program."""

CODE_PREFIX = "code."
DATASET_PREFIX = "dataset."

LIZARD_COLUMNS: dict[str, str] = {
    "code.cyclomatic_sum": "cyclomatic complexity (lizard CCN) summed over the functions "
    "lizard finds, methods of anonymous/inner classes included; 0 when it finds none",
    "code.cyclomatic_max": "largest cyclomatic complexity of one function; 0 when none",
    "code.functions": "number of functions lizard finds (anonymous-class methods count)",
    "code.nloc": "lines of code without blank and comment-only lines (lizard NLOC)",
    "code.tokens": "lizard's token count: comments and whitespace excluded, a string literal is one token",
    "code.distinct_identifiers": "distinct identifiers among lizard's tokens (comments and "
    "string literals are never looked into), the language's keywords and literal words "
    "(true, null, ...) left out where a keyword list is known (see KEYWORDS)",
}
"""Columns computed with lizard; NaN for a language lizard does not know."""

PLAIN_COLUMNS: dict[str, str] = {
    "code.characters": "length of the code in Unicode code points, whitespace included",
    "code.lines": "physical lines as str.splitlines counts them (blank and comment lines "
    "included; a final line break opens no line)",
}
"""Columns counted on the code string itself, for every language."""

CODE_COLUMNS: dict[str, str] = {**PLAIN_COLUMNS, **LIZARD_COLUMNS}
"""Every column of :func:`code_metrics`, in order, with what it measures."""

HARDER, EASIER = 1, -1  # a metric's declared direction: what a higher value means for understanding

CODE_DIRECTIONS: dict[str, int] = dict.fromkeys(CODE_COLUMNS, HARDER)
"""Each code metric's direction, declared before looking at any label: every one is a size or
complexity count, and more code, more branches (McCabe 1976), more functions and more
distinct identifiers to keep in mind are the classic predictors of code that is harder to read
and understand (Buse & Weimer 2010; Scalabrino et al. 2017, whose study is the built-in data).
The measure table scores each as −value, so AUC > 0.5 and ρ > 0 mean "as expected"."""

_JAVA = """abstract assert boolean break byte case catch char class const continue default do double
else enum extends final finally float for goto if implements import instanceof int interface
long native new package private protected public return short static strictfp super switch
synchronized this throw throws transient try void volatile while true false null"""
_C = """auto break case char const continue default do double else enum extern float for goto if
inline int long register restrict return short signed sizeof static struct switch typedef union
unsigned void volatile while _Bool _Complex NULL true false bool"""
_CPP = (
    _C
    + """ alignas alignof and asm catch class constexpr const_cast decltype delete
dynamic_cast explicit export friend mutable namespace new noexcept not nullptr operator or
private protected public reinterpret_cast static_assert static_cast template this
thread_local throw try typeid typename using virtual wchar_t xor override final"""
)
_JAVASCRIPT = """break case catch class const continue debugger default delete do else export
extends finally for function if import in instanceof new return super switch this throw try
typeof var void while with yield let static await async of true false null undefined"""
_TYPESCRIPT = (
    _JAVASCRIPT
    + """ any boolean number string symbol interface type enum
implements namespace declare readonly private protected public abstract as is keyof never
unknown"""
)
_CSHARP = """abstract as base bool break byte case catch char checked class const continue
decimal default delegate do double else enum event explicit extern false finally fixed float
for foreach goto if implicit in int interface internal is lock long namespace new null object
operator out override params private protected public readonly ref return sbyte sealed short
sizeof stackalloc static string struct switch this throw true try typeof uint ulong unchecked
unsafe ushort using virtual void volatile while var async await"""
_GO = """break case chan const continue default defer else fallthrough for func go goto if
import interface map package range return select struct switch type var true false nil iota"""

KEYWORDS: dict[str, frozenset[str]] = {
    "java": frozenset(_JAVA.split()),
    "python": frozenset(keyword.kwlist),
    "c": frozenset(_C.split()),
    "cpp": frozenset(_CPP.split()),
    "javascript": frozenset(_JAVASCRIPT.split()),
    "typescript": frozenset(_TYPESCRIPT.split()),
    "csharp": frozenset(_CSHARP.split()),
    "go": frozenset(_GO.split()),
}
"""Words not counted as identifiers, per language; other languages count every word."""

ALIASES: dict[str, str] = {
    "c++": "cpp",
    "cxx": "cpp",
    "c#": "csharp",
    "cs": "csharp",
    "golang": "go",
    "py": "python",
    "python3": "python",
    "js": "javascript",
    "ts": "typescript",
    "kt": "kotlin",
    "rs": "rust",
    "rb": "ruby",
}
"""Spellings of ``Program.language`` mapped to the names lizard and :data:`KEYWORDS` use."""

_IDENTIFIER = re.compile(r"^[^\W\d][\w$]*$|^\$[^\W\d]?[\w$]*$")
_MISSING = {"", "na", "nan", "n/a"}


def _language(language: str) -> str:
    name = language.strip().lower()
    return ALIASES.get(name, name)


def _lizard() -> Any:
    try:
        import lizard
        import lizard_languages
    except ImportError as err:  # pragma: no cover - lizard is a declared dependency
        raise ImportError("code metrics need lizard: pip install 'lizard>=1.17' (or reinstall mcu_exp)") from err
    return lizard, lizard_languages


@lru_cache(maxsize=256)
def lizard_file_name(language: str) -> str | None:
    """A file name whose extension makes lizard read ``language``; None when it has no reader.

    Matched case-insensitively against lizard's language names and extensions, after
    :data:`ALIASES` (``c++`` → ``cpp``, ``c#`` → ``csharp``, ...).
    """
    _, languages = _lizard()
    name = _language(language)
    for reader in languages.languages():
        names = {n.lower() for n in getattr(reader, "language_names", ())}
        extensions = [e.lower() for e in reader.ext]
        if name in names or name in extensions:
            return f"program.{reader.ext[0]}"
    return None


def _identifier_collector(found: set[str]) -> Callable[[Iterator[str], Any], Iterator[str]]:
    def collect(tokens: Iterator[str], reader: Any) -> Iterator[str]:
        for token in tokens:
            if _IDENTIFIER.match(token):
                found.add(token)
            yield token

    return collect


def _lizard_row(program: Program, file_name: str) -> dict[str, float]:
    return dict(_lizard_metrics(program.code, program.language, file_name))


@lru_cache(maxsize=4096)
def _lizard_metrics(code: str, language: str, file_name: str) -> tuple[tuple[str, float], ...]:
    """Lizard's metrics of one program's code, computed once per process (every job of a sweep
    run in one process asks for the same programs)."""
    lizard, _ = _lizard()
    words: set[str] = set()
    analyzer = lizard.FileAnalyzer([*lizard.get_extensions([]), _identifier_collector(words)])
    info = analyzer.analyze_source_code(file_name, code)
    complexities = [f.cyclomatic_complexity for f in info.function_list]
    keywords = KEYWORDS.get(_language(language), frozenset())
    return tuple(
        {
            "code.cyclomatic_sum": float(sum(complexities)),
            "code.cyclomatic_max": float(max(complexities, default=0)),
            "code.functions": float(len(complexities)),
            "code.nloc": float(info.nloc),
            "code.tokens": float(info.token_count),
            "code.distinct_identifiers": float(len(words - keywords)),
        }.items()
    )


def code_metrics(dataset: Dataset) -> pd.DataFrame:
    """The :data:`CODE_COLUMNS` of every program, indexed by ``program_id`` in dataset order.

    Lizard reads each program as the language ``Program.language`` names (see
    :func:`lizard_file_name`). A language lizard has no reader for gets NaN in the
    :data:`LIZARD_COLUMNS` (rather than lizard's C fallback), with one
    :class:`DatasetWarning` naming the languages; the plain counts are always given.
    Deterministic and offline.
    """
    rows: list[dict[str, float]] = []
    unknown: dict[str, int] = {}
    for program in dataset.programs:
        row = {"code.characters": float(len(program.code)), "code.lines": float(len(program.code.splitlines()))}
        file_name = lizard_file_name(program.language)
        if file_name is None:
            unknown[program.language] = unknown.get(program.language, 0) + 1
            row.update(dict.fromkeys(LIZARD_COLUMNS, math.nan))
        else:
            row.update(_lizard_row(program, file_name))
        rows.append(row)
    if unknown:
        listed = ", ".join(f"{lang!r} ({n} program{'s' * (n != 1)})" for lang, n in unknown.items())
        warnings.warn(
            f"dataset {dataset.name}: lizard has no reader for language {listed}; their "
            f"{', '.join(LIZARD_COLUMNS)} are NaN (only code.characters and code.lines are "
            "counted)",
            DatasetWarning,
            stacklevel=2,
        )
    return _frame(rows, dataset.program_ids, list(CODE_COLUMNS))


def dataset_metrics(dataset: Dataset) -> pd.DataFrame:
    """The metrics the dataset ships per program, as ``dataset.<column>`` float columns.

    Read from ``Program.meta[DATASET_METRICS_KEY]`` (filled by the Scalabrino and custom
    loaders); columns in order of first appearance, NaN where a program lacks one. A dataset
    without any gives a frame with the index and no columns.
    """
    columns: dict[str, None] = {}
    rows: list[dict[str, float]] = []
    for program in dataset.programs:
        given = program.meta.get(DATASET_METRICS_KEY) or {}
        if not isinstance(given, dict):
            raise DatasetError(
                f"dataset {dataset.name}: program {program.id!r} has meta[{DATASET_METRICS_KEY!r}] "
                f"of type {type(given).__name__}, expected a dict of column -> number"
            )
        row: dict[str, float] = {}
        for column, value in given.items():
            try:
                row[DATASET_PREFIX + str(column)] = float(value)
            except (TypeError, ValueError):
                raise DatasetError(
                    f"dataset {dataset.name}: program {program.id!r} has metric {column!r} = "
                    f"{value!r}, expected a number"
                ) from None
        columns.update(dict.fromkeys(row))
        rows.append(row)
    return _frame(rows, dataset.program_ids, list(columns))


def program_metrics(dataset: Dataset) -> pd.DataFrame:
    """:func:`code_metrics` and :func:`dataset_metrics` side by side (same index)."""
    return code_metrics(dataset).join(dataset_metrics(dataset))


def numeric_columns(rows: list[dict[str, str]], columns: list[str]) -> dict[str, list[float]]:
    """The ``columns`` whose every cell is a finite number or empty, as floats (NaN if empty).

    Empty, ``NA``, ``NaN`` and ``N/A`` (any case) count as empty; a column needs at least
    one number. Used by loaders of text tables to pick their metric columns.
    """
    numeric: dict[str, list[float]] = {}
    for column in columns:
        values: list[float] = []
        for row in rows:
            text = (row.get(column) or "").strip()
            if text.lower() in _MISSING:
                values.append(math.nan)
                continue
            try:
                value = float(text)
            except ValueError:
                break
            if not math.isfinite(value):
                break
            values.append(value)
        else:
            if any(not math.isnan(v) for v in values):
                numeric[column] = values
    return numeric


def _frame(rows: list[dict[str, float]], index: list[str], columns: list[str]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, index=pd.Index(index, name="program_id"), columns=columns)
    return frame.astype("float64")
