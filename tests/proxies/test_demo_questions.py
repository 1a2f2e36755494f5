"""The demo questions for the built-in data load through the real loader and fit P0's protocol."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from mcu_exp.data import load_dataset, read_questions
from support.proxies import compose_cfg

REPO = Path(__file__).resolve().parents[2]
FILE = REPO / "data" / "questions" / "scalabrino_demo.jsonl"


def test_demo_questions_load_with_the_dataset(data_root: Path) -> None:
    cfg = compose_cfg(f"dataset.questions={FILE}", f"dataset.root={data_root / 'scalabrino'}")
    dataset = load_dataset(cfg.dataset)
    per_program = Counter(q.program_id for q in dataset.questions)
    assert len(per_program) >= 10
    assert set(per_program.values()) == {3}
    assert all(len(q.options) == 4 and 0 <= q.correct < 4 for q in dataset.questions)
    assert set(per_program) <= set(dataset.program_ids)


def test_correct_positions_are_balanced_and_options_distinct() -> None:
    questions = read_questions(FILE)
    positions = Counter(q.correct for q in questions)
    assert set(positions) == {0, 1, 2, 3} and max(positions.values()) - min(positions.values()) <= 1
    for q in questions:
        assert len(set(q.options)) == len(q.options), q.question_id


def test_the_first_programs_in_natural_order_have_questions(data_root: Path) -> None:
    cfg = compose_cfg(f"dataset.questions={FILE}", f"dataset.root={data_root / 'scalabrino'}", "dataset.limit=3")
    dataset = load_dataset(cfg.dataset)
    assert {q.program_id for q in dataset.questions} == set(dataset.program_ids)


def test_provenance_note_sits_beside_the_file() -> None:
    note = (FILE.parent / "README.md").read_text(encoding="utf-8")
    assert "mcu_exp developers" in note and "2026" in note and "not" in note.lower()
