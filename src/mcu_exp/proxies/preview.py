"""What a job will ask of its models, before it asks: requests, samples, tokens and cost per stage.

The preview builds the very requests the proxies will send (same prompts, same ``n``), so
its counts are exact; token figures are bounds and estimates:

- output tokens are an upper bound: every sample reaching its ``max_new_tokens`` (plus the
  model's ``quirks.extra_output_tokens`` allowance for hidden reasoning, which is billed);
- prompt tokens are estimated as characters / 4 of the prompt text, paid once per API call
  (a request of ``n`` samples takes ⌈n / model.n_per_request⌉ calls on remote backends,
  one prefill on local and vLLM ones);
- P3's judge prompts contain summaries not yet written: the preview uses the cached
  summaries when every one is cached, else a stand-in of ``4 × model.max_new_tokens`` characters;
- cost = prompt estimate × ``price_input_per_mtok`` + output bound × ``price_output_per_mtok``,
  only for models with prices.

With ``cache_dir``, each stage also says how many of its samples the generation cache
already holds (the rest is what the job will generate and pay for).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from mcu_exp.data import Dataset
from mcu_exp.llm import GenerationRequest, request_for
from mcu_exp.llm.cache import GenerationCache, sample_key
from mcu_exp.llm.factory import backend_identity
from mcu_exp.llm.generator import CACHE_FILE
from mcu_exp.proxies.experts import expert_model_config
from mcu_exp.proxies.p0_subject import answer_jobs, split_by_questions
from mcu_exp.proxies.p3_judge import assign_judges, judge_request
from mcu_exp.proxies.prompts import SYSTEM, summary_messages

CHARS_PER_TOKEN = 4
_ONE_PREFILL = ("local", "vllm")


@dataclass(frozen=True)
class StageEstimate:
    """One stage's load on one model."""

    stage: str
    model: str
    requests: int
    samples: int  # all requests' n together
    samples_per_request: int  # the largest n of the stage's requests
    max_new_tokens: int  # per sample, reasoning allowance included
    output_tokens_max: int
    prompt_tokens_est: int
    cost_usd: float | None
    cached_samples: int | None = None


def _extra_tokens(model_cfg: Any) -> int:
    quirks = getattr(model_cfg, "quirks", None) or {}
    return int(quirks.get("extra_output_tokens", 0) or 0)


def _calls(model_cfg: Any, request: GenerationRequest) -> int:
    if str(model_cfg.backend) in _ONE_PREFILL:
        return 1
    return math.ceil(request.n / max(1, int(getattr(model_cfg, "n_per_request", 1) or 1)))


def _cached(model_cfg: Any, requests: Sequence[GenerationRequest], cache: GenerationCache | None) -> int | None:
    if cache is None:
        return None
    identity = backend_identity(model_cfg)
    return len(cache.get_many(sample_key(identity, r, i) for r in requests for i in range(r.n)))


def estimate(stage: str, model_label: str, model_cfg: Any, requests: Sequence[GenerationRequest],
             cache: GenerationCache | None = None) -> StageEstimate:
    """Counts, token bounds and cost of sending ``requests`` to ``model_cfg``."""
    extra = _extra_tokens(model_cfg)
    samples = sum(r.n for r in requests)
    output = sum(r.n * (r.max_new_tokens + extra) for r in requests)
    prompt = sum(_calls(model_cfg, r) * math.ceil(sum(len(m.content) for m in r.messages) / CHARS_PER_TOKEN)
                 for r in requests)
    p_in, p_out = getattr(model_cfg, "price_input_per_mtok", None), getattr(model_cfg, "price_output_per_mtok", None)
    cost = None
    if p_in is not None or p_out is not None:
        cost = (prompt * float(p_in or 0.0) + output * float(p_out or 0.0)) / 1e6
    per_sample = max((r.max_new_tokens for r in requests), default=0) + extra
    return StageEstimate(stage, model_label, len(requests), samples, max((r.n for r in requests), default=0),
                         per_sample, output, prompt, cost, _cached(model_cfg, requests, cache))


def summary_requests(model_cfg: Any, dataset: Dataset, program_ids: Sequence[str], prompt: str, n: int,
                     seed: int) -> list[GenerationRequest]:
    """The summary requests P1 (and P2, P3) send to ``model_cfg`` and the experts."""
    system = model_cfg.system_prompt if model_cfg.system_prompt is not None else SYSTEM
    return [request_for(model_cfg, summary_messages(dataset.program(p).code, dataset.program(p).language, prompt,
                                                    system=system), n=n, seed=seed) for p in program_ids]


def _cached_texts(model_cfg: Any, requests: Sequence[GenerationRequest],
                  cache: GenerationCache | None) -> list[list[str]] | None:
    """Every request's texts when the cache holds all of them, else None."""
    if cache is None:
        return None
    identity = backend_identity(model_cfg)
    keys = [[sample_key(identity, r, i) for i in range(r.n)] for r in requests]
    found = cache.get_many(k for ks in keys for k in ks)
    if any(k not in found for ks in keys for k in ks):
        return None
    return [[found[k].text for k in ks] for ks in keys]


def _judgment_stages(cfg: Any, dataset: Dataset, ids: Sequence[str], target: list[GenerationRequest],
                     cache: GenerationCache | None) -> list[StageEstimate]:
    texts = _cached_texts(cfg.model, target, cache)
    stand_in = "x" * (CHARS_PER_TOKEN * int(cfg.model.max_new_tokens))
    k = int(cfg.proxy.k)
    judges = assign_judges(list(ids), [str(m.label) for m in cfg.experts.members], int(cfg.proxy.judge_seed))
    stages = []
    for member in cfg.experts.members:
        judged = [(n, p) for n, p in enumerate(ids) if judges[p] == str(member.label)]
        if not judged:
            continue
        judge_cfg = expert_model_config(member)
        requests = [judge_request(judge_cfg, dataset.program(p).code, dataset.program(p).language,
                                  texts[n][i] if texts else stand_in, int(cfg.proxy.r), int(member.seed),
                                  int(cfg.proxy.judge_max_new_tokens))
                    for n, p in judged for i in range(k)]
        stages.append(estimate("P3 judgments", str(member.label), judge_cfg, requests, cache if texts else None))
    return stages


def preview(cfg: Any, dataset: Dataset, program_ids: Sequence[str] | None = None,
            cache_dir: str | Path | None = None, include_p0_reference: bool = True) -> list[StageEstimate]:
    """The stages the job's proxy will run, in order, with their estimates.

    ``program_ids`` defaults to every program of ``dataset``. With ``include_p0_reference``
    P1–P3 jobs add P0's answer stage when the programs have questions (the cross-proxy
    reference). Proxies other than p0–p3 give no stages.
    """
    ids = list(dataset.program_ids if program_ids is None else program_ids)
    name = str(cfg.proxy.name) if cfg.proxy.impl is None else ""
    path = Path(cache_dir) / CACHE_FILE if cache_dir is not None else None
    cache = GenerationCache(path) if path is not None and path.is_file() else None
    try:
        stages: list[StageEstimate] = []
        if name in ("p1", "p2", "p3"):
            target = summary_requests(cfg.model, dataset, ids, str(cfg.proxy.prompt), int(cfg.proxy.k),
                                      int(cfg.proxy.sample_seed))
            stages.append(estimate("target summaries", str(cfg.model.name), cfg.model, target, cache))
            if name == "p2":
                for member in cfg.experts.members:
                    member_cfg = expert_model_config(member)
                    requests = summary_requests(member_cfg, dataset, ids, str(cfg.proxy.prompt),
                                                int(cfg.experts.m), int(member.seed))
                    stages.append(estimate("P2 expert summaries", str(member.label), member_cfg, requests, cache))
            if name == "p3":
                stages.extend(_judgment_stages(cfg, dataset, ids, target, cache))
        kept, _ = split_by_questions(dataset, ids)
        if kept and (name == "p0" or (name and include_p0_reference)):
            jobs = answer_jobs(cfg.model, dataset, kept, cfg.proxy)
            label = "P0 answers" if name == "p0" else "P0 answers (reference)"
            stages.append(estimate(label, str(cfg.model.name), cfg.model, [j.request for j in jobs], cache))
        return stages
    finally:
        if cache is not None:
            cache.close()


def preview_frame(stages: Sequence[StageEstimate]) -> pd.DataFrame:
    """The estimates as a table, one row per stage."""
    return pd.DataFrame([s.__dict__ for s in stages])


def render_preview(stages: Sequence[StageEstimate]) -> str:
    """A printable table of the estimates with totals and how the figures were made."""
    if not stages:
        return "Request preview: this proxy calls no model through the built-in stages."
    rows = []
    for s in stages:
        rows.append({
            "stage": s.stage, "model": s.model, "requests": f"{s.requests:,}",
            "samples": f"{s.samples:,}" + (f" (x{s.samples_per_request})" if s.samples_per_request > 1 else ""),
            "max tok/sample": f"{s.max_new_tokens:,}", "output tok <=": f"{s.output_tokens_max:,}",
            "prompt tok ~": f"{s.prompt_tokens_est:,}",
            "cost USD ~": "-" if s.cost_usd is None else f"{s.cost_usd:,.2f}",
            "cached": "-" if s.cached_samples is None else f"{s.cached_samples:,}",
        })
    priced = [s.cost_usd for s in stages if s.cost_usd is not None]
    total = (f"Total: {sum(s.requests for s in stages):,} requests, {sum(s.samples for s in stages):,} samples, "
             f"<= {sum(s.output_tokens_max for s in stages):,} output tokens"
             + (f", ~{sum(priced):,.2f} USD for priced models" if priced else ""))
    notes = ("prompt tokens ~ characters/4; output tokens are an upper bound (every sample at its "
             "max_new_tokens, reasoning allowance included); cost only for models with prices")
    return "\n".join(["Request preview", pd.DataFrame(rows).to_string(index=False), total, notes])
