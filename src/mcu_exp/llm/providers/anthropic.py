"""Anthropic Messages API through the official ``anthropic`` client: one sample per request.

The current SDK's ``messages.create`` has no ``temperature``/``top_p`` arguments, so they
travel in ``extra_body`` (checked against the installed SDK's signature; the quirk
``sampling_in_extra_body`` forces either way). Anthropic refuses whitespace-only stop
sequences: those are applied here instead. Quirks: ``drop_params`` (Claude Opus 4.1 takes
``temperature`` or ``top_p``, not both), ``params``, ``extra_body``, ``extra_output_tokens``.

With ``model.batch: true`` the same request bodies go through Message Batches instead
(:class:`AnthropicBatchApi`), at half the price.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from mcu_exp.llm.contract import GenerationRequest
from mcu_exp.llm.providers._batch import BatchState, ItemOutcome
from mcu_exp.llm.providers._batch_api import LOOKUP_MAX, LOOKUP_SLACK_S, epoch
from mcu_exp.llm.providers._common import (
    Secret,
    as_dict,
    drop,
    json_body,
    merged,
    quirks,
    require,
    split_system,
    split_usage,
    truncate_at_stop,
)
from mcu_exp.llm.providers._errors import MalformedResponse
from mcu_exp.llm.providers._runner import CallResult
from mcu_exp.llm.providers._spec import remote_provider
from mcu_exp.llm.providers._urls import check_query, split_query

if TYPE_CHECKING:
    from mcu_exp.config import ModelConfig

DEFAULT_KEY_ENVS = ("ANTHROPIC_API_KEY",)
_FINISH = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "refusal": "filtered"}  # others: error


def output_tokens(request: GenerationRequest, cfg: ModelConfig) -> int:
    """The per-sample output ceiling (``max_tokens``) sent to the API."""
    return request.max_new_tokens + int(quirks(cfg).get("extra_output_tokens", 0))


def build_message_params(request: GenerationRequest, cfg: ModelConfig, sampling_args: bool) -> dict[str, Any]:
    """Keyword arguments for ``messages.create``; sampling goes in ``extra_body`` unless ``sampling_args``."""
    q = quirks(cfg)
    dropped = list(q.get("drop_params", []))
    system, rest = split_system(request)
    params: dict[str, Any] = {
        "model": str(cfg.model_id),
        "max_tokens": output_tokens(request, cfg),
        "messages": [{"role": m.role, "content": m.content} for m in rest],
    }
    if system:
        params["system"] = system
    stops = [s for s in request.stop if s.strip()]
    if stops:
        params["stop_sequences"] = stops
    sampling = drop({"temperature": request.temperature, "top_p": request.top_p}, dropped)
    in_body = bool(q.get("sampling_in_extra_body", not sampling_args))
    extra_body = {**(sampling if in_body else {}), **dict(q.get("extra_body") or {})}
    params = merged(drop({**params, **({} if in_body else sampling)}, dropped), q.get("params"))
    if extra_body:
        params["extra_body"] = extra_body
    return params


def parse_message(data: Mapping[str, Any], stop: Sequence[str]) -> CallResult:
    """One sample and usage from a Messages response; raises MalformedResponse when it has none."""
    blocks = data.get("content")
    if not isinstance(blocks, list) or data.get("type", "message") != "message":
        raise MalformedResponse("message without content blocks")
    raw = "".join(str(b.get("text") or "") for b in blocks if b.get("type") == "text")
    text, cut = truncate_at_stop(raw, stop)
    finish = "stop" if cut else _FINISH.get(str(data.get("stop_reason")), "error")
    usage = data.get("usage") or {}
    prompt = int(usage.get("input_tokens") or 0)
    completion = int(usage.get("output_tokens") or 0)
    return CallResult(split_usage([(text, finish)], prompt, completion), prompt, completion)


class AnthropicProvider:
    """Messages through ``anthropic.AsyncAnthropic``."""

    name = "anthropic"
    max_per_request = 1  # the API has no `n`: samples are concurrent requests

    def __init__(self, cfg: ModelConfig) -> None:
        self.sdk = require("anthropic", "api", self.name)
        self.cfg = cfg
        self.timeout_s = float(cfg.timeout_s)
        self.transient_types: tuple[type[BaseException], ...] = (self.sdk.APIConnectionError,)
        self.sampling_args = False

    def open(self, secret: Secret | None) -> Any:
        base_url, query = split_query(self.cfg.base_url)
        client = self.sdk.AsyncAnthropic(
            api_key=secret.reveal() if secret else None,
            base_url=base_url,
            default_query=query or None,  # the client would append its endpoint after a query
            max_retries=0,  # retries are ours: counted, backed off, shown
            timeout=self.timeout_s,
        )
        self.sampling_args = "temperature" in inspect.signature(client.messages.create).parameters
        return client

    async def close(self, client: Any) -> None:
        await client.close()

    def max_output_tokens(self, request: GenerationRequest) -> int:
        return output_tokens(request, self.cfg)

    async def call(self, client: Any, request: GenerationRequest, count: int, first: int) -> CallResult:
        params = build_message_params(request, self.cfg, self.sampling_args)
        raw = await client.messages.with_raw_response.create(**params)
        return parse_message(json_body(await raw.read()), request.stop)


class AnthropicBatchApi:
    """Message Batches through the sync ``anthropic.Anthropic`` client (see :mod:`._batch`)."""

    name = "anthropic"
    max_items = 100_000  # the API's limits on one batch
    max_bytes = 256_000_000
    max_per_request = 1

    def __init__(self, cfg: ModelConfig) -> None:
        self.sdk = require("anthropic", "api", self.name)
        self.cfg = cfg
        self.transient_types: tuple[type[BaseException], ...] = (self.sdk.APIConnectionError,)

    def open(self, secret: Secret | None) -> Any:
        base_url, query = split_query(self.cfg.base_url)
        return self.sdk.Anthropic(
            api_key=secret.reveal() if secret else None,
            base_url=base_url,
            default_query=query or None,
            max_retries=0,
            timeout=float(self.cfg.timeout_s),
        )

    def close(self, client: Any) -> None:
        client.close()

    def output_tokens(self, request: GenerationRequest) -> int:
        return output_tokens(request, self.cfg)

    def line(self, request: GenerationRequest, count: int, first: int, custom_id: str) -> dict[str, Any]:
        params = build_message_params(request, self.cfg, sampling_args=True)
        extra = dict(params.pop("extra_body", None) or {})  # what the client would merge into the body
        return {"custom_id": custom_id, "params": {**params, **extra}}

    def submit(self, client: Any, lines: Sequence[dict[str, Any]], tag: str) -> str:
        return str(client.messages.batches.create(requests=list(lines)).id)  # the tag is in the custom ids

    def find(self, client: Any, tag: str, count: int, since: float) -> list[str]:
        """Message Batches show no tag until their results: the batches of ``count`` requests
        created since ``since``, nearest to it first (a wrong one's results name other custom
        ids, so its requests fail and are asked again)."""
        found: list[tuple[float, str]] = []
        for n, batch in enumerate(client.messages.batches.list(limit=100)):  # newest first
            created = epoch(batch.created_at)
            if n >= LOOKUP_MAX or (created is not None and created < since - LOOKUP_SLACK_S):
                break
            counts = batch.request_counts
            total = counts.processing + counts.succeeded + counts.errored + counts.canceled + counts.expired
            if total == count:
                found.append((abs((created or since) - since), str(batch.id)))
        return [batch_id for _, batch_id in sorted(found)]

    def poll(self, client: Any, batch_id: str) -> BatchState:
        batch = client.messages.batches.retrieve(batch_id)
        return BatchState(batch.processing_status == "ended", str(batch.processing_status), "", batch)

    def results(self, client: Any, batch_id: str, state: BatchState) -> list[ItemOutcome]:
        found = []
        for entry in client.messages.batches.results(batch_id):
            data = as_dict(entry)
            result = data.get("result") or {}
            kind = str(result.get("type"))
            if kind == "succeeded":
                found.append(ItemOutcome(str(data.get("custom_id")), result.get("message") or {}))
                continue
            error = ((result.get("error") or {}).get("error") or {}) if kind == "errored" else {}
            detail = f"{kind}: {error.get('message')}" if error.get("message") else f"request {kind}"
            found.append(ItemOutcome(str(data.get("custom_id")), None, detail))
        return found

    def parse(self, data: Mapping[str, Any], request: GenerationRequest, count: int) -> CallResult:
        return parse_message(data, request.stop)


PROVIDER = remote_provider(
    "anthropic",
    AnthropicProvider,
    key_envs=DEFAULT_KEY_ENVS,
    batch_api=AnthropicBatchApi,
    sdk=("anthropic",),
    check=check_query,
)
