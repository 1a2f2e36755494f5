"""Errors raised by model backends.

Retry logic needs to tell a fault worth retrying from one that is not, so backends classify
what goes wrong: :class:`RateLimitError` and :class:`TransientBackendError` may be retried;
any other :class:`BackendError` (a missing package, a wrong path, a rejected request) stops
the job with a one-line message saying what to install or fix.
"""

from __future__ import annotations


class BackendError(RuntimeError):
    """A backend cannot serve the request; the message says what to install or fix."""


class UnknownBackendError(BackendError, ValueError):
    """``model.backend`` names no known backend."""


class TransientBackendError(BackendError):
    """A temporary failure (timeout, connection reset, server error): retrying may succeed."""


class RateLimitError(TransientBackendError):
    """The provider asked us to slow down; ``retry_after`` is its hint in seconds, if any."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after
