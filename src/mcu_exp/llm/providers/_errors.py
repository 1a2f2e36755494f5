"""The errors remote backends raise, refining :mod:`mcu_exp.llm.errors`.

Each message says what to do, and none carries an API key: provider texts are scrubbed.
"""

from __future__ import annotations

from mcu_exp.llm.errors import BackendError

__all__ = [
    "AuthenticationFailed",
    "BackendError",
    "BadRequest",
    "BudgetExceeded",
    "MalformedResponse",
    "MissingDependency",
    "RetriesExhausted",
]


class MissingDependency(BackendError, ImportError):
    """The backend's client library is not installed."""


class AuthenticationFailed(BackendError):
    """The provider rejected the key (HTTP 401/403), or no key was set."""


class BadRequest(BackendError):
    """The provider rejected the request itself (HTTP 400/404/413/422): retrying cannot help."""


class RetriesExhausted(BackendError):
    """A request kept failing transiently (429, 5xx, timeout, malformed response) past the limit."""


class MalformedResponse(BackendError):
    """A 200 response whose body could not be read as a completion (retried, then reported)."""


class BudgetExceeded(BackendError):
    """A budget cap (requests or cost) was reached; every sample completed before it was kept."""
