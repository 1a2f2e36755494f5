"""The request preview against hand-computed numbers for the paper's protocol."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from mcu_exp.data import Dataset
from mcu_exp.llm import Sample
from mcu_exp.llm.cache import GenerationCache, key_parts, sample_key
from mcu_exp.llm.errors import BackendError
from mcu_exp.llm.factory import backend_identity
from mcu_exp.llm.generator import CACHE_FILE
from mcu_exp.pipeline import build_proxies, typed_config
from mcu_exp.proxies.preview import plan_stages, preview, render_preview
from mcu_exp.proxies.prompts import SYSTEM, summary_messages
from mcu_exp.proxies.stages import summary_requests
from support.proxies import compose_cfg, context, make_proxy, synthetic_dataset


@pytest.fixture(scope="module")
def paper_dataset() -> Dataset:
    """The paper's shape: 50 programs, 3 questions x 4 options each."""
    return synthetic_dataset()


def job_preview(dataset: Dataset, *overrides: str, cache_dir: Path | None = None, **kw):
    """The preview a job of ``overrides`` prints: its proxy's stages, then its reference's."""
    cfg = compose_cfg(*overrides)
    proxy, reference = build_proxies(typed_config(cfg), context(cfg, dataset, cache_dir or Path("unused-cache"), **kw))
    return preview(proxy, reference, cache_dir=cache_dir)


def by_stage(stages):
    return {(s.stage, s.model): s for s in stages}


def prompt_tokens(dataset: Dataset) -> int:
    """Σ over programs of ⌈characters / 4⌉ of the summary prompt (system + user turn)."""
    total = 0
    for p in dataset.programs:
        messages = summary_messages(p.code, p.language, "summarize_intent", system=SYSTEM)
        total += math.ceil(sum(len(m.content) for m in messages) / 4)
    return total


def test_paper_p2(paper_dataset: Dataset) -> None:
    stages = by_stage(job_preview(paper_dataset, "experiment=paper_p2", "model=gpt-4o"))
    target = stages[("target summaries", "gpt-4o")]
    assert (target.requests, target.samples, target.samples_per_request) == (50, 2500, 50)
    assert target.output_tokens_max == 2500 * 48
    assert target.prompt_tokens_est == prompt_tokens(paper_dataset)  # n_per_request 50: one call each
    assert target.cost_usd == pytest.approx((target.prompt_tokens_est * 2.5 + 120_000 * 10.0) / 1e6)
    for label, per_sample, calls in [
        ("gpt-5", 48 + 1024, 30),
        ("claude-opus-4-1", 48, 30),
        ("gemini-2.5-pro", 48 + 1024, 4),
    ]:  # display labels, not config keys
        s = stages[("P2 expert summaries", label)]
        assert (s.requests, s.samples, s.samples_per_request) == (50, 50 * 30, 30)
        assert s.max_new_tokens == per_sample and s.output_tokens_max == 1500 * per_sample
        assert s.prompt_tokens_est == calls * prompt_tokens(paper_dataset)
    ref = stages[("P0 answers (reference)", "gpt-4o")]
    assert (ref.requests, ref.samples) == (50 * 3 * 4, 50 * 3 * 4 * 50)
    assert len(stages) == 5


def test_paper_p3(paper_dataset: Dataset) -> None:
    stages = job_preview(paper_dataset, "experiment=paper_p3", "model=qwen3-14b")
    judgments = [s for s in stages if s.stage == "P3 judgments"]
    assert sum(s.requests for s in judgments) == 50 * 50
    assert sum(s.samples for s in judgments) == 50 * 50 * 50
    assert all(s.requests % 50 == 0 and s.samples_per_request == 50 for s in judgments)
    assert {s.model for s in judgments} == {"gpt-5", "claude-opus-4-1", "gemini-2.5-pro"}
    claude = next(s for s in judgments if s.model == "claude-opus-4-1")
    assert claude.max_new_tokens == 8 and claude.output_tokens_max == claude.samples * 8
    target = by_stage(stages)[("target summaries", "qwen3-14b")]
    assert target.cost_usd is None and target.samples == 2500


def test_paper_p0(paper_dataset: Dataset) -> None:
    cfg = compose_cfg("experiment=paper_p0", "model=gpt-3.5-turbo")
    (stage,) = preview(make_proxy(cfg, paper_dataset, Path("unused-cache")))
    assert stage.stage == "P0 answers"
    assert (stage.requests, stage.samples, stage.samples_per_request) == (600, 30_000, 50)
    assert stage.output_tokens_max == 30_000 * 8


def test_a_p0_job_previews_no_reference_of_itself(paper_dataset: Dataset) -> None:
    (stage,) = job_preview(paper_dataset, "experiment=paper_p0", "model=gpt-3.5-turbo")
    assert stage.stage == "P0 answers"


def test_p1_has_only_the_target_stage_without_questions() -> None:
    dataset = synthetic_dataset(n_programs=7, n_questions=0)
    (stage,) = job_preview(dataset, "proxy.k=6", "proxy.k_cal=3")
    assert (stage.stage, stage.requests, stage.samples) == ("target summaries", 7, 42)
    assert job_preview(dataset, "proxy.k=6", "proxy.k_cal=3", program_ids=["p1", "p2"])[0].requests == 2


def test_cached_samples_are_counted(tmp_path: Path) -> None:
    dataset = synthetic_dataset(n_programs=3, n_questions=0)
    cfg = compose_cfg("proxy.k=4", "proxy.k_cal=2")
    proxy = make_proxy(cfg, dataset, tmp_path)
    cache = GenerationCache(tmp_path / CACHE_FILE)
    identity = backend_identity(proxy.ctx.model)
    first = summary_requests(proxy.ctx.model, dataset, ["p0"], "summarize_intent", 4, 0)[0]
    for i in range(3):
        cache.put(sample_key(identity, first, i), Sample(f"text {i}", "stop", 10, 5), key_parts(identity, first, i))
    cache.close()
    (stage,) = preview(proxy, cache_dir=tmp_path)
    assert stage.samples == 12 and stage.cached_samples == 3
    assert preview(proxy)[0].cached_samples is None


def test_the_plan_asks_for_a_key_only_where_samples_are_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One walk of the stages gives both the preview and the models' check: a remote model
    whose samples are all cached needs no API key; one missing sample makes it need one."""
    dataset = synthetic_dataset(n_programs=2, n_questions=0)
    proxy = make_proxy(compose_cfg("model=gpt-4o", "proxy.k=4", "proxy.k_cal=2"), dataset, tmp_path)
    model = proxy.ctx.model
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    identity = backend_identity(model)
    slots = [(r, i) for r in summary_requests(model, dataset, ["p0", "p1"], "summarize_intent", 4, 0) for i in range(4)]
    cache = GenerationCache(tmp_path / CACHE_FILE)
    for request, i in slots[:-1]:
        cache.put(sample_key(identity, request, i), Sample("text", "stop", 10, 5), key_parts(identity, request, i))
    plan = plan_stages(proxy, cache_dir=tmp_path)
    (planned,) = plan.stages
    assert (planned.complete, planned.estimate.cached_samples) == (False, 7)
    assert plan.estimates == preview(proxy, cache_dir=tmp_path)
    assert plan.models() == [(model, True)]
    with pytest.raises(BackendError, match="OPENAI_API_KEY"):
        plan.check_models()
    request, i = slots[-1]
    cache.put(sample_key(identity, request, i), Sample("text", "stop", 10, 5), key_parts(identity, request, i))
    cache.close()
    plan = plan_stages(proxy, cache_dir=tmp_path)
    assert plan.stages[0].complete and plan.models() == [(model, False)]
    plan.check_models()  # nothing to generate: no key needed


def test_render_names_every_stage_and_the_estimation_rule(paper_dataset: Dataset) -> None:
    text = render_preview(job_preview(paper_dataset, "experiment=paper_p2", "model=gpt-4o"))
    for part in (
        "target summaries",
        "P2 expert summaries",
        "P0 answers (reference)",
        "gpt-5",
        "gemini-2.5-pro",
        "characters/4",
        "Total: 800 requests",
    ):
        assert part in text
    assert "USD" in text
