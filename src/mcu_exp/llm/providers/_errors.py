"""Errors a backend raises to stop a generation stage, each with a message that says what to do.

Messages never carry an API key: they are built from scrubbed provider messages.
"""

from __future__ import annotations


class BackendError(RuntimeError):
    """A backend could not produce the requested samples."""


class MissingDependency(BackendError, ImportError):
    """The backend's client library is not installed."""


class AuthenticationFailed(BackendError):
    """The provider rejected the key (HTTP 401/403), or no key was set."""


class BadRequest(BackendError):
    """The provider rejected the request itself (HTTP 400/404/413/422): retrying cannot help."""


class RetriesExhausted(BackendError):
    """A request kept failing transiently (429, 5xx, timeout, malformed response) past the limit."""


class MalformedResponse(BackendError):
    """A 200 response whose body could not be read as a completion (retried as transient)."""


class BudgetExceeded(BackendError):
    """A budget cap (requests or cost) was reached; every sample completed before it was kept."""
