"""Faults in the files themselves: paths leaving the dataset folder, bytes that are not UTF-8,
an evaluations file without rows, and questions without their correct option."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from mcu_exp.data import DatasetError, load_custom, load_dataset, read_questions

# In conftest's valid folder, programs.csv line 6 is the "double" row (code_file src/double.py).
DOUBLE_ROW = "double,python,,{},handmade\n"


def _set_code_file(root: Path, code_file: str) -> None:
    path = root / "programs.csv"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace(DOUBLE_ROW.format("src/double.py"), DOUBLE_ROW.format(code_file)))


def _one_line_error(root: Path, pattern: str) -> str:
    with pytest.raises(DatasetError, match=pattern) as info:
        load_custom(root)
    assert "\n" not in str(info.value)
    return str(info.value)


@pytest.mark.parametrize("code_file", ["../secret.txt", "src/../../secret.txt", "../../../../../../../../etc/passwd"])
def test_code_file_outside_the_folder_is_refused(custom_dir: Path, code_file: str) -> None:
    (custom_dir.parent / "secret.txt").write_text("the password\n", encoding="utf-8")
    _set_code_file(custom_dir, code_file)
    message = _one_line_error(custom_dir, r"programs\.csv:6: code_file '.*' resolves to .* outside the dataset folder")
    assert "the password" not in message


def test_symlink_leaving_the_folder_is_refused(custom_dir: Path) -> None:
    secret = custom_dir.parent / "secret.txt"
    secret.write_text("the password\n", encoding="utf-8")
    (custom_dir / "src" / "double.py").unlink()
    (custom_dir / "src" / "double.py").symlink_to(secret)
    _one_line_error(
        custom_dir,
        r"programs\.csv:6: code_file 'src/double\.py' resolves to "
        r".*secret\.txt, outside the dataset folder",
    )
    (custom_dir / "src" / "double.py").unlink()
    outside = custom_dir.parent / "elsewhere"
    outside.mkdir()
    shutil.move(str(custom_dir / "src"), outside / "src")
    (outside / "src" / "double.py").write_text("x = 1\n", encoding="utf-8")
    (custom_dir / "src").symlink_to(outside / "src")  # a linked folder leaves it too
    _one_line_error(custom_dir, r"programs\.csv:6: code_file 'src/double\.py' .*outside")


def test_symlinks_that_stay_inside_the_folder_are_fine(custom_dir: Path, tmp_path: Path) -> None:
    real = custom_dir / "src" / "real.py"
    (custom_dir / "src" / "double.py").rename(real)
    (custom_dir / "src" / "double.py").symlink_to(real)
    linked_root = tmp_path / "linked"
    linked_root.symlink_to(custom_dir)  # the folder itself may be reached through a link
    for root in (custom_dir, linked_root):
        assert load_custom(root).program("double").code == real.read_text().rstrip("\n")


def _corrupt_line(path: Path, line: int) -> int:
    """Put a byte that is never UTF-8 at the start of ``line`` (1-based); its byte offset."""
    lines = path.read_bytes().splitlines(keepends=True)
    offset = sum(len(x) for x in lines[: line - 1])
    lines[line - 1] = b"\xff" + lines[line - 1]
    path.write_bytes(b"".join(lines))
    return offset


@pytest.mark.parametrize(
    ("name", "line"), [("programs.csv", 3), ("programs.csv", 1), ("evaluations.csv", 4), ("questions.jsonl", 1)]
)
def test_bytes_that_are_not_utf8_are_named_by_file_and_line(custom_dir: Path, name: str, line: int) -> None:
    offset = _corrupt_line(custom_dir / name, line)
    _one_line_error(
        custom_dir,
        rf"{name.replace('.', '[.]')}:{line}: not UTF-8 text "
        rf"\(byte 0xff at byte offset {offset}\)",
    )


def test_a_byte_order_mark_still_counts_in_the_offset(custom_dir: Path) -> None:
    path = custom_dir / "evaluations.csv"
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert len(load_custom(custom_dir).evaluations) == 4  # tolerated
    offset = _corrupt_line(path, 2)
    _one_line_error(
        custom_dir,
        rf"evaluations[.]csv:2: not UTF-8 text \(byte 0xff at byte offset "
        rf"{offset}\)",
    )


def test_code_file_that_is_not_utf8_names_both_files(custom_dir: Path) -> None:
    _corrupt_line(custom_dir / "src" / "double.py", 2)
    _one_line_error(custom_dir, r"programs\.csv:6: code_file .*double\.py:2: not UTF-8 text")


def test_header_only_evaluations_are_refused_at_load(custom_dir: Path) -> None:
    path = custom_dir / "evaluations.csv"
    path.write_text(path.read_text().splitlines()[0] + "\n", encoding="utf-8")
    _one_line_error(
        custom_dir,
        r"evaluations\.csv: no evaluations after the header, expected "
        r"at least one row",
    )


def test_scalabrino_bytes_that_are_not_utf8_are_named(scalabrino_dir: Path, tmp_path: Path, dataset_cfg: Any) -> None:
    root = tmp_path / "scalabrino"
    shutil.copytree(scalabrino_dir, root)
    cfg = dataset_cfg(format="scalabrino", root=str(root))
    snippet = sorted((root / "snippets").glob("*.java"))[0]
    _corrupt_line(snippet, 3)
    with pytest.raises(DatasetError, match=rf"{snippet.name.replace('$', '[$]')}:3: not UTF-8"):
        load_dataset(cfg)
    shutil.copy(scalabrino_dir / "snippets" / snippet.name, snippet)
    offset = _corrupt_line(root / "evaluations.csv", 5)
    with pytest.raises(
        DatasetError,
        match=rf"evaluations\.csv:5: not UTF-8 text \(byte 0xff at "
        rf"byte offset {offset}\)",
    ):
        load_dataset(cfg)


def test_header_only_scalabrino_evaluations_are_refused(scalabrino_dir: Path, tmp_path: Path, dataset_cfg: Any) -> None:
    root = tmp_path / "scalabrino"
    shutil.copytree(scalabrino_dir, root)
    path = root / "evaluations.csv"
    path.write_text(path.read_text(encoding="utf-8").splitlines()[0] + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"evaluations\.csv: no evaluations after the header"):
        load_dataset(dataset_cfg(format="scalabrino", root=str(root)))


def test_questions_without_correct_options_load_without_a_key(custom_dir: Path) -> None:
    path = custom_dir / "questions.jsonl"
    keyed = json.loads(path.read_text().splitlines()[0])
    keyless = {k: v for k, v in keyed.items() if k != "correct"}
    path.write_text(
        "\n".join(
            json.dumps(o)
            for o in (
                keyless,
                {**keyed, "question_id": "q2"},
                {**keyless, "question_id": "q3", "correct": None},
            )
        )
        + "\n"
    )
    questions = load_custom(custom_dir).questions
    assert [q.correct for q in questions] == [None, 0, None]
    assert [q.source for q in questions] == [f"{path}:1", f"{path}:2", f"{path}:3"]
    assert read_questions(path)[1] == questions[1]


def test_a_hard_link_to_a_file_outside_the_folder_is_refused(custom_dir: Path) -> None:
    secret = custom_dir.parent / "secret.txt"
    secret.write_text("the password\n", encoding="utf-8")
    (custom_dir / "src" / "double.py").unlink()
    os.link(secret, custom_dir / "src" / "double.py")  # ln ../secret.txt src/double.py
    message = _one_line_error(custom_dir, r"programs\.csv:6: code_file 'src/double\.py' has 2 hard links")
    assert "the password" not in message and "cp --remove-destination" in message
    (custom_dir / "src" / "double.py").unlink()  # a copy of its own is fine
    shutil.copyfile(secret, custom_dir / "src" / "double.py")
    assert any(p.code == "the password" for p in load_custom(custom_dir).programs)


def test_inline_code_over_the_csv_cell_limit_says_to_use_code_file(custom_dir: Path) -> None:
    path = custom_dir / "programs.csv"
    long_code = "int x = 0;\n" * 13_000  # 143 KB in one quoted cell: over the reader's 131072
    with path.open("a", encoding="utf-8", newline="") as handle:
        handle.write(f'huge,java,"{long_code}",,handmade\n')
    lines = path.read_text(encoding="utf-8").count("\n") - long_code.count("\n")
    message = _one_line_error(custom_dir, rf"programs\.csv:{lines}: a cell is longer than 131,072 characters")
    assert "code_file" in message and "field larger than field limit" not in message
