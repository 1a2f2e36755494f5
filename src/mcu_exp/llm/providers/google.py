"""Gemini through the official ``google-genai`` client: up to 8 candidates per request.

Quirks: ``thinking_budget`` (Gemini 2.5 Pro thinks, and thinking tokens count against
``max_output_tokens``, so pair it with ``extra_output_tokens``), ``drop_params``, ``params``
(merged into the generation config), ``api_version`` (default ``v1beta``).

With ``model.batch: true`` the same requests go through Gemini batch mode instead
(:class:`GoogleBatchApi`: inline requests, ``batches.create``/``batches.get``), at half the price.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from mcu_exp.llm.contract import GenerationRequest
from mcu_exp.llm.providers._batch import BatchState, ItemOutcome
from mcu_exp.llm.providers._batch_api import LOOKUP_MAX, LOOKUP_SLACK_S, epoch
from mcu_exp.llm.providers._common import (
    Secret,
    as_dict,
    drop,
    merged,
    quirks,
    require,
    sample_seed,
    split_system,
    split_usage,
    truncate_at_stop,
)
from mcu_exp.llm.providers._errors import MalformedResponse
from mcu_exp.llm.providers._runner import CallResult
from mcu_exp.llm.providers._spec import remote_provider

if TYPE_CHECKING:
    from mcu_exp.config import ModelConfig

DEFAULT_KEY_ENVS = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
MAX_CANDIDATES = 8  # the API's ceiling on candidate_count
MAX_STOPS = 5
_FINISH = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "filtered",
    "RECITATION": "filtered",
    "BLOCKLIST": "filtered",
    "PROHIBITED_CONTENT": "filtered",
    "SPII": "filtered",
}  # others: error
_ROLES = {"user": "user", "assistant": "model"}
_BATCH_ENDED = {
    "JOB_STATE_SUCCEEDED",
    "JOB_STATE_FAILED",
    "JOB_STATE_CANCELLED",
    "JOB_STATE_EXPIRED",
    "JOB_STATE_PARTIALLY_SUCCEEDED",
}


def output_tokens(request: GenerationRequest, cfg: ModelConfig) -> int:
    """The per-sample output ceiling (``max_output_tokens``, thinking included) sent to the API."""
    return request.max_new_tokens + int(quirks(cfg).get("extra_output_tokens", 0))


def build_generate_params(request: GenerationRequest, cfg: ModelConfig, count: int, first: int) -> dict[str, Any]:
    """Keyword arguments for ``models.generate_content`` asking ``count`` candidates."""
    q = quirks(cfg)
    system, rest = split_system(request)
    config: dict[str, Any] = {
        "temperature": request.temperature,
        "top_p": request.top_p,
        "max_output_tokens": output_tokens(request, cfg),
        "seed": sample_seed(request, first),
    }
    if count > 1:
        config["candidate_count"] = count
    if system:
        config["system_instruction"] = system
    if request.stop:
        config["stop_sequences"] = list(request.stop)[:MAX_STOPS]
    if q.get("thinking_budget") is not None:
        config["thinking_config"] = {"thinking_budget": int(q["thinking_budget"])}
    config = merged(drop(config, q.get("drop_params", [])), q.get("params"))
    contents = [{"role": _ROLES.get(m.role, "user"), "parts": [{"text": m.content}]} for m in rest]
    return {"model": str(cfg.model_id), "contents": contents, "config": config}


def parse_generate_response(data: Mapping[str, Any], stop: Sequence[str], count: int) -> CallResult:
    """Samples and usage from a GenerateContentResponse (SDK field names).

    A prompt blocked outright returns ``count`` empty samples marked ``error``; a response
    with neither candidates nor a block reason is malformed.
    """
    usage = data.get("usage_metadata") or {}
    prompt = int(usage.get("prompt_token_count") or 0)
    completion = int(usage.get("candidates_token_count") or 0) + int(usage.get("thoughts_token_count") or 0)
    candidates = data.get("candidates")
    if not candidates:
        if (data.get("prompt_feedback") or {}).get("block_reason"):
            return CallResult(split_usage([("", "filtered")] * count, prompt, completion), prompt, completion)
        raise MalformedResponse("generate_content response without candidates")
    pairs = []
    for cand in sorted(candidates, key=lambda c: int(c.get("index") or 0)):
        parts = (cand.get("content") or {}).get("parts") or []
        raw = "".join(str(p.get("text") or "") for p in parts if not p.get("thought"))
        text, cut = truncate_at_stop(raw, stop)
        finish = "stop" if cut else _FINISH.get(str(cand.get("finish_reason")), "error")
        pairs.append((text, finish))
    return CallResult(split_usage(pairs, prompt, completion), prompt, completion)


def _transport_errors() -> tuple[type[BaseException], ...]:
    """Connection errors of whichever HTTP stack google-genai uses (aiohttp or httpx)."""
    found: list[type[BaseException]] = []
    for module, name in (("aiohttp", "ClientError"), ("httpx", "TransportError"), ("httpx2", "TransportError")):
        try:
            found.append(getattr(__import__(module), name))
        except (ImportError, AttributeError):
            continue
    return tuple(found)


def make_client(cfg: ModelConfig, secret: Secret | None) -> Any:
    """A ``google.genai.Client`` for the Gemini Developer API, without SDK retries (ours are
    counted, backed off, shown)."""
    from google import genai
    from google.genai import types

    options: dict[str, Any] = {
        "base_url": cfg.base_url,
        "api_version": str(quirks(cfg).get("api_version", "v1beta")),
        "timeout": int(float(cfg.timeout_s) * 1000),  # milliseconds
    }
    if "retry_options" in types.HttpOptions.model_fields:
        options["retry_options"] = None
    return genai.Client(
        api_key=secret.reveal() if secret else None, vertexai=False, http_options=types.HttpOptions(**options)
    )


class GoogleProvider:
    """generate_content through ``google.genai.Client(...).aio``."""

    name = "google"
    max_per_request = MAX_CANDIDATES

    def __init__(self, cfg: ModelConfig) -> None:
        require("google.genai", "api", self.name)
        self.cfg = cfg
        self.timeout_s = float(cfg.timeout_s)
        self.transient_types = _transport_errors()

    def open(self, secret: Secret | None) -> Any:
        return make_client(self.cfg, secret).aio

    async def close(self, client: Any) -> None:
        close = getattr(client, "aclose", None)  # older google-genai releases have none
        if close is not None:
            await close()

    def max_output_tokens(self, request: GenerationRequest) -> int:
        return output_tokens(request, self.cfg)

    async def call(self, client: Any, request: GenerationRequest, count: int, first: int) -> CallResult:
        from google.genai import types

        params = build_generate_params(request, self.cfg, count, first)
        params["config"] = types.GenerateContentConfig.model_validate(params["config"])  # rejects typos in quirks
        response = await client.models.generate_content(**params)
        return parse_generate_response(as_dict(response), request.stop, count)


class GoogleBatchApi:
    """Gemini batch mode with inline requests through the sync client (see :mod:`._batch`)."""

    name = "google"
    max_items = 100_000  # no documented count limit: the inline size limit binds first
    max_bytes = 20_000_000  # the API's limit on inline requests
    max_per_request = MAX_CANDIDATES

    def __init__(self, cfg: ModelConfig) -> None:
        require("google.genai", "api", self.name)
        self.cfg = cfg
        self.transient_types = _transport_errors()

    def open(self, secret: Secret | None) -> Any:
        return make_client(self.cfg, secret)

    def close(self, client: Any) -> None:
        close = getattr(client, "close", None)
        if close is not None:
            close()

    def output_tokens(self, request: GenerationRequest) -> int:
        return output_tokens(request, self.cfg)

    def line(self, request: GenerationRequest, count: int, first: int, custom_id: str) -> dict[str, Any]:
        params = build_generate_params(request, self.cfg, count, first)
        return {"contents": params["contents"], "config": params["config"], "metadata": {"custom_id": custom_id}}

    def submit(self, client: Any, lines: Sequence[dict[str, Any]], tag: str) -> str:
        from google.genai import types

        requests = [
            types.InlinedRequest(
                contents=line["contents"],
                metadata=line["metadata"],
                config=types.GenerateContentConfig.model_validate(line["config"]),
            )
            for line in lines
        ]
        job = client.batches.create(model=str(self.cfg.model_id), src=requests, config={"display_name": tag})
        return str(job.name)

    def find(self, client: Any, tag: str, count: int, since: float) -> list[str]:
        """The batch whose ``display_name`` is ``tag``, among those listed since ``since``."""
        for n, job in enumerate(client.batches.list(config={"page_size": 100})):
            if n >= LOOKUP_MAX:
                break
            created = epoch(job.create_time)
            if job.display_name == tag and (created is None or created >= since - LOOKUP_SLACK_S):
                return [str(job.name)]
        return []

    def poll(self, client: Any, batch_id: str) -> BatchState:
        job = client.batches.get(name=batch_id)
        state = str(getattr(job.state, "value", job.state))
        note = ""
        if state != "JOB_STATE_SUCCEEDED" and state in _BATCH_ENDED:
            message = getattr(job.error, "message", None) if job.error else None
            note = f"batch {state.removeprefix('JOB_STATE_').lower()}" + (f": {message}" if message else "")
        return BatchState(state in _BATCH_ENDED, state, note, job)

    def results(self, client: Any, batch_id: str, state: BatchState) -> list[ItemOutcome]:
        dest = state.handle.dest
        found = []
        for n, entry in enumerate((dest.inlined_responses if dest else None) or []):
            custom_id = str((entry.metadata or {}).get("custom_id") or f"c{n}")
            if entry.error is not None or entry.response is None:
                found.append(ItemOutcome(custom_id, None, str(getattr(entry.error, "message", None) or "no response")))
            else:
                found.append(ItemOutcome(custom_id, as_dict(entry.response)))
        return found

    def parse(self, data: Mapping[str, Any], request: GenerationRequest, count: int) -> CallResult:
        return parse_generate_response(data, request.stop, count)


PROVIDER = remote_provider(
    "google",
    GoogleProvider,
    key_envs=DEFAULT_KEY_ENVS,
    batch_api=GoogleBatchApi,
    sdk=("google.genai",),
)
