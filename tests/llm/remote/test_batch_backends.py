"""Batch mode per provider: the real clients create, poll and read batches on a fake server;
samples land in the cache, a crash resumes the recorded batch, failed items are retried."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from batch_server import BatchServer

from mcu_exp.llm.providers._errors import RetriesExhausted
from support.batch import batch_cfg, batch_states, cached_rows, generator, requests

PROVIDERS = ("openai", "anthropic", "google")


def per_request(provider: str) -> int:
    return 1 if provider == "anthropic" else 2  # Anthropic has no `n`: one sample per request


@pytest.mark.parametrize("provider", PROVIDERS)
def test_batch_run_fills_the_cache_and_a_rerun_sends_nothing(
    provider: str, server: BatchServer, planted_keys: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    server.polls_to_end = 2  # in progress at the first poll
    cfg = batch_cfg(provider, server)
    gen = generator(cfg, tmp_path)
    results = gen.generate(requests("A", "B", "C"))
    assert [len(r.texts) for r in results] == [2, 2, 2]
    assert all(t.startswith(f"answer to [{p}]") for r, p in zip(results, "ABC") for t in r.texts)
    if provider != "anthropic":  # two candidates of one request (Anthropic takes no seed: same fake text)
        assert len(set(results[0].texts)) == 2
    assert len(server.creates()) == 1 and batch_states(tmp_path) == ["done"]
    batch = next(iter(server.batches.values()))
    assert len(batch.items) == 6 // per_request(provider) and batch.polls >= 2  # Anthropic reads it once more
    assert {e.key for e in server.log} == {planted_keys}
    # cost at half the interactive price: 10 prompt tokens a request, 5 completion tokens a sample
    calls = 6 // per_request(provider)
    assert gen.usage()["usage.cost_usd"] == pytest.approx((calls * 10 * 2.0 + 6 * 5 * 10.0) / 1e6 * 0.5)
    assert gen.usage()["usage.batches"] == 1 and cached_rows(tmp_path) == 6

    sent = len(server.log)
    again = generator(cfg, tmp_path).generate(requests("A", "B", "C"))
    assert len(server.log) == sent  # every sample from the cache: no request at all
    assert [r.texts for r in again] == [r.texts for r in results]
    for path in tmp_path.iterdir():
        if path.is_file():
            assert planted_keys.encode() not in path.read_bytes()
    assert planted_keys not in caplog.text


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_run_stopped_after_submission_resumes_the_recorded_batch(
    provider: str, server: BatchServer, tmp_path: Path
) -> None:
    cfg = batch_cfg(provider, server, max_retries=0)
    server.poll_status = 503  # the run dies polling, after its batch was accepted
    with pytest.raises(RetriesExhausted, match="rerun to resume"):
        generator(cfg, tmp_path).generate(requests("A", "B"))
    assert len(server.creates()) == 1 and batch_states(tmp_path) == ["open"] and cached_rows(tmp_path) == 0

    server.poll_status = 200
    results = generator(cfg, tmp_path).generate(requests("A", "B", "C"))
    assert [len(r.texts) for r in results] == [2, 2, 2]
    assert len(server.creates()) == 2  # the recorded batch was polled; only C went into a new batch
    first, second = server.batches.values()
    assert len(second.items) == 2 // per_request(provider) and first.polls >= 1
    assert batch_states(tmp_path) == ["done", "done"]


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("failure", ["error", "expired"])
def test_failed_or_expired_items_become_failed_samples_and_are_retried(
    provider: str, failure: str, server: BatchServer, tmp_path: Path
) -> None:
    cfg = batch_cfg(provider, server)
    server.fail_prompts, server.fail_kind = {"B"}, failure
    results = generator(cfg, tmp_path).generate(requests("A", "B", "C"))
    assert [len(r.texts) for r in results] == [2, 2 - per_request(provider), 2]
    assert results[1].failures()["error"] == per_request(provider)
    assert cached_rows(tmp_path) == 6 - per_request(provider)

    again = generator(cfg, tmp_path).generate(requests("A", "B", "C"))
    assert [len(r.texts) for r in again] == [2, 2, 2] and len(server.creates()) == 2
    assert len(list(server.batches.values())[1].items) == 1  # only the failed request was asked again


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_expired_batch_keeps_its_answers_and_fails_the_rest(
    provider: str, server: BatchServer, tmp_path: Path
) -> None:
    cfg = batch_cfg(provider, server, n_per_request=1)
    server.end_state = "expired"  # the fake answers the first request of an expired batch only
    results = generator(cfg, tmp_path).generate(requests("A", "B", n=1))
    assert [len(r.texts) for r in results] == [1, 0] and results[1].failures()["error"] == 1
    server.end_state = "completed"
    assert [len(r.texts) for r in generator(cfg, tmp_path).generate(requests("A", "B", n=1))] == [1, 1]
    assert len(server.creates()) == 2


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_batch_line_is_the_interactive_request_body_under_the_same_cache_key(
    provider: str, remote: Any, tmp_path: Path
) -> None:
    from mcu_exp.llm import CachedGenerator

    interactive = remote.cfg(provider, n_per_request=2, max_new_tokens=16)
    CachedGenerator(interactive, tmp_path / "i", progress=False, backend=remote.backend(interactive)).generate(
        requests("A", n=2)
    )
    sent = remote.server.log[0].body
    fake = BatchServer(polls_to_end=1)
    try:
        generator(batch_cfg(provider, fake), tmp_path / "b").generate(requests("A", n=2))
        line = next(iter(fake.batches.values())).items[0][1]
        batched = generator(batch_cfg(provider, fake), tmp_path / "i").generate(requests("A", n=2))
    finally:
        fake.stop()
    assert line == sent
    assert len(fake.creates()) == 1 and len(batched[0].texts) == 2  # the interactive samples are batch hits
