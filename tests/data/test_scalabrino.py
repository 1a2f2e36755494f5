"""The Scalabrino loader against the local copy of the data, read independently with csv."""

from __future__ import annotations

import csv
import re
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from mcu_exp.data import Dataset, DatasetError, load_dataset, resolve_root, strip_wrapper
from mcu_exp.data.download import SNIPPET_FILES

POSITIONS = {"1": "bachelor", "2": "master", "3": "phd", "4": "professional"}
JAVA_START = re.compile(r"(/\*\*|@\w+|(public|protected|private|static|final|synchronized)\b)")


def test_counts_match_the_published_study(
    scalabrino: Dataset,
    scalabrino_rows: list[dict[str, str]],
    scalabrino_pairs: list[dict[str, Any]],
) -> None:
    ev = scalabrino.evaluations
    assert len(scalabrino.programs) == 50
    assert len(scalabrino_rows) == 444
    assert Counter(POSITIONS[r["developer_position"]] for r in scalabrino_rows) == {
        "bachelor": 266,
        "master": 56,
        "phd": 24,
        "professional": 98,
    }
    assert len(ev) == len(scalabrino_pairs) == 437  # each participant once per program
    assert ev["participant_id"].nunique() == 63
    assert Counter(ev["group"]) == Counter(POSITIONS[p["developer_position"]] for p in scalabrino_pairs)


def test_evaluations_mirror_the_csv(
    scalabrino: Dataset,
    scalabrino_rows: list[dict[str, str]],
    scalabrino_pairs: list[dict[str, Any]],
) -> None:
    ev = scalabrino.evaluations
    assert ev["program_id"].tolist() == [p["file_name"] for p in scalabrino_pairs]
    assert ev["participant_id"].tolist() == [p["participant_id"] for p in scalabrino_pairs]
    assert ev["correct"].tolist() == [p["correct"] for p in scalabrino_pairs]
    assert ev["total"].tolist() == [p["total"] for p in scalabrino_pairs]
    perceived = {(r["file_name"], r["participant_id"]): r["PBU"] == "1" for r in scalabrino_rows}
    single = [p["rows"] == 1 or p["identical"] for p in scalabrino_pairs]
    assert [v for v, one in zip(ev["perceived"], single, strict=True) if one] == [
        perceived[(p["file_name"], p["participant_id"])] for p, one in zip(scalabrino_pairs, single, strict=True) if one
    ]
    assert set(scalabrino.program_ids) == {r["file_name"] for r in scalabrino_rows}


def test_readers_without_an_answer_time_were_asked_no_questions(
    scalabrino: Dataset, scalabrino_rows: list[dict[str, str]]
) -> None:
    untested = [r for r in scalabrino_rows if not r["TNPU"].strip()]
    assert len(untested) == 135
    assert all(r["PBU"] == "0" and r["AU"] == "0" and r["ABU50"] == "0" for r in untested)
    ev = scalabrino.evaluations
    assert int((ev["total"] == 0).sum()) == 134  # the 135th repeats a tested row (pooled)
    assert set(ev["total"]) == {0, 1.5, 3}  # 1.5: a tested and an untested row averaged
    assert (ev.loc[ev["total"] == 0, "correct"] == 0).all()


def test_wrapper_is_stripped_and_method_kept(scalabrino: Dataset, scalabrino_dir: Path) -> None:
    for program in scalabrino.programs:
        assert "package snippet_splitter_out" not in program.code
        assert "package manually_created_snippets" not in program.code
        assert "class ds_6_snip" not in program.code
        first = program.code.lstrip().splitlines()[0]
        assert JAVA_START.match(first), (program.id, first)
        raw = (scalabrino_dir / "snippets" / program.meta["snippet_file"]).read_text()
        assert raw.count("{") - program.code.count("{") == 1  # only the class brace is gone
        assert raw.count("}") - program.code.count("}") == 1
        assert program.language == "java"


def test_program_meta_matches_the_csv(scalabrino: Dataset, scalabrino_rows: list[dict[str, str]]) -> None:
    for row in scalabrino_rows:
        meta = scalabrino.program(row["file_name"]).meta
        assert meta["system_name"] == row["system_name"]
        assert meta["snippet_signature"] == row["snippet_signature"]
        number, system = row["file_name"].split("-", 1)
        assert meta["snippet_file"].startswith(f"ds_6_snip_{number}${system}_")


def test_dedent_expands_tabs_to_the_width_the_file_was_written_with() -> None:
    text = "package a.b;\npublic class ds_6_snip_1$X_f {\n    @Override\n\tvoid f() {\n\t\tg();\n\t}\n}\n"
    assert strip_wrapper(text) == "@Override\nvoid f() {\n    g();\n}"


@pytest.mark.parametrize(
    "text",
    [
        "void f() {}\n",
        "package a;\nclass Other {\nvoid f() {}\n}\n",
        "package a;\npublic class ds_6_snip_1$X_f {\nint x;\n",
    ],
)
def test_unexpected_wrapper_is_an_error(text: str) -> None:
    with pytest.raises(DatasetError, match=r"x\.java"):
        strip_wrapper(text, "x.java")


def _read(path: Path) -> list[list[str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


def _write(path: Path, rows: list[list[str]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows(rows)


def _small_copy(scalabrino_dir: Path, dest: Path, program_ids: set[str]) -> Path:
    """A root holding only some programs' rows and snippets (custom roots need not hold 50)."""
    (dest / "snippets").mkdir(parents=True)
    header, *rows = _read(scalabrino_dir / "evaluations.csv")
    col = header.index("file_name")
    _write(dest / "evaluations.csv", [header] + [r for r in rows if r[col] in program_ids])
    for name in SNIPPET_FILES:
        number, system = name[len("ds_6_snip_") :].split("_", 1)[0].split("$")
        if f"{number}-{system}" in program_ids:
            shutil.copy(scalabrino_dir / "snippets" / name, dest / "snippets" / name)
    return dest


def test_smaller_root_loads_what_it_holds(scalabrino_dir: Path, tmp_path: Path, dataset_cfg: Any) -> None:
    ids = {"1-K9", "2-Pom", "3-Phoenix"}
    root = _small_copy(scalabrino_dir, tmp_path / "small", ids)
    dataset = load_dataset(dataset_cfg(format="scalabrino", root=str(root)))
    assert set(dataset.program_ids) == ids
    assert set(dataset.evaluations["program_id"]) == ids


def test_file_name_without_snippet_is_an_error(scalabrino_dir: Path, tmp_path: Path, dataset_cfg: Any) -> None:
    root = _small_copy(scalabrino_dir, tmp_path / "small", {"1-K9", "2-Pom"})
    (root / "snippets" / "ds_6_snip_2$Pom__getRuns.java").unlink()
    with pytest.raises(
        DatasetError,
        match=r"evaluations\.csv:\d+: file_name '2-Pom' should match exactly one snippet "
        r".* found 0",
    ):
        load_dataset(dataset_cfg(format="scalabrino", root=str(root)))


def test_ambiguous_snippet_is_an_error(scalabrino_dir: Path, tmp_path: Path, dataset_cfg: Any) -> None:
    root = _small_copy(scalabrino_dir, tmp_path / "small", {"1-K9"})
    shutil.copy(
        root / "snippets" / "ds_6_snip_1$K9_testFetchResponse.java",
        root / "snippets" / "ds_6_snip_1$K9_other.java",
    )
    with pytest.raises(DatasetError, match=r"file_name '1-K9' should match exactly one snippet .* found 2"):
        load_dataset(dataset_cfg(format="scalabrino", root=str(root)))


def test_bad_count_in_csv_names_the_line(scalabrino_dir: Path, tmp_path: Path, dataset_cfg: Any) -> None:
    root = _small_copy(scalabrino_dir, tmp_path / "small", {"1-K9"})
    rows = _read(root / "evaluations.csv")
    rows[2][rows[0].index("AU")] = "7"
    _write(root / "evaluations.csv", rows)
    with pytest.raises(DatasetError, match=r"evaluations\.csv:3: column AU is '7', expected one of \[0, 1, 2, 3\]"):
        load_dataset(dataset_cfg(format="scalabrino", root=str(root)))


def test_root_resolution_order(
    scalabrino_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dataset_cfg: Any
) -> None:
    monkeypatch.setenv("MCU_EXP_DATA", str(scalabrino_dir.parent))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert resolve_root(dataset_cfg(format="scalabrino", root=str(tmp_path / "explicit"))) == tmp_path / "explicit"
    assert resolve_root(dataset_cfg(format="scalabrino")) == scalabrino_dir.parent / "scalabrino"
    monkeypatch.delenv("MCU_EXP_DATA")
    cache = tmp_path / "cache" / "mcu_exp" / "data" / "scalabrino"  # kept by the $MCU_EXP_DATA run
    assert resolve_root(dataset_cfg(format="scalabrino", download=False)) == cache
    shutil.rmtree(cache)
    with pytest.raises(
        DatasetError,
        match=r"cache .*cache/mcu_exp/data/scalabrino is empty.*dataset\.download=true",
    ):
        resolve_root(dataset_cfg(format="scalabrino", download=False))
    assert not cache.exists()


def test_answers_without_an_answer_time_are_an_error(scalabrino_dir: Path, tmp_path: Path, dataset_cfg: Any) -> None:
    root = _small_copy(scalabrino_dir, tmp_path / "small", {"1-K9"})
    rows = _read(root / "evaluations.csv")
    rows[1][rows[0].index("TNPU")] = ""
    rows[1][rows[0].index("AU")] = "2"
    _write(root / "evaluations.csv", rows)
    with pytest.raises(DatasetError, match=r"evaluations\.csv:2: AU is 2 but TNPU is empty"):
        load_dataset(dataset_cfg(format="scalabrino", root=str(root)))


def test_an_unchanged_folder_is_parsed_once_a_changed_one_again(
    scalabrino_dir: Path, tmp_path: Path, dataset_cfg: Any
) -> None:
    """A sweep's in-process jobs share one parse of the folder; editing a file (or adding a
    snippet) makes the next load read the files again, and a parse's warnings reach every load."""
    from mcu_exp.data.scalabrino import read_scalabrino

    root = _small_copy(scalabrino_dir, tmp_path / "small", {"1-K9", "2-Pom"})
    first = read_scalabrino(root)
    assert read_scalabrino(root) is first
    assert read_scalabrino(root, name="other") is not first  # the name is part of the result

    rows = _read(root / "evaluations.csv")
    column = rows[0].index("LOC")
    rows[1][column] = str(float(rows[1][column]) + 1)  # the metric now differs within program 1-K9
    _write(root / "evaluations.csv", rows)
    for _ in range(2):
        with pytest.warns(UserWarning, match="differ between rows of one program"):
            changed = read_scalabrino(root)
        assert changed is not first
        assert "LOC" not in changed.programs[0].meta["dataset_metrics"]
    assert "LOC" in first.programs[0].meta["dataset_metrics"]


def test_a_sweeps_jobs_share_one_dataset_and_its_label_sets(
    scalabrino_dir: Path, tmp_path: Path, dataset_cfg: Any
) -> None:
    """Loading an unchanged folder again gives the same dataset, hence the same label sets
    (made once); another limit or an edited file gives new ones, with their own labels."""
    from mcu_exp.config import LabelsConfig
    from mcu_exp.data import human_labels, subgroup_labels

    root = _small_copy(scalabrino_dir, tmp_path / "small", {"1-K9", "2-Pom", "3-Phoenix"})
    cfg = dataset_cfg(format="scalabrino", root=str(root))
    first = load_dataset(cfg)
    assert load_dataset(cfg) is first
    labels = human_labels(first, LabelsConfig())
    assert human_labels(load_dataset(cfg), LabelsConfig()) is labels
    assert human_labels(first, LabelsConfig(min_fraction=0.9)) is not labels
    groups = subgroup_labels(first, LabelsConfig(), ["bachelor"])
    assert subgroup_labels(first, LabelsConfig(), ["bachelor"])["bachelor"] is groups["bachelor"]

    assert load_dataset(dataset_cfg(format="scalabrino", root=str(root), limit=2)).program_ids == ["1-K9", "2-Pom"]
    rows = _read(root / "evaluations.csv")
    au = rows[0].index("AU")
    for row in rows[1:]:
        row[au] = "0"  # nobody answered a question correctly any more
    _write(root / "evaluations.csv", rows)
    changed = load_dataset(cfg)
    assert changed is not first
    assert human_labels(changed, LabelsConfig()).labels.sum() == 0 < labels.labels.sum()
