"""Retry classification and backoff, token buckets, budget caps, and key handling."""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import re
import sqlite3
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from mcu_exp.config import ModelConfig
from mcu_exp.llm import CachedGenerator, GenerationRequest, Message
from mcu_exp.llm.errors import BackendError
from mcu_exp.llm.providers._common import Secret, estimate_tokens, resolve_api_key, scrub
from mcu_exp.llm.providers._errors import AuthenticationFailed, BudgetExceeded, MalformedResponse
from mcu_exp.llm.providers._limits import Budget, TokenBucket
from mcu_exp.llm.providers._retry import Failure, RetryPolicy, classify, retry_after


class StatusError(Exception):
    def __init__(self, status: int, headers: dict[str, str] | None = None) -> None:
        super().__init__(f"HTTP {status}")
        self.status_code = status
        self.response = SimpleNamespace(headers=headers or {})


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (StatusError(429), Failure.RATE_LIMIT),
        (StatusError(500), Failure.TRANSIENT),
        (StatusError(503), Failure.TRANSIENT),
        (StatusError(529), Failure.TRANSIENT),
        (StatusError(408), Failure.TRANSIENT),
        (StatusError(401), Failure.AUTH),
        (StatusError(403), Failure.AUTH),
        (StatusError(400), Failure.BAD_REQUEST),
        (StatusError(404), Failure.BAD_REQUEST),
        (StatusError(422), Failure.BAD_REQUEST),
        (TimeoutError(), Failure.TRANSIENT),
        (ConnectionResetError(), Failure.TRANSIENT),
        (MalformedResponse("x"), Failure.MALFORMED),
        (json.JSONDecodeError("x", "{", 1), Failure.MALFORMED),
        (TypeError("bug"), Failure.FATAL),
    ],
)
def test_classify(exc: BaseException, kind: Failure) -> None:
    assert classify(exc) is kind


def test_genai_style_code_attribute_is_read() -> None:
    exc = Exception("429 RESOURCE_EXHAUSTED")
    exc.code = 429  # type: ignore[attr-defined]
    assert classify(exc) is Failure.RATE_LIMIT


def test_retry_after_headers() -> None:
    assert retry_after(StatusError(429, {"Retry-After": "7"})) == 7.0
    assert retry_after(StatusError(429, {"retry-after-ms": "250", "retry-after": "9"})) == 0.25
    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 < (retry_after(StatusError(503, {"Retry-After": later})) or 0) <= 30
    assert retry_after(StatusError(429, {"Retry-After": "soon"})) is None
    assert retry_after(StatusError(500)) is None


def test_backoff_grows_exponentially_with_jitter_and_caps() -> None:
    policy = RetryPolicy(max_retries=8, initial_s=1.0, max_s=10.0)
    rng = random.Random(0)
    for retry in range(1, 9):
        ceiling = min(10.0, 2 ** (retry - 1))
        delays = [policy.delay(retry, None, rng) for _ in range(200)]
        assert all(0 <= d <= ceiling for d in delays) and max(delays) > 0.8 * ceiling
    assert policy.delay(3, 42.0, rng) == 42.0
    assert policy.delay(1, 10_000.0, rng) == policy.max_retry_after_s


def test_policy_comes_from_the_model_config_and_its_schema_defaults() -> None:
    assert RetryPolicy.from_config(ModelConfig(name="m", backend="openai", model_id="x", max_retries=3)) == (
        RetryPolicy(max_retries=3, initial_s=1.0, max_s=60.0)
    )
    fast = ModelConfig(name="m", backend="openai", model_id="x", backoff_initial_s=0.01, backoff_max_s=0.02)
    assert RetryPolicy.from_config(fast) == RetryPolicy(max_retries=6, initial_s=0.01, max_s=0.02)


def test_token_bucket_paces_and_lets_large_requests_through_in_debt() -> None:
    async def scenario() -> tuple[float, float]:
        bucket = TokenBucket(per_minute=60_000)  # 1000 a second, holds one second's worth
        start = time.monotonic()
        await bucket.acquire(1000)  # a full bucket: immediate
        burst = time.monotonic() - start
        await bucket.acquire(1500)  # larger than the bucket: waits for a full one, then owes 500
        await bucket.acquire(1)
        return burst, time.monotonic() - start

    burst, total = asyncio.run(scenario())
    assert burst < 0.1
    assert 1.4 <= total < 2.5  # refill 1000 (1 s) + repay 500 (0.5 s)


def test_budget_reserves_worst_case_and_books_actual_cost() -> None:
    budget = Budget(max_cost_usd=1.0, price_input_per_mtok=100_000.0, price_output_per_mtok=200_000.0)
    first = budget.reserve(prompt_tokens=2, max_completion_tokens=2)  # 0.2 + 0.4
    assert first == pytest.approx(0.6)
    assert budget.reserve(2, 2) is None and "max_cost_usd=1.0" in (budget.reason or "")  # 0.6 + 0.6 > 1
    assert budget.settle(first, 2, 1) == pytest.approx(0.4)
    assert budget.reserve(2, 2) is not None  # 0.4 spent + 0.6 worst case fits
    counted = Budget(max_requests=1)
    assert counted.reserve(10, 10) == 0.0 and counted.reserve(10, 10) is None


def test_budget_waits_for_requests_in_flight_before_refusing() -> None:
    async def scenario() -> tuple[float | None, float | None]:
        budget = Budget(max_cost_usd=1.0, price_input_per_mtok=100_000.0, price_output_per_mtok=200_000.0)
        first = budget.reserve(2, 2)  # 0.6 held
        assert first is not None
        loop = asyncio.get_running_loop()
        loop.call_later(0.05, budget.settle, first, 2, 1)  # really costs 0.4
        second = await budget.admit(2, 2)  # 0.6 + 0.6 > 1 now, but 0.4 + 0.6 fits once settled
        assert second is not None
        budget.settle(second, 2, 1)
        return second, await budget.admit(2, 2)  # 0.8 + 0.6 > 1 with nothing in flight: refused

    second, third = asyncio.run(scenario())
    assert second == pytest.approx(0.6) and third is None


PRICES = {"price_input_per_mtok": 1000.0, "price_output_per_mtok": 10_000.0}


def _prompts(count: int) -> list[GenerationRequest]:
    return [GenerationRequest(messages=(Message("user", f"prompt {i}"),), n=1, max_new_tokens=16) for i in range(count)]


def _capped_run(remote: Any, cache_dir: Path, **caps: Any) -> tuple[str, Any]:
    """Generate 24 one-sample requests at concurrency 8 until a cap stops them: (message, backend)."""
    # A generous timeout: a retried request (a 0.5 s timeout on a loaded machine) would be one
    # more request than the cap, which is what these tests count.
    cfg = remote.cfg("openai", max_concurrency=8, n_per_request=1, timeout_s=30.0, **PRICES, **caps)
    backend = remote.backend(cfg)
    remote.server.push(*[remote.action(delay_s=0.05)] * 24)  # eight requests really in flight together
    gen = CachedGenerator(cfg, cache_dir, progress=False, backend=backend)
    with pytest.raises(BudgetExceeded) as info:
        gen.generate(_prompts(24))
    gen.close()
    message = str(info.value)
    assert isinstance(info.value, BackendError)  # the CLI prints it as one line, no traceback
    assert "\n" not in message and "raise the cap and rerun" in message
    return message, backend


def _cached(cache_dir: Path) -> int:
    with sqlite3.connect(cache_dir / "generations.sqlite") as conn:
        return int(conn.execute("SELECT COUNT(*) FROM samples").fetchone()[0])


def _kept(message: str) -> int:
    found = re.search(r"(\d+) samples completed and kept", message)
    assert found, message
    return int(found.group(1))


def test_request_cap_at_concurrency_8_sends_caches_and_reports_exactly_the_cap(remote: Any, tmp_path: Path) -> None:
    message, _ = _capped_run(remote, tmp_path, max_requests=10)
    assert "max_requests=10" in message
    assert len(remote.server.log) == 10 and _cached(tmp_path) == 10 and _kept(message) == 10


def test_cost_cap_at_concurrency_8_spends_up_to_the_cap_and_reports_the_truth(remote: Any, tmp_path: Path) -> None:
    probe = Budget(**PRICES)
    actual = probe.cost(10, 5)  # the fake server's usage for one sample
    worst = probe.cost(estimate_tokens(_prompts(1)[0]), 16)  # prompt estimate + max_new_tokens
    assert worst > 2 * actual
    k = 10
    cap = (k - 1) * actual + worst + actual / 2  # the k-th request fits, the (k+1)-th cannot
    message, backend = _capped_run(remote, tmp_path, max_cost_usd=cap)
    spent = re.search(r"spent \$(\d+\.\d+)", message)
    assert spent, message
    assert len(remote.server.log) == k
    assert backend.usage()["cost_usd"] == pytest.approx(k * actual) and k * actual <= cap
    assert float(spent.group(1)) == pytest.approx(k * actual, abs=1e-4)
    assert _kept(message) == _cached(tmp_path) == k


def test_cost_cap_without_prices_is_a_config_error() -> None:
    with pytest.raises(BackendError, match="max_cost_usd needs price_input_per_mtok"):
        Budget.from_config(ModelConfig(name="m", backend="openai", model_id="x", max_cost_usd=5.0))


def test_secret_never_shows_itself() -> None:
    key = "sk-abcdefghijklmnopqrstuvwxyz0123456789"
    secret = Secret(key, "OPENAI_API_KEY")
    assert key not in repr(secret) and key not in str(secret) and key not in f"{secret}"
    assert secret.reveal() == key
    text = f"bad key {key}; also {key[:12]}... and ...{key[-12:]}"
    assert scrub(text, [secret]) == "bad key ***; also ***... and ...***"


def test_api_key_comes_from_the_named_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_KEY", "  k-123  ")
    cfg: Any = ModelConfig(name="m", backend="openai", model_id="x", api_key_env="MY_KEY")
    assert resolve_api_key(cfg, ("OPENAI_API_KEY",), "openai").reveal() == "k-123"
    monkeypatch.delenv("MY_KEY")
    with pytest.raises(AuthenticationFailed, match="set the environment variable MY_KEY"):
        resolve_api_key(cfg, ("OPENAI_API_KEY",), "openai")
