"""What a job will ask of its models, before it asks: requests, samples, tokens and cost per stage.

The preview walks the proxy's own stages (:meth:`mcu_exp.proxies.base.Proxy.stages`), so
it builds the very requests the job will send and its counts are exact; token figures are bounds and estimates:

- output tokens are an upper bound: every sample reaching its ``max_new_tokens`` (plus the
  model's ``quirks.extra_output_tokens`` allowance for hidden reasoning, which is billed);
- prompt tokens are estimated as characters / 4 of the prompt text, paid once per API call
  (a request of ``n`` samples takes ⌈n / model.n_per_request⌉ calls on remote backends,
  one prefill on local and vLLM ones);
- a stage whose prompts contain texts not yet written (P3's judge prompts hold the target's
  summaries) is built from the cached texts when every one is cached, else from stand-ins
  of ``4 × max_new_tokens`` characters;
- cost = prompt estimate × ``price_input_per_mtok`` + output bound × ``price_output_per_mtok``,
  only for models with prices; for a model in batch mode (``model.batch``) at the batch price,
  the interactive one × ``model.batch_discount`` (half by default), marked "(batch)".

With ``cache_dir``, each stage also says how many of its samples the generation cache
already holds (the rest is what the job will generate and pay for).

:func:`plan_stages` is the one walk of a job's stages before it runs: one cache open, one
read per stage; the printed preview (:attr:`StagePlan.estimates`) and the check of the
models the job will call (:meth:`StagePlan.check_models`: an API key only where samples are
missing) both come from it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from mcu_exp.config import ModelConfig
from mcu_exp.llm import GenerationRequest
from mcu_exp.llm.cache import GenerationCache, open_generation_cache
from mcu_exp.llm.cache_keys import sample_key
from mcu_exp.llm.factory import backend_identity, capabilities, check_backend
from mcu_exp.llm.providers._batch_check import batch_on, price_factor
from mcu_exp.proxies.base import Proxy
from mcu_exp.proxies.stages import Stage, StageResults

CHARS_PER_TOKEN = 4


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
    batch: bool = False  # priced at the provider's batch price


def _extra_tokens(model_cfg: ModelConfig) -> int:
    quirks = model_cfg.quirks or {}
    return int(quirks.get("extra_output_tokens", 0) or 0)


def _calls(model_cfg: ModelConfig, request: GenerationRequest) -> int:
    if capabilities(model_cfg).in_process:
        return 1
    return math.ceil(request.n / max(1, model_cfg.n_per_request))


def _lookup(
    model_cfg: ModelConfig, requests: Sequence[GenerationRequest], cache: GenerationCache | None
) -> tuple[int | None, list[list[str]] | None]:
    """How many of the requests' samples the cache holds, and every request's texts when it
    holds all of them (one read of the cache for both)."""
    if cache is None:
        return None, None
    identity = backend_identity(model_cfg)
    keys = [[sample_key(identity, r, i) for i in range(r.n)] for r in requests]
    found = cache.get_many(k for ks in keys for k in ks)
    if any(k not in found for ks in keys for k in ks):
        return len(found), None
    return len(found), [[found[k].text for k in ks] for ks in keys]


def estimate(
    stage: str,
    model_label: str,
    model_cfg: ModelConfig,
    requests: Sequence[GenerationRequest],
    cached: int | None = None,
) -> StageEstimate:
    """Counts, token bounds and cost of sending ``requests`` to ``model_cfg`` (``cached``: how
    many of their samples the cache already holds, when known)."""
    extra = _extra_tokens(model_cfg)
    samples = sum(r.n for r in requests)
    output = sum(r.n * (r.max_new_tokens + extra) for r in requests)
    prompt = sum(
        _calls(model_cfg, r) * math.ceil(sum(len(m.content) for m in r.messages) / CHARS_PER_TOKEN) for r in requests
    )
    p_in, p_out = model_cfg.price_input_per_mtok, model_cfg.price_output_per_mtok
    cost = None
    if p_in is not None or p_out is not None:
        cost = (prompt * float(p_in or 0.0) + output * float(p_out or 0.0)) / 1e6 * price_factor(model_cfg)
    per_sample = max((r.max_new_tokens for r in requests), default=0) + extra
    return StageEstimate(
        stage,
        model_label,
        len(requests),
        samples,
        max((r.n for r in requests), default=0),
        per_sample,
        output,
        prompt,
        cost,
        cached,
        batch_on(model_cfg),
    )


@dataclass(frozen=True)
class PlannedStage:
    """One stage as the job will run it: its requests and model, their estimate, whether the
    cache holds every sample (``complete``; False for a stage built from stand-ins) and
    whether its proxy applies to the job's programs (``applies``)."""

    stage: Stage
    estimate: StageEstimate
    complete: bool
    applies: bool = True


@dataclass(frozen=True)
class StagePlan:
    """The stages of a job's proxy, then of its reference, in order."""

    stages: list[PlannedStage] = field(default_factory=list)

    @property
    def estimates(self) -> list[StageEstimate]:
        """What :func:`render_preview` prints, one estimate per stage."""
        return [s.estimate for s in self.stages]

    def models(self) -> list[tuple[ModelConfig, bool]]:
        """Every distinct model the applying proxies' stages call, and whether it has samples to
        generate (some stage of it is not wholly cached)."""
        found: dict[int, tuple[ModelConfig, bool]] = {}
        for planned in self.stages:
            if planned.applies:
                model = planned.stage.model
                found[id(model)] = (model, found.get(id(model), (model, False))[1] or not planned.complete)
        return list(found.values())

    def check_models(self) -> None:
        """Raise the first configuration problem of a model the job will call (unknown backend,
        malformed ``base_url``, and for a model with samples to generate an unset API-key
        variable) before any run or request is started."""
        for model, missing in self.models():
            check_backend(model, need_key=missing)


def _walk(proxy: Proxy, cache: GenerationCache | None, suffix: str = "") -> list[PlannedStage]:
    """Plan each stage of ``proxy``, feeding later stages the cached texts of earlier ones,
    or stand-ins of ``4 × max_new_tokens`` characters when some are missing (a stage built
    from stand-ins gets no cached count: its requests are not the real ones)."""
    done = StageResults()
    applies = proxy.applies()
    planned = []
    for stage in proxy.stages(done):
        cached, texts = _lookup(stage.model, stage.requests, cache) if not done.stale else (None, None)
        found = estimate(stage.title + suffix, stage.model_label, stage.model, stage.requests, cached)
        planned.append(PlannedStage(stage, found, complete=texts is not None, applies=applies))
        if texts is None:
            done.put(
                stage.key, [["x" * (CHARS_PER_TOKEN * r.max_new_tokens)] * r.n for r in stage.requests], exact=False
            )
        else:
            done.put(stage.key, texts)
    return planned


def plan_stages(
    proxy: Proxy, reference: Proxy | None = None, cache_dir: str | Path | None = None, cache_url: str | None = None
) -> StagePlan:
    """The stages ``proxy`` (then ``reference``, the cross-proxy reference, when it applies)
    will run, in order, with their estimates and what the cache holds: the same stage code
    the job runs, the cache opened once."""
    cache = (
        open_generation_cache(cache_dir or ".", cache_url, existing=True)
        if cache_dir is not None or cache_url
        else None
    )
    try:
        stages = _walk(proxy, cache)
        if reference is not None and reference.applies():
            stages += _walk(reference, cache, suffix=" (reference)")
        return StagePlan(stages)
    finally:
        if cache is not None:
            cache.close()


def preview(
    proxy: Proxy, reference: Proxy | None = None, cache_dir: str | Path | None = None, cache_url: str | None = None
) -> list[StageEstimate]:
    """The estimates of :func:`plan_stages`: what the job's stages will ask, stage by stage."""
    return plan_stages(proxy, reference, cache_dir, cache_url).estimates


def render_preview(stages: Sequence[StageEstimate]) -> str:
    """A printable table of the estimates with totals and how the figures were made."""
    if not stages:
        return "Request preview: this proxy calls no model through the built-in stages."
    rows = []
    for s in stages:
        rows.append(
            {
                "stage": s.stage,
                "model": s.model,
                "requests": f"{s.requests:,}",
                "samples": f"{s.samples:,}" + (f" (x{s.samples_per_request})" if s.samples_per_request > 1 else ""),
                "max tok/sample": f"{s.max_new_tokens:,}",
                "output tok <=": f"{s.output_tokens_max:,}",
                "prompt tok ~": f"{s.prompt_tokens_est:,}",
                "cost USD ~": "-" if s.cost_usd is None else f"{s.cost_usd:,.2f}" + (" (batch)" if s.batch else ""),
                "cached": "-" if s.cached_samples is None else f"{s.cached_samples:,}",
            }
        )
    priced = [s.cost_usd for s in stages if s.cost_usd is not None]
    total = (
        f"Total: {sum(s.requests for s in stages):,} requests, {sum(s.samples for s in stages):,} samples, "
        f"<= {sum(s.output_tokens_max for s in stages):,} output tokens"
        + (f", ~{sum(priced):,.2f} USD for priced models" if priced else "")
    )
    notes = (
        "prompt tokens ~ characters/4; output tokens are an upper bound (every sample at its "
        "max_new_tokens, reasoning allowance included); cost only for models with prices"
        + (
            "; (batch): at the provider's batch price (model.batch_discount x the interactive price)"
            if any(s.batch for s in stages)
            else ""
        )
    )
    return "\n".join(["Request preview", pd.DataFrame(rows).to_string(index=False), total, notes])
