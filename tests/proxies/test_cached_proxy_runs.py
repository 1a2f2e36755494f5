"""P0 and P3 run whole from a generation cache filled beforehand: no model loads, so the
aggregation, records and metrics are checked against answers chosen by hand."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import pytest

from mcu_exp.proxies.base import Proxy
from mcu_exp.proxies.p0_subject import answer_jobs
from mcu_exp.proxies.p3_judge import assign_judges, judge_request, judgment_seed
from mcu_exp.proxies.preview import preview
from mcu_exp.proxies.stages import summary_requests
from support.proxies import compose_cfg, make_proxy, prefill, run_cached, synthetic_dataset


@pytest.fixture
def p0_proxy(tmp_path: Path) -> Proxy:
    full = synthetic_dataset(n_programs=4, n_questions=2)
    dataset = dataclasses.replace(full, questions=[q for q in full.questions if q.program_id != "p3"])
    proxy = make_proxy(compose_cfg("proxy=p0", "proxy.samples=3"), dataset, tmp_path / "cache")
    jobs = answer_jobs(proxy.ctx.model, dataset, ["p0", "p1", "p2"], proxy.cfg)

    def answer(pos: int, _: int) -> str:
        job = jobs[pos]
        right = "ABCD"[job.order.index(job.question.correct)]
        if job.question.program_id == "p0":
            return f"The answer is {right}."
        if job.question.program_id == "p1":
            return "A"  # always the first letter: every option gets the same votes
        return f"({right})" if job.question.question_id == "q0" and job.run < 3 else "I do not know"

    prefill(proxy.ctx.cache_dir, proxy.ctx.model, [j.request for j in jobs], answer)
    return proxy


def test_p0_from_cache(p0_proxy: Proxy, caplog: pytest.LogCaptureFixture) -> None:
    assert p0_proxy.ctx.program_ids == ["p0", "p1", "p2", "p3"]
    (stage,) = preview(p0_proxy, cache_dir=p0_proxy.ctx.cache_dir)  # 2 questions x 4 rotations x 3 samples
    assert (stage.requests, stage.samples, stage.cached_samples) == (3 * 2 * 4, 3 * 2 * 4 * 3, 3 * 2 * 4 * 3)
    done, stats = run_cached(p0_proxy)
    assert stats == {"generation_cache_hits": 2 * 3 * 4 * 3, "generation_cache_misses": 0, "model_loaded": 0.0}
    with caplog.at_level(logging.WARNING, logger="mcu_exp.proxies.p0_subject"):
        outcome = p0_proxy.outcome(done)
    table = outcome.table
    assert list(table.index) == ["p0", "p1", "p2"]  # p3 has no questions: left out
    assert table["label"].tolist() == [1, 0, 1]  # p2: one of two right is enough
    assert table["score"].tolist() == [1.0, 0.0, 0.5]
    m = outcome.metrics
    assert "model_loaded" not in m  # the generators' figures, added by the job (see run_cached)
    assert m["p0.programs_without_questions"] == 1
    assert m["p0.tied_questions"] == 2  # p1's two questions
    assert m["p0.unparseable"] == 4 * 3 + 3  # p2/q1: 4 runs x 3 samples; p2/q0: its last run
    # p2 answered 9 of its 24 samples (q0: 9 of 12, enough to be right; q1: none): flagged
    assert table["too_few_answers"].tolist() == [False, False, True]
    assert table.loc["p2", "answer_share"] == 9 / 24
    assert (m["p0.questions_too_few_answers"], m["p0.programs_too_few_answers"]) == (1, 1)
    flagged = [r.getMessage() for r in caplog.records if "too_few_answers" in r.getMessage()]
    assert len(flagged) == 1 and "1 of 3 programs" in flagged[0]
    assert m["p0.letter_share.A"] > m["p0.letter_share.B"]  # p1's position bias shows
    assert sum(m[f"p0.letter_share.{x}"] for x in "ABCD") == pytest.approx(1.0)
    assert m["p0.accuracy_when_correct_at.A"] > m["p0.accuracy_when_correct_at.B"]
    questions = outcome.records["p0_questions"]
    assert len(questions) == 6 and questions["answered_correctly"].sum() == 3
    assert outcome.records["p0_labels"]["label"].tolist() == [1, 0, 1]
    assert len(outcome.records["answers"]) == 2 * 3 * 4 * 3


def test_without_questions_p0_says_how_to_give_them(tmp_path: Path) -> None:
    dataset = synthetic_dataset(n_programs=2, n_questions=0)
    proxy = make_proxy(compose_cfg("proxy=p0"), dataset, tmp_path)
    assert not proxy.applies()  # a job then scores no cross-proxy reference and previews none
    with pytest.raises(ValueError, match="dataset.questions=FILE"):
        run_cached(proxy)
    reference = make_proxy(compose_cfg(), dataset, tmp_path, key="reference")
    assert reference.name == "p0" and not reference.applies()
    p1 = make_proxy(compose_cfg("proxy.k=4", "proxy.k_cal=2"), dataset, tmp_path)
    assert [s.stage for s in preview(p1, reference)] == ["target summaries"]


def test_p3_from_cache(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    cfg = compose_cfg("proxy=p3", "proxy.k=4", "proxy.k_cal=2", "proxy.r=3", "experts=local")
    dataset = synthetic_dataset(n_programs=3, n_questions=0)
    proxy = make_proxy(cfg, dataset, tmp_path / "cache")
    ctx, ids = proxy.ctx, dataset.program_ids
    targets = summary_requests(ctx.model, dataset, ids, proxy.cfg.prompt, 4, proxy.cfg.sample_seed)
    prefill(ctx.cache_dir, ctx.model, targets, lambda pos, i: f"Summary {i} of program {pos}.")

    members = ctx.experts.labelled()  # by display label, as the judges are drawn
    judges = assign_judges(ids, list(members), proxy.cfg.judge_seed)
    plan = {  # program -> per summary, the r = 3 judgments
        "p0": [["CORRECT"] * 3] * 4,
        "p1": [["CORRECT"] * 3, ["Correct."] * 3, ["INCORRECT"] * 3, ["CORRECT", "INCORRECT", "Yes"]],
        "p2": [["Yes"] * 3, ["**Correct**", "not correct", "correct"], ["Yes"] * 3, ["Maybe"] * 3],
    }
    for pos, pid in enumerate(ids):
        member = members[judges[pid]]
        program = dataset.program(pid)
        requests = [
            judge_request(
                member.model,
                program.code,
                program.language,
                f"Summary {i} of program {pos}.",
                3,
                judgment_seed(member.seed, pid, i),
                proxy.cfg.judge_max_new_tokens,
            )
            for i in range(4)
        ]
        prefill(ctx.cache_dir, member.model, requests, lambda i, j, pid=pid: plan[pid][i][j])

    stages = preview(proxy, cache_dir=ctx.cache_dir)  # with every summary cached: exact judge prompts
    assert [s.cached_samples for s in stages if s.stage == "target summaries"] == [12]
    assert sum(s.cached_samples or 0 for s in stages if s.stage == "P3 judgments") == 36

    done, stats = run_cached(proxy)
    assert stats["model_loaded"] == 0.0 and stats["generation_cache_misses"] == 0
    assert stats["generation_cache_hits"] == 12 + 36
    with caplog.at_level(logging.WARNING, logger="mcu_exp.proxies.p3_judge"):
        outcome = proxy.outcome(done)
    table = outcome.table
    assert table["label"].tolist() == [1, 0, 0]  # p1: 2 of 4 CORRECT is a tie → Low
    # p2: its one verdict is CORRECT, but the 3 summaries without one count as not CORRECT
    assert table["score"].tolist() == [1.0, 0.5, 0.25]
    assert table.loc["p2", "n_without_verdict"] == 3 and table.loc["p1", "n_incorrect"] == 2
    assert table["verdict_share"].tolist() == [1.0, 1.0, 0.25]
    assert table["too_few_verdicts"].tolist() == [False, False, True]
    assert table["judge"].to_dict() == judges
    m = outcome.metrics
    assert m["p3.judgments"] == 3 * 4 * 3
    assert m["p3.unparseable"] == 1 + 9
    assert m["p3.summaries_without_verdict"] == 3
    assert m["p3.programs_too_few_verdicts"] == 1
    flagged = [r.getMessage() for r in caplog.records if "too_few_verdicts" in r.getMessage()]
    assert len(flagged) == 1 and "1 of 3 programs" in flagged[0]
    assert sum(m[f"p3.judge_programs.{label}"] for label in members) == 3
    verdicts = outcome.records["verdicts"]
    assert verdicts.set_index(["program_id", "summary_index"]).loc[("p1", 3), "verdict"] == "INCORRECT"
    assert len(outcome.records["judgments"]) == 36
