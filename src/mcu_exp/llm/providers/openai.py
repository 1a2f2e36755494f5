"""OpenAI Chat Completions: ``n`` samples per request, official ``openai`` client.

With ``model.batch: true`` the same request bodies go through the Batch API instead
(:class:`OpenAIBatchApi`: a JSONL file, ``batches.create``, results read from the output
and error files), at half the price.

Quirks (``model.quirks``): ``max_tokens_param`` (``max_completion_tokens`` for reasoning
models), ``drop_params`` (arguments the model rejects, e.g. ``[temperature, top_p, stop]``
for GPT-5), ``params`` (extra keyword arguments, e.g. ``reasoning_effort``), ``extra_body``,
``extra_output_tokens`` (added to ``max_new_tokens``: room for hidden reasoning tokens),
``system_role`` (``developer`` for models that want it).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from mcu_exp.llm.contract import GenerationRequest
from mcu_exp.llm.providers._batch import BatchState, ItemOutcome
from mcu_exp.llm.providers._batch_api import LOOKUP_MAX, LOOKUP_SLACK_S, TAG_FIELD
from mcu_exp.llm.providers._common import (
    Secret,
    drop,
    json_body,
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
from mcu_exp.llm.providers._urls import check_query, split_query

if TYPE_CHECKING:
    from mcu_exp.config import ModelConfig

DEFAULT_KEY_ENVS = ("OPENAI_API_KEY",)
MAX_N = 128  # the API's ceiling on `n`
MAX_STOPS = 4  # the API takes at most four stop strings; the rest are applied here

BATCH_ENDPOINT = "/v1/chat/completions"
_BATCH_ENDED = {"completed", "failed", "expired", "cancelled"}
_FINISH = {"stop": "stop", "length": "length", "content_filter": "filtered"}  # tool_calls...: error


def output_tokens(request: GenerationRequest, cfg: ModelConfig) -> int:
    """The per-sample output ceiling sent to the API."""
    return request.max_new_tokens + int(quirks(cfg).get("extra_output_tokens", 0))


def build_chat_params(request: GenerationRequest, cfg: ModelConfig, count: int, first: int) -> dict[str, Any]:
    """Keyword arguments for ``chat.completions.create`` asking ``count`` samples from index ``first``."""
    q = quirks(cfg)
    system, rest = split_system(request)
    messages = [{"role": q.get("system_role", "system"), "content": system}] if system else []
    messages += [{"role": m.role, "content": m.content} for m in rest]
    params: dict[str, Any] = {
        "model": str(cfg.model_id),
        "messages": messages,
        "temperature": request.temperature,
        "top_p": request.top_p,
        str(q.get("max_tokens_param", "max_tokens")): output_tokens(request, cfg),
        "seed": sample_seed(request, first),
    }
    if count > 1:
        params["n"] = count
    if request.stop:
        params["stop"] = list(request.stop)[:MAX_STOPS]
    params = merged(drop(params, q.get("drop_params", [])), q.get("params"))
    if q.get("extra_body"):
        params["extra_body"] = dict(q["extra_body"])
    return params


def parse_chat_completion(data: Mapping[str, Any], stop: Sequence[str]) -> CallResult:
    """Samples and usage from a chat completion; raises MalformedResponse when it has none."""
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise MalformedResponse("chat completion without choices")
    pairs = []
    for choice in sorted(choices, key=lambda c: int(c.get("index") or 0)):
        message = choice.get("message") or {}
        if not isinstance(message, Mapping):
            raise MalformedResponse("chat completion choice without a message")
        text, cut = truncate_at_stop(str(message.get("content") or ""), stop)
        finish = "stop" if cut else _FINISH.get(str(choice.get("finish_reason")), "error")
        pairs.append((text, finish))
    usage = data.get("usage") or {}
    prompt = int(usage.get("prompt_tokens") or 0)
    completion = int(usage.get("completion_tokens") or 0)
    return CallResult(split_usage(pairs, prompt, completion), prompt, completion)


class OpenAIProvider:
    """Chat Completions through ``openai.AsyncOpenAI`` (OpenAI or any compatible server)."""

    max_per_request = MAX_N

    def __init__(self, cfg: ModelConfig, name: str = "openai", base_url: str | None = None) -> None:
        self.sdk = require("openai", "api", name)
        self.cfg = cfg
        self.name = name
        self.base_url = base_url
        self.timeout_s = float(cfg.timeout_s)
        self.transient_types: tuple[type[BaseException], ...] = (self.sdk.APIConnectionError,)

    def open(self, secret: Secret | None) -> Any:
        base_url, query = split_query(self.base_url)
        return self.sdk.AsyncOpenAI(
            api_key=secret.reveal() if secret else "EMPTY",
            base_url=base_url,
            default_query=query or None,  # the client would append its endpoint after a query
            max_retries=0,  # retries are ours: counted, backed off, shown
            timeout=self.timeout_s,
        )

    async def close(self, client: Any) -> None:
        await client.close()

    def max_output_tokens(self, request: GenerationRequest) -> int:
        return output_tokens(request, self.cfg)

    async def call(self, client: Any, request: GenerationRequest, count: int, first: int) -> CallResult:
        params = build_chat_params(request, self.cfg, count, first)
        raw = await client.chat.completions.with_raw_response.create(**params)
        return parse_chat_completion(json_body(raw.content), request.stop)


def request_body(params: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON body the client sends for ``params`` (``extra_body`` merged in): a batch line's body."""
    extra = dict(params.get("extra_body") or {})
    return {**{k: v for k, v in params.items() if k != "extra_body"}, **extra}


class OpenAIBatchApi:
    """The Batch API through the sync ``openai.OpenAI`` client (see :mod:`._batch`)."""

    name = "openai"
    max_items = 50_000  # the API's limits on one batch's input file
    max_bytes = 200_000_000
    max_per_request = MAX_N

    def __init__(self, cfg: ModelConfig) -> None:
        self.sdk = require("openai", "api", self.name)
        self.cfg = cfg
        self.transient_types: tuple[type[BaseException], ...] = (self.sdk.APIConnectionError,)

    def open(self, secret: Secret | None) -> Any:
        base_url, query = split_query(self.cfg.base_url)
        return self.sdk.OpenAI(
            api_key=secret.reveal() if secret else "EMPTY",
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
        body = request_body(build_chat_params(request, self.cfg, count, first))
        return {"custom_id": custom_id, "method": "POST", "url": BATCH_ENDPOINT, "body": body}

    def submit(self, client: Any, lines: Sequence[dict[str, Any]], tag: str) -> str:
        data = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode()
        upload = client.files.create(file=("mcu-exp-batch.jsonl", data, "application/jsonl"), purpose="batch")
        batch = client.batches.create(
            input_file_id=upload.id, endpoint=BATCH_ENDPOINT, completion_window="24h", metadata={TAG_FIELD: tag}
        )
        return str(batch.id)

    def find(self, client: Any, tag: str, count: int, since: float) -> list[str]:
        """The batch whose ``metadata`` carries ``tag``, among those listed since ``since``."""
        for n, batch in enumerate(client.batches.list(limit=100)):
            if n >= LOOKUP_MAX:
                break
            if batch.created_at >= since - LOOKUP_SLACK_S and (batch.metadata or {}).get(TAG_FIELD) == tag:
                return [str(batch.id)]
        return []

    def poll(self, client: Any, batch_id: str) -> BatchState:
        batch = client.batches.retrieve(batch_id)
        status = str(batch.status)
        note = ""
        if status == "failed":
            errors = [e.message for e in ((batch.errors.data if batch.errors else None) or []) if e.message]
            note = "batch failed" + (f": {'; '.join(errors)}" if errors else "")
        elif status in ("expired", "cancelled"):
            note = f"batch {status} before answering the request"
        return BatchState(status in _BATCH_ENDED, status, note, batch)

    def results(self, client: Any, batch_id: str, state: BatchState) -> list[ItemOutcome]:
        found = []
        for file_id in (state.handle.output_file_id, state.handle.error_file_id):
            if not file_id:
                continue
            for raw in client.files.content(file_id).text.splitlines():
                if raw.strip():
                    found.append(_batch_outcome(json.loads(raw)))
        return found

    def parse(self, data: Mapping[str, Any], request: GenerationRequest, count: int) -> CallResult:
        return parse_chat_completion(data, request.stop)


def _batch_outcome(line: Mapping[str, Any]) -> ItemOutcome:
    """One line of a batch's output or error file."""
    response = line.get("response") or {}
    body = response.get("body") if isinstance(response, Mapping) else None
    error = line.get("error")
    if not error and response.get("status_code") == 200 and isinstance(body, Mapping):
        return ItemOutcome(str(line.get("custom_id")), body)
    detail = (error or {}).get("message") or (error or {}).get("code")
    if not detail and isinstance(body, Mapping):
        detail = (body.get("error") or {}).get("message")
    status = response.get("status_code") if isinstance(response, Mapping) else None
    return ItemOutcome(str(line.get("custom_id")), None, f"HTTP {status}: {detail}" if status else str(detail))


PROVIDER = remote_provider(
    "openai",
    lambda cfg: OpenAIProvider(cfg, "openai", cfg.base_url),
    key_envs=DEFAULT_KEY_ENVS,
    batch_api=OpenAIBatchApi,
    sdk=("openai",),
    check=check_query,
)
identity = PROVIDER.identity  # the model part of cache keys, without a client: backend, model id, quirks
