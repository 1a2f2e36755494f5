"""Code-metric baselines: lizard and plain counts per program, and the metrics datasets ship."""

from __future__ import annotations

import csv
import math
import re
import shutil
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from mcu_exp.data import Dataset, DatasetError, DatasetWarning, load_custom
from mcu_exp.data.code_metrics import (
    CODE_COLUMNS,
    DATASET_METRICS_KEY,
    LIZARD_COLUMNS,
    code_metrics,
    dataset_metrics,
    lizard_file_name,
    program_metrics,
)
from mcu_exp.data.scalabrino import NOT_PROGRAM_METRICS, read_scalabrino

# Columns of evaluations.csv that are about the participant or their answers, spelled out here
# independently of the loader's list.
NOT_METRICS = {
    "participant_id",
    "system_name",
    "file_name",
    "snippet_signature",
    "developer_position",
    "PE gen",
    "PE spec (java)",
    "PBU",
    "TNPU",
    "AU",
    "TAU",
    "ABU50",
    "ABU",
    "BD50",
    "BD",
}


def test_scalabrino_code_metrics_cover_every_program(scalabrino: Dataset) -> None:
    frame = code_metrics(scalabrino)
    assert len(frame) == 50
    assert frame.index.name == "program_id"
    assert frame.index.tolist() == scalabrino.program_ids
    assert frame.columns.tolist() == list(CODE_COLUMNS)
    assert not frame.isna().any().any()
    assert (frame["code.functions"] >= 1).all()
    assert (frame["code.cyclomatic_max"] <= frame["code.cyclomatic_sum"]).all()
    assert (frame["code.nloc"] <= frame["code.lines"]).all()
    assert frame.equals(code_metrics(scalabrino))  # deterministic


def test_hand_checked_values_of_a_small_method(scalabrino: Dataset) -> None:
    code = scalabrino.program("4-Antlr4Master").code
    assert code.startswith("public boolean removeFast(T obj) {")
    row = code_metrics(scalabrino).loc["4-Antlr4Master"]
    lines = code.split("\n")
    assert row["code.characters"] == len(code)
    assert row["code.lines"] == len(lines) == 30
    # NLOC: lines that are neither blank nor only a // comment (the method has no /* */).
    assert "/*" not in code
    assert row["code.nloc"] == sum(1 for line in lines if line.strip() and not line.strip().startswith("//")) == 23
    # removeFast: 1 + if (obj == null) + if (bucket == null) + for + if (e == null)
    # + if (comparator.equals(e, obj)); no && / || / ?: / case.
    assert row["code.functions"] == 1
    assert row["code.cyclomatic_sum"] == row["code.cyclomatic_max"] == 6
    # removeFast T obj getBucket b bucket buckets i length e comparator equals System
    # arraycopy n; keywords (public boolean if null return false int for true) left out.
    assert row["code.distinct_identifiers"] == 15
    assert row["code.tokens"] > 100


def test_anonymous_class_methods_add_to_the_sum(scalabrino: Dataset) -> None:
    row = code_metrics(scalabrino).loc["4-SpringBatch"]  # a test method with an inner class
    assert row["code.functions"] == 4
    assert row["code.cyclomatic_sum"] == 6  # 1 + (if) 2 + (?:) 2 + 1
    assert row["code.cyclomatic_max"] == 2


def test_scalabrino_dataset_metrics_are_its_program_columns(
    scalabrino: Dataset, scalabrino_rows: list[dict[str, str]], scalabrino_dir: Path
) -> None:
    frame = dataset_metrics(scalabrino)
    assert frame.index.tolist() == scalabrino.program_ids
    with (scalabrino_dir / "evaluations.csv").open(newline="", encoding="utf-8") as handle:
        header = next(csv.reader(handle))
    assert set(NOT_PROGRAM_METRICS) == NOT_METRICS
    names = [c.removeprefix("dataset.") for c in frame.columns]
    assert names == [c for c in header if c not in NOT_METRICS]  # the header's own spelling
    assert "dataset.Operators/literals (area).1" in frame.columns  # so named in the file
    assert len(frame.columns) == 117
    for column in ("Cyclomatic complexity", "Readability", "LOC"):
        assert f"dataset.{column}" in frame.columns
        assert not frame[f"dataset.{column}"].isna().any()
    # Every row of a program carries the value the frame gives it (constant per program).
    for row in scalabrino_rows:
        for column in ("Cyclomatic complexity", "Readability", "LOC", "#identifiers (max)"):
            assert frame.loc[row["file_name"], f"dataset.{column}"] == pytest.approx(float(row[column]))


def test_program_metrics_join_both(scalabrino: Dataset) -> None:
    frame = program_metrics(scalabrino)
    assert frame.shape == (50, len(CODE_COLUMNS) + 117)
    assert frame.columns.tolist()[: len(CODE_COLUMNS)] == list(CODE_COLUMNS)
    assert all(c.startswith("dataset.") for c in frame.columns[len(CODE_COLUMNS) :])
    assert frame.dtypes.eq("float64").all()
    # Raw orientation: the study's LOC grows with ours.
    assert frame["code.nloc"].corr(frame["dataset.LOC"], method="spearman") > 0.5


def test_metrics_follow_a_subset(scalabrino: Dataset) -> None:
    ids = scalabrino.program_ids[3:6]
    part = program_metrics(scalabrino.subset(ids))
    assert part.index.tolist() == ids
    pd.testing.assert_frame_equal(part, program_metrics(scalabrino).loc[ids])


def _small_scalabrino(scalabrino_dir: Path, root: Path, programs: int = 2) -> Path:
    """A copy of the first ``programs`` programs' rows and snippets."""
    (root / "snippets").mkdir(parents=True)
    with (scalabrino_dir / "evaluations.csv").open(newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    keep = list(dict.fromkeys(r[2] for r in rows[1:]))[:programs]
    with (root / "evaluations.csv").open("w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows([rows[0], *[r for r in rows[1:] if r[2] in keep]])
    for program in keep:
        number, system = program.split("-", 1)
        for snippet in (scalabrino_dir / "snippets").glob(f"ds_6_snip_{number}${system}_*.java"):
            shutil.copy(snippet, root / "snippets" / snippet.name)
    return root


def test_a_column_varying_within_a_program_is_left_out(scalabrino_dir: Path, tmp_path: Path) -> None:
    root = _small_scalabrino(scalabrino_dir, tmp_path / "s")
    path = root / "evaluations.csv"
    rows = list(csv.reader(path.open(newline="", encoding="utf-8")))
    readability = rows[0].index("Readability")
    first = rows[1][2]
    second_row = next(i for i in range(2, len(rows)) if rows[i][2] == first)
    rows[second_row][readability] = "0.123"
    with path.open("w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows(rows)

    with pytest.warns(DatasetWarning) as caught:
        dataset = read_scalabrino(root)
    messages = [str(w.message) for w in caught if "metric column" in str(w.message)]
    assert len(messages) == 1
    assert re.search(
        rf": 1 metric column.*'Readability' \(program '1-K9': 0\.058544081 on line 2, "
        rf"0\.123 on line {second_row + 1}\)",
        messages[0],
    )
    frame = dataset_metrics(dataset)
    assert "dataset.Readability" not in frame.columns
    assert "dataset.Cyclomatic complexity" in frame.columns
    assert len(frame) == 2 and len(frame.columns) == 116


def test_unchanged_copy_loads_without_warnings(scalabrino_dir: Path, tmp_path: Path) -> None:
    root = _small_scalabrino(scalabrino_dir, tmp_path / "s")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dataset = read_scalabrino(root)
    # The first program has one repeated (participant, program) pair: that warning only.
    assert [str(w.message) for w in caught if "repeated" not in str(w.message)] == []
    assert len(dataset_metrics(dataset).columns) == 117


def _programs(root: Path, header: list[str], rows: list[list[Any]]) -> None:
    with (root / "programs.csv").open("w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows([header, *rows])


def test_custom_numeric_columns_become_dataset_metrics(custom_dir: Path) -> None:
    _programs(
        custom_dir,
        ["program_id", "language", "code", "code_file", "origin", "difficulty", "halstead"],
        [
            ["add", "java", "int add(int a, int b) { return a + b; }", "", "handmade", "3", ""],
            ["double", "python", "", "src/double.py", "handmade", " 1.5 ", "2e3"],
        ],
    )
    dataset = load_custom(custom_dir)
    assert dataset.program("add").meta["difficulty"] == "3"  # the text stays in meta
    frame = dataset_metrics(dataset)
    assert frame.columns.tolist() == ["dataset.difficulty", "dataset.halstead"]
    assert frame.loc["add", "dataset.difficulty"] == 3.0
    assert frame.loc["double", "dataset.difficulty"] == 1.5
    assert math.isnan(frame.loc["add", "dataset.halstead"])
    assert frame.loc["double", "dataset.halstead"] == 2000.0
    full = program_metrics(dataset)
    assert full.columns.tolist() == [*CODE_COLUMNS, "dataset.difficulty", "dataset.halstead"]
    assert full.loc["double", "code.functions"] == 1  # python read as python


def test_custom_non_numeric_columns_are_ignored(custom_dir: Path) -> None:
    _programs(
        custom_dir,
        ["program_id", "language", "code", "code_file", "origin", "size", "blank"],
        [
            ["add", "java", "int f() { return 1; }", "", "handmade", "12", ""],
            ["double", "python", "", "src/double.py", "handmade", "big", ""],
        ],
    )
    dataset = load_custom(custom_dir)
    assert DATASET_METRICS_KEY not in dataset.program("add").meta
    assert dataset.program("double").meta == {"origin": "handmade", "size": "big", "blank": ""}
    frame = dataset_metrics(dataset)
    assert frame.columns.tolist() == [] and frame.index.tolist() == ["add", "double"]


def test_custom_reserved_column_is_refused(custom_dir: Path) -> None:
    _programs(
        custom_dir,
        ["program_id", "language", "code", DATASET_METRICS_KEY],
        [["add", "java", "int f() { return 1; }", "1"]],
    )
    with pytest.raises(DatasetError, match=rf"programs\.csv:1: column '{DATASET_METRICS_KEY}'"):
        load_custom(custom_dir)


def test_unknown_language_gives_nan_and_one_warning(custom_dir: Path) -> None:
    _programs(
        custom_dir,
        ["program_id", "language", "code"],
        [
            ["a", "pseudocode", "SET x TO 1\nPRINT x"],
            ["b", "Pseudocode", "PRINT 2"],
            ["c", "C++", "int f(int x) { return x > 0 ? x : -x; }"],
        ],
    )
    with (custom_dir / "evaluations.csv").open("w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows(
            [["program_id", "participant_id", "correct", "total"]] + [[p, "p1", 1, 1] for p in "abc"]
        )
    (custom_dir / "questions.jsonl").unlink()
    dataset = load_custom(custom_dir)
    with pytest.warns(DatasetWarning, match="lizard has no reader") as caught:
        frame = code_metrics(dataset)
    assert len([w for w in caught if "lizard" in str(w.message)]) == 1
    assert re.search(r"'pseudocode' \(1 program\), 'Pseudocode' \(1 program\)", str(caught[-1].message))
    assert frame.loc[["a", "b"], list(LIZARD_COLUMNS)].isna().all().all()
    assert frame.loc["a", "code.lines"] == 2 and frame.loc["a", "code.characters"] == 18
    assert frame.loc["c", "code.cyclomatic_sum"] == 2
    assert not frame.loc["c"].isna().any()


@pytest.mark.parametrize(
    ("language", "suffix"),
    [
        ("Java", "java"),
        ("python", "py"),
        ("C#", "cs"),
        ("c++", "c"),
        ("golang", "go"),
        ("JavaScript", "js"),
        ("ts", "ts"),
        ("rust", "rs"),
        ("cobol", None),
    ],
)
def test_language_names_reach_lizard_readers(language: str, suffix: str | None) -> None:
    name = lizard_file_name(language)
    assert (name.rsplit(".", 1)[1] if name else None) == suffix


def test_a_sweeps_later_jobs_analyse_no_program_again(scalabrino: Dataset) -> None:
    """Lizard reads each program once per process: the jobs of a sweep that ask for the same
    programs get the same rows with no analysis (the speed itself is scripts/ territory)."""
    from mcu_exp.data.code_metrics import _lizard_metrics

    first = code_metrics(scalabrino)
    misses = _lizard_metrics.cache_info().misses
    again = code_metrics(scalabrino)
    assert _lizard_metrics.cache_info().misses == misses
    pd.testing.assert_frame_equal(first, again)
