"""Client-side limits: token buckets for requests/tokens per minute, and budget caps.

Both live inside the backend's event loop (one thread), so they need no locks.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mcu_exp.llm.providers._errors import BackendError

if TYPE_CHECKING:
    from mcu_exp.config import ModelConfig


class TokenBucket:
    """Refills at ``per_minute / 60`` a second up to one second's worth (at least 1).

    A request larger than the bucket waits for a full bucket and leaves it in debt, so long
    prompts are throttled rather than refused.
    """

    def __init__(self, per_minute: float) -> None:
        if per_minute <= 0:
            raise ValueError(f"rate limit must be positive per minute, got {per_minute}")
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, self.rate)
        self.level = self.capacity
        self.stamp = time.monotonic()

    def _refill(self) -> None:
        now = time.monotonic()
        self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
        self.stamp = now

    async def acquire(self, amount: float = 1.0) -> None:
        """Wait until ``amount`` may be spent, then spend it."""
        while True:
            self._refill()
            need = min(amount, self.capacity)
            if self.level >= need:
                self.level -= amount
                return
            await asyncio.sleep((need - self.level) / self.rate)

    def adjust(self, delta: float) -> None:
        """Charge (positive) or refund (negative) the difference once a true count is known."""
        self._refill()
        self.level = min(self.capacity, self.level - delta)


class RateLimiter:
    """Requests-per-minute and tokens-per-minute buckets for one backend."""

    def __init__(self, requests_per_minute: float | None, tokens_per_minute: float | None) -> None:
        self.requests = TokenBucket(requests_per_minute) if requests_per_minute else None
        self.tokens = TokenBucket(tokens_per_minute) if tokens_per_minute else None

    async def acquire(self, estimated_tokens: int) -> None:
        """Wait for one request slot and ``estimated_tokens`` tokens."""
        if self.requests:
            await self.requests.acquire(1.0)
        if self.tokens:
            await self.tokens.acquire(float(estimated_tokens))

    def settle(self, estimated_tokens: int, actual_tokens: int) -> None:
        """Correct the token bucket with the count the provider reported."""
        if self.tokens and actual_tokens:
            self.tokens.adjust(float(actual_tokens - estimated_tokens))


@dataclass
class Budget:
    """Request and cost caps, checked before each call against spent plus in-flight worst case.

    A request whose worst case does not fit waits (:meth:`admit`) until the requests in flight
    have settled, their actual cost replacing their reservation, and is refused only when it
    still does not fit with nothing in flight: the cap is never exceeded, and never stops a
    stage early because of reservations that turned out larger than the bills.
    """

    max_requests: int | None = None
    max_cost_usd: float | None = None
    price_input_per_mtok: float | None = None
    price_output_per_mtok: float | None = None
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    reserved_usd: float = field(default=0.0, repr=False)
    in_flight: int = field(default=0, repr=False)  # reservations not yet settled or released
    reason: str | None = None  # why the cap stopped the stage
    _waiters: list[asyncio.Future[None]] = field(default_factory=list, repr=False)

    @classmethod
    def from_config(cls, cfg: ModelConfig) -> Budget:
        """The caps and prices of a model config; a cost cap without prices is a config error."""
        budget = cls(
            max_requests=cfg.max_requests,
            max_cost_usd=cfg.max_cost_usd,
            price_input_per_mtok=cfg.price_input_per_mtok,
            price_output_per_mtok=cfg.price_output_per_mtok,
        )
        if budget.max_cost_usd is not None and not budget.priced:
            raise BackendError(f"model '{cfg.name}': max_cost_usd needs price_input_per_mtok and price_output_per_mtok")
        return budget

    @property
    def priced(self) -> bool:
        return self.price_input_per_mtok is not None and self.price_output_per_mtok is not None

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        """USD for one call's token usage (0 when no prices are configured)."""
        if not self.priced:
            return 0.0
        return (
            prompt_tokens * float(self.price_input_per_mtok or 0.0)
            + completion_tokens * float(self.price_output_per_mtok or 0.0)
        ) / 1e6

    def reserve(self, prompt_tokens: int, max_completion_tokens: int) -> float | None:
        """Count one request and hold its worst-case cost; None when a cap forbids it now."""
        if self.max_requests is not None and self.requests >= self.max_requests:
            self.reason = f"max_requests={self.max_requests} reached"
            return None
        worst = self.cost(prompt_tokens, max_completion_tokens)
        if self.max_cost_usd is not None and (self.cost_usd + self.reserved_usd + worst > self.max_cost_usd):
            self.reason = f"max_cost_usd={self.max_cost_usd} reached (the next request could cost up to ${worst:.4f})"
            return None
        self.requests += 1
        self.in_flight += 1
        self.reserved_usd += worst
        return worst

    async def admit(self, prompt_tokens: int, max_completion_tokens: int) -> float | None:
        """:meth:`reserve`, waiting for requests in flight to settle while the cost cap refuses.

        None only when a cap forbids the request with nothing in flight (cost), or at once when
        ``max_requests`` is used up (settling cannot give a request back).
        """
        while True:
            reserved = self.reserve(prompt_tokens, max_completion_tokens)
            if reserved is not None:
                return reserved
            if self.in_flight == 0 or (self.max_requests is not None and self.requests >= self.max_requests):
                return None
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            await waiter

    def settle(self, reserved: float, prompt_tokens: int, completion_tokens: int) -> float:
        """Release a reservation and book what the call really used; returns its cost."""
        cost = self.cost(prompt_tokens, completion_tokens)
        self.prompt_tokens += prompt_tokens
        self.completion_tokens += completion_tokens
        self.cost_usd += cost
        self._drop(reserved)
        return cost

    def release(self, reserved: float) -> None:
        """Give back a reservation whose request was never sent (the stage is stopping)."""
        self.requests = max(0, self.requests - 1)
        self._drop(reserved)

    def _drop(self, reserved: float) -> None:
        self.reserved_usd = max(0.0, self.reserved_usd - reserved)
        self.in_flight = max(0, self.in_flight - 1)
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)
