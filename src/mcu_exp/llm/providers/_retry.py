"""Which failures to retry, and how long to wait: exponential backoff with full jitter.

Rate limits (429), server errors (5xx), timeouts, dropped connections and malformed 200
bodies are transient; authentication (401/403) and bad requests (400/404/413/422) are not.
A provider's ``Retry-After`` (or ``retry-after-ms``) wins over the computed backoff.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import time
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

from mcu_exp.llm.providers._errors import MalformedResponse

if TYPE_CHECKING:
    from mcu_exp.config import ModelConfig


class Failure(Enum):
    """How a failed call is handled."""

    RATE_LIMIT = "rate_limit"  # retry, honouring Retry-After
    TRANSIENT = "transient"  # retry with backoff
    MALFORMED = "malformed"  # a 200 we could not read: retry, then give up with that message
    AUTH = "auth"  # stop at once
    BAD_REQUEST = "bad_request"  # stop at once
    FATAL = "fatal"  # anything unknown: stop at once


_BAD_REQUEST = {400, 404, 405, 413, 422}
_AUTH = {401, 403}
_TRANSIENT_4XX = {408, 409, 425}


@dataclass(frozen=True)
class RetryPolicy:
    """At most ``max_retries`` retries per request, waiting ``initial_s * 2**k`` (jittered).

    Built from a model config by :meth:`from_config`; the defaults live in ``ModelConfig``.
    """

    max_retries: int
    initial_s: float
    max_s: float
    max_retry_after_s: float = 300.0  # a longer Retry-After is capped, not obeyed blindly

    @classmethod
    def from_config(cls, cfg: ModelConfig) -> RetryPolicy:
        """The policy of a model config (``max_retries``, ``backoff_initial_s``, ``backoff_max_s``)."""
        return cls(
            max_retries=int(cfg.max_retries),
            initial_s=float(cfg.backoff_initial_s),
            max_s=float(cfg.backoff_max_s),
        )

    def delay(self, retry: int, retry_after: float | None, rng: random.Random) -> float:
        """Seconds to wait before retry number ``retry`` (1-based)."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_retry_after_s)
        return rng.uniform(0.0, min(self.max_s, self.initial_s * 2 ** (retry - 1)))


def status_of(exc: BaseException) -> int | None:
    """The HTTP status an SDK exception carries (OpenAI/Anthropic ``status_code``, genai ``code``)."""
    for attr in ("status_code", "code", "status"):
        value = getattr(exc, attr, None)
        if isinstance(value, int) and 100 <= value <= 599:
            return value
    return None


def classify(exc: BaseException, transient_types: tuple[type[BaseException], ...] = ()) -> Failure:
    """Sort an exception from one provider call into a :class:`Failure` kind."""
    status = status_of(exc)
    if status is not None:
        if status == 429:
            return Failure.RATE_LIMIT
        if status >= 500 or status in _TRANSIENT_4XX:
            return Failure.TRANSIENT
        if status in _AUTH:
            return Failure.AUTH
        if status in _BAD_REQUEST or 400 <= status < 500:
            return Failure.BAD_REQUEST
        return Failure.FATAL
    if isinstance(exc, (MalformedResponse, json.JSONDecodeError)):
        return Failure.MALFORMED
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError, ConnectionError)):
        return Failure.TRANSIENT
    if transient_types and isinstance(exc, transient_types):
        return Failure.TRANSIENT
    return Failure.FATAL


def _header(headers: Any, name: str) -> str | None:
    if headers is None:
        return None
    try:
        items = headers.items()
    except AttributeError:
        return None
    for key, value in items:
        if str(key).lower() == name:
            return str(value)
    return None


def retry_after(exc: BaseException) -> float | None:
    """Seconds the server asked us to wait (``retry-after-ms``, then ``Retry-After``), if any."""
    headers = getattr(getattr(exc, "response", None), "headers", None)
    ms = _header(headers, "retry-after-ms")
    if ms is not None:
        try:
            return float(ms) / 1000.0
        except ValueError:
            pass
    value = _header(headers, "retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value).timestamp()
        except (TypeError, ValueError):
            return None
        return max(0.0, when - time.time())
