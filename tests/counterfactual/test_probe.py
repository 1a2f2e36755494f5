"""A probe edits every program of a dataset, keeps ids and evaluations, and lists each program it
leaves out with the reason (a failed check, an unknown language, nothing to edit)."""

from __future__ import annotations

import pytest

from mcu_exp.counterfactual import apply_edit
from mcu_exp.counterfactual.probe import EDITED, EXCLUDED, UNCHANGED, apply_probe, probe_problems
from mcu_exp.data import Dataset, Program
from mcu_exp.data.types import evaluations_frame

CONSTRUCTOR = "/** Makes one. */\npublic Counter(int start) {\n    int first = start;\n    this.n = first;\n}"
C_PROGRAM = 'int main() {\n  int count = 3; // three\n  printf("%d\\n", count);\n}'
NO_COMMENT = "int twice(int x) {\n    return 2 * x;\n}"


def dataset() -> Dataset:
    programs = [
        Program("ctor", "java", CONSTRUCTOR),
        Program("c", "C", C_PROGRAM),
        Program("py", "python", "def f(x):\n    return x  # same\n"),
        Program("plain", "java", NO_COMMENT),
        Program("broken", "java", "int f( { return"),
    ]
    ids = [p.id for p in programs]
    return Dataset("tiny", programs, evaluations_frame(ids, ["r1"] * 5, [1] * 5, [1] * 5), [], "test")


def test_strip_comments_edits_checks_and_lists_every_program() -> None:
    probed = apply_probe(dataset(), "strip_comments")
    rows = probed.pairing.set_index("program_id")
    assert list(rows.index) == ["ctor", "c", "py", "plain", "broken"]
    assert list(rows["status"]) == [EDITED, EDITED, EXCLUDED, EXCLUDED, EXCLUDED]
    assert "unknown language 'python'" in rows.loc["py", "problem"]
    assert rows.loc["plain", "problem"] == UNCHANGED
    assert rows.loc["broken", "problem"].startswith("the original does not parse")
    assert (rows["probe"] == "strip_comments").all()
    # a bare constructor is edited inside a class and unwrapped: ids and evaluations follow
    assert probed.dataset.program_ids == ["ctor", "c"]
    assert (
        probed.dataset.program("ctor").code
        == "public Counter(int start) {\n    int first = start;\n    this.n = first;\n}"
    )
    assert probed.dataset.program("c").code == apply_edit("strip_comments", C_PROGRAM, "c").code
    assert rows.loc["ctor", "original_code"] == CONSTRUCTOR
    assert rows.loc["ctor", "edited_code"] == probed.dataset.program("ctor").code
    assert set(probed.dataset.evaluations["program_id"]) == {"ctor", "c"}
    assert probed.dataset.program("c").meta["probe"] == "strip_comments"
    line = probed.describe()
    assert line.startswith("probe strip_comments: 2 of 5 programs edited and checked, 1 left out unchanged")
    assert "2 excluded" in line and "\n" not in line


def test_rename_identifiers_renames_the_constructor_locals() -> None:
    probed = apply_probe(dataset(), "rename_identifiers")
    code = probed.dataset.program("ctor").code
    assert "first" not in code and "start" not in code and "this.n" in code


def test_an_unknown_edit_is_one_line_with_a_suggestion() -> None:
    with pytest.raises(
        ValueError,
        match=r"^unknown counterfactual edit 'strip_coments' \(probe.edit\): did you mean 'strip_comments'\?",
    ):
        apply_probe(dataset(), "strip_coments")
    (problem,) = probe_problems("rename_identifers")
    assert "did you mean 'rename_identifiers'?" in problem and "(known: none, rename_identifiers" in problem
    assert list(probe_problems("none")) == []
