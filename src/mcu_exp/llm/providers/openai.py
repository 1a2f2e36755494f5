"""OpenAI Chat Completions: ``n`` samples per request, official ``openai`` client.

Quirks (``model.quirks``): ``max_tokens_param`` (``max_completion_tokens`` for reasoning
models), ``drop_params`` (arguments the model rejects, e.g. ``[temperature, top_p, stop]``
for GPT-5), ``params`` (extra keyword arguments, e.g. ``reasoning_effort``), ``extra_body``,
``extra_output_tokens`` (added to ``max_new_tokens``: room for hidden reasoning tokens),
``system_role`` (``developer`` for models that want it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from mcu_exp.llm.contract import GenerationRequest
from mcu_exp.llm.providers._common import (
    Secret,
    as_dict,
    drop,
    merged,
    quirks,
    remote_identity,
    require,
    resolve_api_key,
    sample_seed,
    split_system,
    split_usage,
    truncate_at_stop,
)
from mcu_exp.llm.providers._errors import MalformedResponse
from mcu_exp.llm.providers._runner import CallResult, RemoteBackend

if TYPE_CHECKING:
    from mcu_exp.config import ModelConfig

DEFAULT_KEY_ENVS = ("OPENAI_API_KEY",)
MAX_N = 128  # the API's ceiling on `n`
MAX_STOPS = 4  # the API takes at most four stop strings; the rest are applied here

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
        return self.sdk.AsyncOpenAI(
            api_key=secret.reveal() if secret else "EMPTY",
            base_url=self.base_url,
            max_retries=0,  # retries are ours: counted, backed off, shown
            timeout=self.timeout_s,
        )

    async def close(self, client: Any) -> None:
        await client.close()

    def max_output_tokens(self, request: GenerationRequest) -> int:
        return output_tokens(request, self.cfg)

    async def call(self, client: Any, request: GenerationRequest, count: int, first: int) -> CallResult:
        params = build_chat_params(request, self.cfg, count, first)
        response = await client.chat.completions.create(**params)
        return parse_chat_completion(as_dict(response), request.stop)


def identity(cfg: ModelConfig) -> dict[str, Any]:
    """The model part of cache keys, without a client: backend, model id, quirks."""
    return remote_identity(cfg, "openai")


def create_backend(cfg: ModelConfig, *, progress: bool = True) -> RemoteBackend:
    """The ``openai`` backend: key from ``api_key_env`` (default OPENAI_API_KEY)."""
    provider = OpenAIProvider(cfg, "openai", cfg.base_url)
    secret = resolve_api_key(cfg, DEFAULT_KEY_ENVS, "openai")
    return RemoteBackend(cfg, provider, secret, identity(cfg), progress=progress)
