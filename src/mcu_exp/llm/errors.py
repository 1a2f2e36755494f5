"""Errors raised by model backends.

A :class:`BackendError` (a missing package, a wrong path, a rejected request) stops the job
with a one-line message saying what to install or fix. Which remote failures are worth a
retry is decided by the remote runner itself (:mod:`mcu_exp.llm.providers._retry`), from
the provider's HTTP status or exception type.
"""

from __future__ import annotations

from mcu_exp.store.faults import StoreFault


class BackendError(RuntimeError):
    """A backend cannot serve the request; the message says what to install or fix."""


class UnknownBackendError(BackendError, ValueError):
    """``model.backend`` names no known backend."""


class GenerationFailed(BackendError, ValueError):
    """Too many samples of a stage came back failed (errors, filtered or empty): nothing is scored."""


class CacheCorrupt(StoreFault, BackendError):
    """The generation cache cannot be used (not a readable SQLite database, another layout, a
    full disk, a failed server): ``fact`` and ``advice`` as :class:`StoreFault` has them."""
