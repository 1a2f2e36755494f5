"""P0 without a model: rotations, mapping answers back, majorities, program labels, position bias."""

from __future__ import annotations

import dataclasses
import json
import logging
import math
from pathlib import Path

import pandas as pd
import pytest

from mcu_exp.data import Dataset, Question, read_questions
from mcu_exp.llm import GenerationRequest
from mcu_exp.pipeline import build_proxies, typed_config
from mcu_exp.proxies.p0_subject import (
    AnswerJob,
    position_metrics,
    program_table,
    question_results,
    read_answers,
    rotation_orders,
)
from mcu_exp.proxies.preview import preview
from support.proxies import compose_cfg, context, make_proxy, synthetic_dataset


@pytest.mark.parametrize("n_options", [2, 3, 4, 5])
def test_rotation_puts_the_correct_option_in_every_position_once(n_options: int) -> None:
    for correct in range(n_options):
        orders = rotation_orders(n_options, correct)
        assert len(orders) == n_options
        positions = [order.index(correct) for order in orders]
        assert sorted(positions) == list(range(n_options))
        assert positions == list(range(n_options))  # run j shows it at position j
        for order in orders:
            assert sorted(order) == list(range(n_options))  # a permutation of the options
            shift = order[0]
            assert list(order) == [(shift + i) % n_options for i in range(n_options)]  # cyclic


def test_rotation_is_deterministic_and_can_be_switched_off() -> None:
    assert rotation_orders(4, 2) == rotation_orders(4, 2)
    assert rotation_orders(4, 2, rotate=False) == [(0, 1, 2, 3)]
    with pytest.raises(ValueError):
        rotation_orders(4, 4)


QUESTION = Question("p1", "q1", "What does it return?", ("zero", "one", "two", "three"), correct=2)


def job(run: int) -> AnswerJob:
    order = rotation_orders(4, QUESTION.correct)[run]
    return AnswerJob(QUESTION, run, order, GenerationRequest(messages=()))


def test_answers_map_back_to_the_original_option() -> None:
    j = job(0)  # correct option "two" shown at position A: order (2, 3, 0, 1)
    rows = read_answers(j, ["A", "(B)", "The answer is C.", "E", "two", "no idea"])
    assert [r["letter"] for r in rows] == ["A", "B", "C", None, "A", None]
    assert [r["option"] for r in rows] == [2, 3, 0, None, 2, None]
    assert [r["is_correct"] for r in rows] == [True, False, False, None, True, None]
    assert {r["correct_position"] for r in rows} == {"A"}


def answers_for(texts_per_run: list[list[str]]) -> pd.DataFrame:
    return pd.DataFrame([row for run, texts in enumerate(texts_per_run) for row in read_answers(job(run), texts)])


def test_majority_over_all_runs_in_original_indices() -> None:
    # The model always picks letter A: in each run A is a different original option.
    always_a = answers_for([["A", "A"], ["A", "A"], ["A", "A"], ["A", "A"]])
    result = question_results(always_a, [QUESTION]).iloc[0]
    assert pd.isna(result["answer"]) and bool(result["tied"])  # 2 votes for every option
    assert not result["answered_correctly"]
    assert result["sample_accuracy"] == pytest.approx(0.25)
    # A model that finds the right option wherever it is shown.
    letters = "ABCD"
    right = answers_for([[letters[run]] * 3 for run in range(4)])
    result = question_results(right, [QUESTION]).iloc[0]
    assert result["answer"] == 2 and result["answered_correctly"] and result["n_samples"] == 12


def test_samples_without_an_answer_count_against_every_option() -> None:
    # run 0 shows (2, 3, 0, 1): A = option 2 (correct); run 2 shows (0, 1, 2, 3): D = option 3
    outvoted = answers_for([["A", "garbage", "???"], ["nothing"], ["D", "D"], []])
    result = question_results(outvoted, [QUESTION]).iloc[0]
    assert result["n_parseable"] == 3 and result["n_samples"] == 6
    assert pd.isna(result["answer"]) and not result["tied"]  # 3 without an answer beat 2 votes for option 3
    assert result["sample_accuracy"] == pytest.approx(1 / 6) and not result["answered_correctly"]
    assert result["answer_share"] == 0.5 and not result["too_few_answers"]  # the minimum itself is enough
    tied = question_results(answers_for([["A", "garbage"], ["nothing"], ["D", "D"]]), [QUESTION]).iloc[0]
    assert pd.isna(tied["answer"]) and tied["tied"]
    won = question_results(answers_for([["A", "garbage"], [], ["D", "D", "D"]]), [QUESTION]).iloc[0]
    assert won["answer"] == 3 and not won["answered_correctly"]


def test_a_question_with_too_few_answers_is_flagged() -> None:
    answers = answers_for([["x", "y", "z"], ["A"]])  # run 1 shows (1, 2, 3, 0): A = option 1
    assert question_results(answers, [QUESTION]).iloc[0]["too_few_answers"]  # 1 of 4 < 0.5
    assert not question_results(answers, [QUESTION], min_answer_share=0.25).iloc[0]["too_few_answers"]


def test_program_high_iff_at_least_half_the_questions_right() -> None:
    per_question = pd.DataFrame(
        {
            "program_id": ["a", "a", "a", "b", "b", "c", "c", "c"],
            "answered_correctly": [True, False, False, True, False, True, True, False],
            "n_samples": [4] * 8,
            "n_parseable": [4, 4, 4, 1, 2, 4, 0, 0],
        }
    )
    table = program_table(per_question, ["a", "b", "c"])
    assert table.loc["a", "label"] == 0 and table.loc["a", "score"] == pytest.approx(1 / 3)
    assert table.loc["b", "label"] == 1 and table.loc["b", "score"] == 0.5  # half is enough (ABU50)
    assert table.loc["c", "label"] == 1
    assert list(table.index) == ["a", "b", "c"]
    assert table["answer_share"].tolist() == [1.0, 3 / 8, 4 / 12]  # over all of a program's samples
    assert table["too_few_answers"].tolist() == [False, True, True]
    assert program_table(per_question, ["a", "b", "c"], min_answer_share=0.3)["too_few_answers"].tolist() == [
        False,
        False,
        False,
    ]


def test_position_bias_shares() -> None:
    answers = answers_for([["A", "A", "B"], ["A"], ["A", "C"], ["x"]])
    metrics = position_metrics(answers, 4)
    assert metrics["p0.letter_share.A"] == pytest.approx(4 / 6)
    assert metrics["p0.letter_share.B"] == pytest.approx(1 / 6)
    assert metrics["p0.letter_share.D"] == 0.0
    assert sum(metrics[f"p0.letter_share.{x}"] for x in "ABCD") == pytest.approx(1.0)
    assert metrics["p0.accuracy_when_correct_at.A"] == pytest.approx(2 / 3)  # run 0: correct at A
    assert math.isnan(metrics["p0.accuracy_when_correct_at.D"])  # run 3: nothing parseable


def _keyless_dataset(tmp_path: Path) -> Dataset:
    """Three programs with one question each; the questions of p1 and p2 have no correct option."""
    path = tmp_path / "questions.jsonl"
    path.write_text(
        "".join(
            json.dumps(
                {
                    "program_id": f"p{i}",
                    "question_id": "q",
                    "text": "Which?",
                    "options": ["a", "b"],
                    **({"correct": 1} if i == 0 else {}),
                }
            )
            + "\n"
            for i in range(3)
        ),
        encoding="utf-8",
    )
    base = synthetic_dataset(n_programs=3, n_questions=0)
    return dataclasses.replace(base, questions=read_questions(path, set(base.program_ids)))


def test_p0_refuses_questions_without_a_correct_option_at_start(tmp_path: Path) -> None:
    dataset = _keyless_dataset(tmp_path)
    proxy = make_proxy(compose_cfg("proxy=p0"), dataset, tmp_path / "cache")
    assert not proxy.applies()
    with pytest.raises(
        ValueError,
        match=r"P0 needs the correct option of every question: 2 of 3 questions "
        r"have no 'correct' key \(first: .*questions\.jsonl:2\)",
    ) as info:
        preview(proxy, cache_dir=proxy.ctx.cache_dir)  # what a job does before anything else
    assert "\n" not in str(info.value)
    keyed = make_proxy(compose_cfg("proxy=p0"), dataset, tmp_path / "cache", program_ids=["p0"])
    assert keyed.applies()  # only the questions of the programs it labels matter
    (stage,) = preview(keyed, cache_dir=keyed.ctx.cache_dir)
    assert stage.requests == 2


def test_keyless_questions_leave_p1_running_without_its_p0_reference(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    dataset = _keyless_dataset(tmp_path)
    cfg = compose_cfg("proxy.k=4", "proxy.k_cal=2")
    proxy, reference = build_proxies(typed_config(cfg), context(cfg, dataset, tmp_path / "cache"))
    assert proxy.name == "p1" and reference is not None and reference.name == "p0"
    with caplog.at_level(logging.INFO, logger="mcu_exp.proxies.p0_subject"):
        assert [s.stage for s in preview(proxy, reference)] == ["target summaries"]
        assert not reference.applies()
    notes = [r for r in caplog.records if r.name == "mcu_exp.proxies.p0_subject"]
    assert len(notes) == 1 and notes[0].levelno == logging.INFO
    assert "2 of 3 questions have no 'correct' key" in notes[0].getMessage()
    assert "\n" not in notes[0].getMessage()
