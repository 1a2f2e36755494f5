"""P0 and P3 run whole from a generation cache filled beforehand: no model loads, so the
aggregation, records and metrics are checked against answers chosen by hand."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from proxy_support import compose_cfg, prefill, synthetic_dataset

from mcu_exp.llm.generator import CACHE_FILE
from mcu_exp.proxies.base import JobContext
from mcu_exp.proxies.experts import expert_model_config
from mcu_exp.proxies.p0_subject import answer_jobs, p0_reference_labels, run_p0
from mcu_exp.proxies.p3_judge import assign_judges, judge_request
from mcu_exp.proxies.p3_judge import run as run_p3
from mcu_exp.proxies.preview import preview, summary_requests


def context(cfg, dataset, tmp_path: Path) -> JobContext:
    return JobContext(cfg=cfg, dataset=dataset, program_ids=dataset.program_ids, run_dir=tmp_path,
                      cache_dir=tmp_path / "cache", progress=False)


@pytest.fixture
def p0_setup(tmp_path: Path):
    full = synthetic_dataset(n_programs=4, n_questions=2)
    dataset = dataclasses.replace(full, questions=[q for q in full.questions if q.program_id != "p3"])
    cfg = compose_cfg("proxy=p0", "proxy.samples=3")
    ctx = context(cfg, dataset, tmp_path)
    jobs = answer_jobs(cfg.model, dataset, ["p0", "p1", "p2"], cfg.proxy)

    def answer(pos: int, _: int) -> str:
        job = jobs[pos]
        right = "ABCD"[job.order.index(job.question.correct)]
        if job.question.program_id == "p0":
            return f"The answer is {right}."
        if job.question.program_id == "p1":
            return "A"  # always the first letter: every option gets the same votes
        return f"({right})" if job.question.question_id == "q0" else "I do not know"

    prefill(ctx.cache_dir, cfg.model, [j.request for j in jobs], answer)
    return ctx


def test_p0_from_cache(p0_setup: JobContext) -> None:
    outcome = run_p0(p0_setup)
    table = outcome.table
    assert list(table.index) == ["p0", "p1", "p2"]  # p3 has no questions: left out
    assert table["label"].tolist() == [1, 0, 1]  # p2: one of two right is enough
    assert table["score"].tolist() == [1.0, 0.0, 0.5]
    m = outcome.metrics
    assert m["model_loaded"] == 0.0 and m["generation_cache_misses"] == 0
    assert m["p0.programs_without_questions"] == 1
    assert m["p0.tied_questions"] == 2  # p1's two questions
    assert m["p0.unparseable"] == 4 * 3  # p2/q1: 4 runs x 3 samples
    assert m["p0.letter_share.A"] > m["p0.letter_share.B"]  # p1's position bias shows
    assert sum(m[f"p0.letter_share.{x}"] for x in "ABCD") == pytest.approx(1.0)
    assert m["p0.accuracy_when_correct_at.A"] > m["p0.accuracy_when_correct_at.B"]
    questions = outcome.records["p0_questions"]
    assert len(questions) == 6 and questions["answered_correctly"].sum() == 3
    assert outcome.records["p0_labels"]["label"].tolist() == [1, 0, 1]


def test_p0_reference_labels_are_remembered(p0_setup: JobContext) -> None:
    labels = p0_reference_labels(p0_setup)
    assert labels is not None and labels.to_dict() == {"p0": 1, "p1": 0, "p2": 1}
    (p0_setup.cache_dir / CACHE_FILE).unlink()  # a second call needs neither cache nor model
    assert p0_reference_labels(p0_setup).equals(labels)


def test_without_questions_p0_says_how_to_give_them(tmp_path: Path) -> None:
    dataset = synthetic_dataset(n_programs=2, n_questions=0)
    ctx = context(compose_cfg("proxy=p0"), dataset, tmp_path)
    assert p0_reference_labels(ctx) is None
    with pytest.raises(ValueError, match="dataset.questions=FILE"):
        run_p0(ctx)


def test_p3_from_cache(tmp_path: Path) -> None:
    cfg = compose_cfg("proxy=p3", "proxy.k=4", "proxy.k_cal=2", "proxy.r=3", "experts=local")
    dataset = synthetic_dataset(n_programs=3, n_questions=0)
    ctx = context(cfg, dataset, tmp_path)
    ids = dataset.program_ids
    targets = summary_requests(cfg.model, dataset, ids, str(cfg.proxy.prompt), 4, int(cfg.proxy.sample_seed))
    prefill(ctx.cache_dir, cfg.model, targets, lambda pos, i: f"Summary {i} of program {pos}.")

    members = {str(m.label): m for m in cfg.experts.members}
    judges = assign_judges(ids, list(members), int(cfg.proxy.judge_seed))
    plan = {  # program -> per summary, the r = 3 judgments
        "p0": [["CORRECT"] * 3] * 4,
        "p1": [["CORRECT"] * 3, ["Correct."] * 3, ["INCORRECT"] * 3, ["CORRECT", "INCORRECT", "Yes"]],
        "p2": [["**Correct**"] * 3, ["correct", "not correct", "CORRECT"], ["Yes"] * 3, ["Maybe"] * 3],
    }
    for pos, pid in enumerate(ids):
        member = members[judges[pid]]
        judge_cfg = expert_model_config(member)
        program = dataset.program(pid)
        requests = [judge_request(judge_cfg, program.code, program.language, f"Summary {i} of program {pos}.",
                                  3, int(member.seed), int(cfg.proxy.judge_max_new_tokens)) for i in range(4)]
        prefill(ctx.cache_dir, judge_cfg, requests, lambda i, j, pid=pid: plan[pid][i][j])

    stages = preview(cfg, dataset, cache_dir=ctx.cache_dir)  # with every summary cached: exact judge prompts
    assert [s.cached_samples for s in stages if s.stage == "target summaries"] == [12]
    assert sum(s.cached_samples or 0 for s in stages if s.stage == "P3 judgments") == 36

    outcome = run_p3(ctx)
    table = outcome.table
    assert table["label"].tolist() == [1, 0, 1]  # p1: 2 of 4 CORRECT is a tie → Low
    assert table["score"].tolist() == [1.0, 0.5, 1.0]
    assert table.loc["p2", "n_without_verdict"] == 2 and table.loc["p1", "n_incorrect"] == 2
    assert table["judge"].to_dict() == judges
    m = outcome.metrics
    assert m["model_loaded"] == 0.0 and m["generation_cache_misses"] == 0
    assert m["p3.judgments"] == 3 * 4 * 3
    assert m["p3.unparseable"] == 1 + 6
    assert m["p3.summaries_without_verdict"] == 2
    verdicts = outcome.records["verdicts"]
    assert verdicts.set_index(["program_id", "summary_index"]).loc[("p1", 3), "verdict"] == "INCORRECT"
    assert len(outcome.records["judgments"]) == 36
