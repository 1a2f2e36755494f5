"""The preview and the job walk the same stage code: on a synthetic dataset whose generation
cache was filled beforehand (from the public request builders, not from the stages), every
previewed stage names the requests, samples and cached samples that running it then sends
and finds (all hits, no model)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcu_exp.data import Dataset
from mcu_exp.llm import CachedGenerator
from mcu_exp.proxies.base import Proxy
from mcu_exp.proxies.p0_subject import SubjectConfig, answer_jobs
from mcu_exp.proxies.p3_judge import assign_judges, judge_request, judgment_seed
from mcu_exp.proxies.preview import StageEstimate, preview
from mcu_exp.proxies.stages import StageResults, summary_requests
from mcu_exp.rng_streams import expert_summaries
from support.proxies import compose_cfg, make_proxy, prefill, run_cached, synthetic_dataset

SUMMARIES = ("proxy.k=4", "proxy.k_cal=2", "experts.m=3", "experts.top_n=1")
TINY = (*SUMMARIES, "reference.samples=2")
CASES = {  # proxy -> overrides, and the (stage, model) rows its job previews
    "p1": (("proxy=p1", *TINY), [("target summaries", "smollm2-135m"), ("P0 answers (reference)", "smollm2-135m")]),
    "p2": (
        ("proxy=p2", *TINY),
        [
            ("target summaries", "smollm2-135m"),
            *(("P2 expert summaries", f"smollm2-{x}") for x in "abc"),
            ("P0 answers (reference)", "smollm2-135m"),
        ],
    ),
    "p3": (("proxy=p3", *TINY, "proxy.r=2"), None),  # judges drawn per program: checked below
    "p0": (("proxy=p0", "proxy.samples=3", "reference=null"), [("P0 answers", "smollm2-135m")]),
}


def summary(pos: int, i: int) -> str:
    return f"Summary {i} of program {pos}: it adds a constant to x."


def fill_cache(proxy: Proxy, reference: Proxy | None) -> int:
    """Every sample the job of ``proxy`` (and ``reference``) will ask for, built with the
    request builders the proxies use; returns how many."""
    ctx, dataset = proxy.ctx, proxy.ctx.dataset
    ids, cache = ctx.program_ids, ctx.cache_dir
    total = 0
    for p in (proxy, reference):
        if isinstance(getattr(p, "cfg", None), SubjectConfig):
            jobs = answer_jobs(ctx.model, dataset, ids, p.cfg)
            prefill(cache, ctx.model, [j.request for j in jobs], lambda pos, i: "ABCD"[(pos + i) % 4])
            total += sum(j.request.n for j in jobs)
    c = proxy.cfg
    if proxy.name == "p0":
        return total
    targets = summary_requests(ctx.model, dataset, ids, c.prompt, c.k, c.sample_seed)
    prefill(cache, ctx.model, targets, summary)
    total += sum(r.n for r in targets)
    members = ctx.experts.labelled()  # by display label, as the judges are drawn
    if proxy.name == "p2":
        for label, member in members.items():
            requests = summary_requests(
                member.model, dataset, ids, c.prompt, ctx.experts.m, member.seed, stream=expert_summaries(label)
            )
            prefill(cache, member.model, requests, lambda pos, i: f"Expert summary {i} of {pos}.")
            total += sum(r.n for r in requests)
    if proxy.name == "p3":
        judges = assign_judges(ids, list(members), c.judge_seed)
        for pos, pid in enumerate(ids):
            member, program = members[judges[pid]], dataset.program(pid)
            requests = [
                judge_request(
                    member.model,
                    program.code,
                    program.language,
                    summary(pos, i),
                    c.r,
                    judgment_seed(member.seed, pid, i),
                    c.judge_max_new_tokens,
                )
                for i in range(c.k)
            ]
            prefill(cache, member.model, requests, lambda i, j: "CORRECT" if (i + j) % 3 else "INCORRECT")
            total += sum(r.n for r in requests)
    return total


def run_each_stage(proxy: Proxy) -> list[tuple[str, str, int, int, int, int]]:
    """Run ``proxy``'s stages through the cache one by one, as the job does, noting for each
    its title, model label, requests, samples, cache hits and misses."""
    done, rows = StageResults(), []
    for stage in proxy.stages(done):
        generator = CachedGenerator(stage.model, proxy.ctx.cache_dir, progress=False)
        results = generator.generate(stage.requests)
        assert not generator.backend_created
        generator.close()
        rows.append(
            (
                stage.title,
                stage.model_label,
                len(stage.requests),
                sum(r.n for r in stage.requests),
                generator.stats["hits"],
                generator.stats["misses"],
            )
        )
        done.put(stage.key, [r.texts for r in results])
    return rows


def seen(estimate: StageEstimate) -> tuple[str, str, int, int, int | None, int]:
    return (estimate.stage, estimate.model, estimate.requests, estimate.samples, estimate.cached_samples, 0)


@pytest.fixture(scope="module")
def dataset() -> Dataset:
    return synthetic_dataset(n_programs=3, n_questions=2)


@pytest.mark.parametrize("name", list(CASES))
def test_preview_and_run_send_the_same_requests(tmp_path: Path, dataset: Dataset, name: str) -> None:
    overrides, expected_rows = CASES[name]
    cfg = compose_cfg(*overrides)
    proxy = make_proxy(cfg, dataset, tmp_path / "cache")
    reference = make_proxy(cfg, dataset, tmp_path / "cache", key="reference") if cfg.reference else None
    filled = fill_cache(proxy, reference)

    estimates = preview(proxy, reference, cache_dir=proxy.ctx.cache_dir)
    if expected_rows is not None:
        assert [(e.stage, e.model) for e in estimates] == expected_rows
    assert all(e.cached_samples == e.samples for e in estimates)  # everything cached, and known to be
    assert sum(e.samples for e in estimates) == filled

    ran = run_each_stage(proxy) + [
        (f"{t} (reference)", *rest) for t, *rest in (run_each_stage(reference) if reference is not None else [])
    ]
    assert ran == [seen(e) for e in estimates]

    # The job's own driver: every sample a hit, none missed, no model created.
    _, stats = run_cached(proxy)
    previewed = sum(e.samples for e in estimates if not e.stage.endswith("(reference)"))
    assert stats == {"generation_cache_hits": previewed, "generation_cache_misses": 0, "model_loaded": 0.0}


def test_p3_judge_stages_follow_the_judges(tmp_path: Path, dataset: Dataset) -> None:
    cfg = compose_cfg("proxy=p3", *SUMMARIES, "proxy.r=2", "reference=null")
    proxy = make_proxy(cfg, dataset, tmp_path / "cache")
    judges = assign_judges(dataset.program_ids, list(proxy.ctx.experts.labelled()), proxy.cfg.judge_seed)
    fill_cache(proxy, None)
    estimates = preview(proxy, cache_dir=proxy.ctx.cache_dir)
    judged = {label: sum(j == label for j in judges.values()) for label in set(judges.values())}
    assert [(e.stage, e.model, e.requests, e.samples) for e in estimates[1:]] == [
        ("P3 judgments", label, judged[label] * 4, judged[label] * 4 * 2)
        for label in proxy.ctx.experts.labelled()
        if label in judged
    ]


def p3_preview_before_any_summary(tmp_path: Path, dataset: Dataset) -> list[StageEstimate]:
    """P3's preview (and its P0 reference's) when only the reference's answers are cached."""
    cfg = compose_cfg("proxy=p3", *TINY, "proxy.r=2")
    proxy = make_proxy(cfg, dataset, tmp_path / "cache")
    reference = make_proxy(cfg, dataset, tmp_path / "cache", key="reference")
    jobs = answer_jobs(proxy.ctx.model, dataset, dataset.program_ids, reference.cfg)
    prefill(proxy.ctx.cache_dir, proxy.ctx.model, [j.request for j in jobs], lambda pos, i: "A")
    judges = assign_judges(dataset.program_ids, list(proxy.ctx.experts.labelled()), proxy.cfg.judge_seed)
    assert len(set(judges.values())) > 1  # several judge stages
    return preview(proxy, reference, cache_dir=proxy.ctx.cache_dir)


def test_stages_built_on_uncached_texts_are_still_counted(tmp_path: Path, dataset: Dataset) -> None:
    estimates = p3_preview_before_any_summary(tmp_path, dataset)
    assert estimates[0].stage == "target summaries" and estimates[0].cached_samples == 0
    judgments = [e for e in estimates if e.stage == "P3 judgments"]
    assert sum(e.requests for e in judgments) == 3 * 4  # still one request per summary
    assert sum(e.samples for e in judgments) == 3 * 4 * 2
    assert judgments[0].cached_samples is None  # its prompts hold stand-in summaries
    assert estimates[-1].stage == "P0 answers (reference)" and estimates[-1].cached_samples == estimates[-1].samples


def test_every_stage_built_on_uncached_texts_claims_no_cached_samples(tmp_path: Path, dataset: Dataset) -> None:
    judgments = [e for e in p3_preview_before_any_summary(tmp_path, dataset) if e.stage == "P3 judgments"]
    assert [e.cached_samples for e in judgments] == [None] * len(judgments)
