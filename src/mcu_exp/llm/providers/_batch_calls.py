"""Batch API calls retried while they fail transiently, and their one-line errors.

A batch backend's create, lookup, poll and result calls go through :meth:`BatchCalls.retrying`:
transient failures (connection errors, timeouts, 429, 5xx) back off and retry up to
``max_retries``; a rejected key, a rejected request or an unknown failure stops the stage with
one line naming the model and the environment variable, never the key itself.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from mcu_exp.llm.providers._batch_api import BatchApi
from mcu_exp.llm.providers._common import Secret, scrub
from mcu_exp.llm.providers._errors import AuthenticationFailed, BackendError, BadRequest, RetriesExhausted
from mcu_exp.llm.providers._retry import Failure, RetryPolicy, classify, retry_after, status_of
from mcu_exp.llm.providers._runner import Usage
from mcu_exp.redact import redact_text

log = logging.getLogger("mcu_exp.llm.providers")
T = TypeVar("T")


class BatchCalls:
    """How one batch backend calls its provider: retries counted in ``usage``, errors cleaned."""

    def __init__(
        self, api: BatchApi, model_id: str, secret: Secret | None, policy: RetryPolicy, store_path: Path, usage: Usage
    ) -> None:
        self.api = api
        self.model_id = model_id
        self._secret = secret
        self.policy = policy
        self.store_path = store_path
        self.usage = usage
        self.rng = random.Random()

    def retrying(self, call: Callable[[], T], what: str, lost: bool = False) -> T | None:
        """``call()``, retried with backoff while it fails transiently. With ``lost``, a
        rejected request (HTTP 400/404: the batch or its results are gone) gives None."""
        failures = 0
        while True:
            try:
                return call()
            except Exception as exc:  # noqa: BLE001 (classified below; unknown kinds stop the stage)
                kind = classify(exc, self.api.transient_types)
                if kind is Failure.BAD_REQUEST and lost:
                    log.warning("%s: %s: %s", self.api.name, what, self.clean(self.detail(exc)))
                    return None
                if kind in (Failure.AUTH, Failure.BAD_REQUEST, Failure.FATAL):
                    raise self.fatal(kind, exc, what) from None
                failures += 1
                if failures > self.policy.max_retries:
                    raise RetriesExhausted(
                        f"{self.api.name} model '{self.model_id}': {what} failed {failures} times "
                        f"({kind.value}; last: {self.detail(exc)}); gave up after max_retries="
                        f"{self.policy.max_retries}. Submitted batches are recorded in {self.store_path}; "
                        "rerun to resume them"
                    ) from None
                self.usage.retries += 1
                delay = self.policy.delay(failures, retry_after(exc), self.rng)
                log.info("%s: retry %d of %s in %.2fs after %s", self.api.name, failures, what, delay, self.detail(exc))
                time.sleep(delay)

    def clean(self, text: str) -> str:
        """``text`` with the key and other secrets hidden, at most 300 characters."""
        text = redact_text(scrub(text, [self._secret]))
        return text if len(text) <= 300 else text[:300] + "..."

    def detail(self, exc: BaseException) -> str:
        """An exception as one cleaned line."""
        return self.clean(f"{type(exc).__name__}: {exc}")

    def fatal(self, kind: Failure, exc: BaseException, what: str) -> BackendError:
        """The one-line error of a call that no retry can fix."""
        where = f"{self.api.name} model '{self.model_id}' (batch)"
        status = status_of(exc)
        if kind is Failure.AUTH:
            var = self._secret.env_var if self._secret else "(no key configured)"
            return AuthenticationFailed(
                f"{where}: the provider rejected the API key (HTTP {status}) while "
                f"{what}; check the key in environment variable {var}. {self.detail(exc)}"
            )
        if kind is Failure.BAD_REQUEST:
            return BadRequest(
                f"{where}: the provider rejected {what} (HTTP {status}); check model_id, quirks "
                f"and that the model offers batches. {self.detail(exc)}"
            )
        return BackendError(f"{where}: unexpected failure while {what}: {self.detail(exc)}")
