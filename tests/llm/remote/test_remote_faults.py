"""The real OpenAI, Anthropic and Gemini clients against a fake server: samples and faults."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from mcu_exp.llm.contract import GenerationRequest, Message, SampleJob
from mcu_exp.llm.providers._errors import AuthenticationFailed, BadRequest, BudgetExceeded, RetriesExhausted

PROVIDERS = ("openai", "anthropic", "google", "openai_compatible")


def request(prompt: str = "explain this method", n: int = 1, **kw: Any) -> GenerationRequest:
    kw.setdefault("max_new_tokens", 16)
    return GenerationRequest(messages=(Message("system", "be brief"), Message("user", prompt)), n=n, **kw)


def jobs_for(*requests: GenerationRequest) -> list[SampleJob]:
    return [SampleJob(r, tuple(range(r.n))) for r in requests]


def run(backend: Any, jobs: list[SampleJob]) -> list[tuple[int, int, Any]]:
    return list(backend.stream(jobs))


@pytest.mark.parametrize("provider", PROVIDERS)
def test_n_samples_arrive_once_each_in_as_few_requests_as_the_api_allows(remote: Any, provider: str) -> None:
    cfg = remote.cfg(provider, n_per_request=4)
    backend = remote.backend(cfg)
    out = run(backend, jobs_for(request("first", n=6), request("second", n=2)))
    assert sorted((pos, i) for pos, i, _ in out) == [(0, k) for k in range(6)] + [(1, 0), (1, 1)]
    assert all(s.finish_reason == "stop" and s.text.startswith("answer to [") for _, _, s in out)
    assert {s.text.split("[")[1].split("]")[0] for p, _, s in out if p == 1} == {"second"}
    per_request = 1 if provider == "anthropic" else 4
    expected_requests = -(-6 // per_request) + -(-2 // per_request)
    assert len(remote.server.log) == expected_requests
    # Token usage sums to what the server billed (10 prompt tokens per request).
    assert sum(s.prompt_tokens for _, _, s in out) == 10 * expected_requests


@pytest.mark.parametrize("provider", PROVIDERS)
def test_429_with_retry_after_is_honoured_then_succeeds(remote: Any, provider: str) -> None:
    remote.server.push(remote.action(429, remote.error(429, "slow down"), {"Retry-After": "1"}))
    backend = remote.backend(remote.cfg(provider))
    start = time.monotonic()
    out = run(backend, jobs_for(request()))
    assert len(out) == 1 and out[0][2].finish_reason == "stop"
    assert time.monotonic() - start >= 0.9  # the backoff alone would be 0.02 s
    assert backend.usage()["retries"] == 1 and len(remote.server.log) == 2


@pytest.mark.parametrize("provider", PROVIDERS)
def test_server_errors_past_the_retry_limit_stop_with_a_clear_error(remote: Any, provider: str) -> None:
    cfg = remote.cfg(provider, max_retries=2)
    remote.server.push(*[remote.action(500, remote.error(500, "boom"))] * 3)
    backend = remote.backend(cfg)
    with pytest.raises(RetriesExhausted, match=r"failed 3 times .*max_retries=2"):
        run(backend, jobs_for(request()))
    assert len(remote.server.log) == 3 and not remote.server.answered()


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_timeout_is_retried(remote: Any, provider: str) -> None:
    remote.server.push(remote.action(delay_s=4.0))
    backend = remote.backend(remote.cfg(provider, timeout_s=1.0))
    start = time.monotonic()
    out = run(backend, jobs_for(request()))
    # a loaded machine may time out the prompt answer too: at least the slow one was retried
    assert len(out) == 1 and backend.usage()["retries"] >= 1
    assert time.monotonic() - start < 3.5  # the client gave up before the slow answer came


@pytest.mark.parametrize("provider", PROVIDERS)
def test_malformed_json_is_retried_then_reported(remote: Any, provider: str) -> None:
    remote.server.push(remote.action(body=b"{not json"), remote.action(body={"unexpected": 1}))
    backend = remote.backend(remote.cfg(provider, max_retries=3))
    out = run(backend, jobs_for(request()))
    assert len(out) == 1 and backend.usage()["retries"] == 2
    remote.server.push(*[remote.action(body=b"<html>oops")] * 3)
    with pytest.raises(RetriesExhausted, match="malformed"):
        run(remote.backend(remote.cfg(provider, max_retries=2)), jobs_for(request()))


@pytest.mark.parametrize("provider", PROVIDERS)
def test_401_stops_at_once_and_names_the_key_variable(remote: Any, provider: str) -> None:
    remote.server.push(*[remote.action(401, remote.error(401, "invalid key {KEY}"))] * 8)
    cfg = remote.cfg(provider, max_concurrency=2)
    with pytest.raises(AuthenticationFailed) as info:
        run(remote.backend(cfg), jobs_for(*(request(f"p{i}") for i in range(6))))
    var = {
        "openai": "OPENAI_API_KEY",
        "anthropic": "ANTHROPIC_API_KEY",
        "google": "GEMINI_API_KEY",
        "openai_compatible": "FAKE_API_KEY",
    }[provider]
    assert var in str(info.value) and "401" in str(info.value)
    assert remote.key not in str(info.value) and "invalid key ***" in str(info.value)
    assert len(remote.server.log) <= 2  # no retries; the second worker's request at most


@pytest.mark.parametrize("status", [400, 404, 422])
def test_bad_requests_are_not_retried(remote: Any, status: int) -> None:
    remote.server.push(remote.action(status, remote.error(status, "no such parameter")))
    with pytest.raises(BadRequest, match=f"HTTP {status}.*n_per_request=1"):
        run(remote.backend(remote.cfg("openai", n_per_request=4)), jobs_for(request(n=4)))
    assert len(remote.server.log) == 1


def test_missing_key_names_the_variable(remote: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEMINI_API_KEY")
    with pytest.raises(AuthenticationFailed, match="GEMINI_API_KEY or GOOGLE_API_KEY"):
        remote.backend(remote.cfg("google"))


def test_request_budget_stops_cleanly_after_yielding_what_was_done(remote: Any) -> None:
    backend = remote.backend(remote.cfg("openai", max_requests=2, max_concurrency=1))
    got: list[Any] = []
    with pytest.raises(BudgetExceeded, match="max_requests=2"):
        for item in backend.stream(jobs_for(*(request(f"p{i}") for i in range(4)))):
            got.append(item)
    assert len(got) == 2 and len(remote.server.log) == 2


def test_cost_budget_never_overspends(remote: Any) -> None:
    cfg = remote.cfg(
        "anthropic", max_cost_usd=0.05, price_input_per_mtok=1000.0, price_output_per_mtok=1000.0, max_concurrency=1
    )
    backend = remote.backend(cfg)
    got: list[Any] = []
    with pytest.raises(BudgetExceeded, match="max_cost_usd=0.05"):
        for item in backend.stream(jobs_for(*(request(f"p{i}") for i in range(10)))):
            got.append(item)
    usage = backend.usage()
    assert 1 <= len(got) < 10 and usage["cost_usd"] <= 0.05
    assert usage["cost_usd"] == pytest.approx(len(got) * 15 * 1000.0 / 1e6)  # 10 + 5 tokens each


def test_requests_per_minute_paces_requests(remote: Any) -> None:
    backend = remote.backend(remote.cfg("openai", requests_per_minute=240))  # 4 a second, burst 4
    start = time.monotonic()
    out = run(backend, jobs_for(*(request(f"p{i}") for i in range(8))))
    assert len(out) == 8 and time.monotonic() - start >= 0.9


def test_retry_counts_show_in_the_progress_bar(remote: Any, capsys: pytest.CaptureFixture[str]) -> None:
    remote.server.push(remote.action(503, remote.error(503, "overloaded")))
    run(remote.backend(remote.cfg("openai"), progress=True), jobs_for(request()))
    assert "retries=1" in capsys.readouterr().err


def test_closing_the_stream_early_stops_the_worker_thread(remote: Any) -> None:
    remote.server.push(remote.action(), *[remote.action(delay_s=2.0)] * 3)
    stream = remote.backend(remote.cfg("openai", max_concurrency=1, timeout_s=3.0)).stream(
        jobs_for(*(request(f"p{i}") for i in range(4)))
    )
    first = next(stream)
    stream.close()
    assert first[0] == 0
    deadline = time.monotonic() + 3
    while any(t.name.startswith("mcu-exp-") for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(t.name.startswith("mcu-exp-") for t in threading.enumerate())
