"""Helpers every provider shares: quirks, cache identity, API keys, lazy SDK imports, prompt shaping.

Keys come only from environment variables; :class:`Secret` keeps them out of reprs and
:func:`scrub` out of any text we log or raise.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from omegaconf import OmegaConf

from mcu_exp.llm.contract import GenerationRequest, Message, Sample
from mcu_exp.llm.providers._errors import AuthenticationFailed, MalformedResponse, MissingDependency
from mcu_exp.redact import redact_tree

if TYPE_CHECKING:
    from mcu_exp.config import ModelConfig

REDACTED = "***"


class Secret:
    """An API key that never shows itself in a repr, str or log line."""

    __slots__ = ("_value", "env_var")

    def __init__(self, value: str, env_var: str) -> None:
        self._value = value
        self.env_var = env_var

    def reveal(self) -> str:
        """The key itself, for the client constructor only."""
        return self._value

    def __repr__(self) -> str:
        return f"Secret(env_var={self.env_var!r}, value={REDACTED!r})"

    __str__ = __repr__


def scrub(text: str, secrets: Iterable[Secret | str | None]) -> str:
    """``text`` with every secret (and its first/last 12 characters, if long) replaced."""
    for s in secrets:
        value = s.reveal() if isinstance(s, Secret) else s
        if not value:
            continue
        text = text.replace(value, REDACTED)
        if len(value) >= 24:  # truncated echoes such as "sk-abc...xyz" in provider messages
            text = text.replace(value[:12], REDACTED).replace(value[-12:], REDACTED)
    return text


def quirks(cfg: ModelConfig) -> dict[str, Any]:
    """The model's provider quirks as a plain dict (also from a DictConfig)."""
    value = cfg.quirks
    if OmegaConf.is_config(value):
        return dict(OmegaConf.to_container(value, resolve=True))  # type: ignore[arg-type]
    return dict(value)


def remote_identity(cfg: ModelConfig, backend: str, with_base_url: bool = False) -> dict[str, Any]:
    """The model part of cache keys: backend, model id, quirks (they change what is sent).

    ``base_url`` only counts for self-hosted servers, where it says which weights answer; for
    the official APIs it is a proxy or test hook. Keys, timeouts and limits never count.
    """
    ident: dict[str, Any] = {"backend": backend, "model_id": str(cfg.model_id)}
    if with_base_url and cfg.base_url:
        ident["base_url"] = str(cfg.base_url)
    q = quirks(cfg)
    if q:
        ident["quirks"] = q
    return dict(redact_tree(ident))  # a password in base_url or a token in quirks never reaches a cache key


def resolve_api_key(cfg: ModelConfig, defaults: Sequence[str], provider: str) -> Secret:
    """The API key from ``cfg.api_key_env`` (or the provider's default variables).

    Raises :class:`AuthenticationFailed` naming the variable(s) to set when none holds a key.
    """
    explicit = cfg.api_key_env
    names = [explicit] if explicit else list(defaults)
    for name in names:
        value = os.environ.get(name, "").strip()
        if value:
            return Secret(value, name)
    wanted = " or ".join(names)
    raise AuthenticationFailed(
        f"{provider}: no API key; set the environment variable {wanted} "
        f"(or point model.api_key_env at the variable that holds it)"
    )


def require(module: str, extra: str, backend: str) -> ModuleType:
    """Import a provider SDK, or fail with a one-line install hint."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingDependency(
            f"backend '{backend}' needs the '{module}' package: pip install 'mcu_exp[{extra}]'"
        ) from None


def sample_seed(request: GenerationRequest, index: int) -> int:
    """A 31-bit seed for sample ``index`` of ``request``: a hash of its seed, the index and the
    messages, stable across runs (APIs take 32-bit seeds; two prompts never share a stream)."""
    messages = [[m.role, m.content] for m in request.messages]
    blob = json.dumps([request.seed, index, messages], ensure_ascii=False, separators=(",", ":"))
    return int.from_bytes(hashlib.sha256(blob.encode()).digest()[:4], "big") & 0x7FFFFFFF


def split_system(request: GenerationRequest) -> tuple[str | None, list[Message]]:
    """The system prompt (system messages joined; the proxies put it there) and the other messages."""
    system = [m.content for m in request.messages if m.role == "system"]
    rest = [m for m in request.messages if m.role != "system"]
    return ("\n\n".join(system) or None), rest


def framed_prompt(request: GenerationRequest, template: str) -> str:
    """A completion prompt in a model's instruction frame (quirk ``completion_template``).

    The frame's ``{prompt}`` receives the messages' contents joined by blank lines.
    """
    return template.format(prompt="\n\n".join(m.content for m in request.messages))


def truncate_at_stop(text: str, stops: Sequence[str]) -> tuple[str, bool]:
    """``text`` cut at the first stop string; whether it was cut (APIs cap how many they take)."""
    cut = min((i for i in (text.find(s) for s in stops if s) if i >= 0), default=-1)
    return (text[:cut], True) if cut >= 0 else (text, False)


def estimate_tokens(request: GenerationRequest) -> int:
    """A rough prompt-token count (4 characters a token) for rate limits and budget checks."""
    return sum(len(m.content) for m in request.messages) // 4 + 4 * len(request.messages) + 1


def drop(params: dict[str, Any], names: Iterable[str]) -> dict[str, Any]:
    """``params`` without the keys the model rejects (quirk ``drop_params``)."""
    names = set(names)
    return {k: v for k, v in params.items() if k not in names}


def merged(base: Mapping[str, Any], extra: Mapping[str, Any] | None) -> dict[str, Any]:
    """``base`` updated with ``extra`` (quirk ``params``: provider-specific arguments)."""
    return {**base, **(extra or {})}


def as_dict(response: Any) -> Mapping[str, Any]:
    """An SDK response object as JSON-like data (what the parsers read)."""
    if isinstance(response, Mapping):
        return response
    dump = getattr(response, "model_dump", None)
    if dump is None:
        raise MalformedResponse(f"unexpected response type {type(response).__name__}")
    return dict(dump(mode="json"))


def json_body(content: bytes) -> Mapping[str, Any]:
    """A response body read through an SDK's ``with_raw_response``, as the parsers read it:
    the provider's own JSON, skipping the SDK's typed response and its dump back to data,
    which cost about 40 % of a request's CPU at thousands of requests a minute."""
    try:
        data = json.loads(content)
    except (TypeError, ValueError) as exc:
        raise MalformedResponse(f"response body is not JSON ({type(exc).__name__})") from None
    if not isinstance(data, Mapping):
        raise MalformedResponse(f"unexpected response body of type {type(data).__name__}")
    return data


def split_usage(samples: list[tuple[str, str]], prompt_tokens: int, completion_tokens: int) -> list[Sample]:
    """Samples whose token counts sum to the call's billed usage (prompt counted once)."""
    n = len(samples)
    share, extra = divmod(completion_tokens, n) if n else (0, 0)
    return [
        Sample(text, finish, prompt_tokens if k == 0 else 0, share + (extra if k == 0 else 0))
        for k, (text, finish) in enumerate(samples)
    ]
