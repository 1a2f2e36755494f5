"""Batch mode pays for a sample once: a batch the provider accepted while the client gave up
waiting is found by its tag instead of being submitted again, and every sample a recorded
batch brings is stored, wanted by this run or not (issue 24, items 2 and 3)."""

from __future__ import annotations

from pathlib import Path

import pytest
from batch_server import BatchServer

from mcu_exp.llm import SampleJob
from mcu_exp.llm.factory import build_backend
from mcu_exp.llm.providers._errors import RetriesExhausted
from support.batch import batch_cfg, batch_states, cached_rows, generator, requests

PROVIDERS = ("openai", "anthropic", "google")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_batch_accepted_after_the_client_timed_out_is_found_not_submitted_again(
    provider: str, server: BatchServer, tmp_path: Path
) -> None:
    server.slow_creates = 1  # the provider makes the batch, the client times out before the answer
    gen = generator(batch_cfg(provider, server, timeout_s=0.5), tmp_path)
    results = gen.generate(requests("A", "B", "C", "D", n=2))
    assert [len(r.texts) for r in results] == [2, 2, 2, 2]
    assert len(server.batches) == 1 and server.paid() == 8  # one batch, 8 samples paid for 8
    assert batch_states(tmp_path) == ["done"] and cached_rows(tmp_path) == 8
    assert gen.usage()["usage.batches"] == 1


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_run_that_gave_up_on_an_unanswered_create_finds_its_batch_on_rerun(
    provider: str, server: BatchServer, tmp_path: Path
) -> None:
    server.slow_creates = 1
    cfg = batch_cfg(provider, server, timeout_s=0.5, max_retries=0)
    with pytest.raises(RetriesExhausted, match="rerun to resume"):
        generator(cfg, tmp_path).generate(requests("A", "B", n=2))
    assert len(server.batches) == 1 and batch_states(tmp_path) == ["submitting"]  # the intent, recorded first

    results = generator(cfg, tmp_path).generate(requests("A", "B", n=2))
    assert [len(r.texts) for r in results] == [2, 2]
    assert len(server.batches) == 1 and server.paid() == 4 and batch_states(tmp_path) == ["done"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_create_refused_before_the_batch_was_made_is_submitted_again_once(
    provider: str, server: BatchServer, tmp_path: Path
) -> None:
    server.refused_creates = 1  # 503: nothing was made, the lookup finds nothing
    results = generator(batch_cfg(provider, server), tmp_path).generate(requests("A", "B", n=2))
    assert [len(r.texts) for r in results] == [2, 2]
    assert len(server.batches) == 1 and server.paid() == 4 and batch_states(tmp_path) == ["done"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_rerun_that_wants_fewer_samples_stores_every_sample_of_the_recorded_batch(
    provider: str, server: BatchServer, tmp_path: Path
) -> None:
    cfg = batch_cfg(provider, server, max_retries=0)
    server.poll_status = 503  # the first run dies polling its batch of 3 programs x 4 samples
    with pytest.raises(RetriesExhausted):
        generator(cfg, tmp_path).generate(requests("A", "B", "C", n=4))
    assert server.paid() == 12 and batch_states(tmp_path) == ["open"]

    server.poll_status = 200
    fewer = generator(cfg, tmp_path).generate(requests("A", "B", n=2))  # smaller k, smaller dataset
    assert [len(r.texts) for r in fewer] == [2, 2]
    assert cached_rows(tmp_path) == 12 and batch_states(tmp_path) == ["done"]

    sent = len(server.log)
    full = generator(cfg, tmp_path).generate(requests("A", "B", "C", n=4))
    assert [len(r.texts) for r in full] == [4, 4, 4] and all(t.startswith("answer to [C]") for t in full[2].texts)
    assert len(server.log) == sent and server.paid() == 12  # 12 samples paid for 12 used


def test_a_batch_stays_open_until_every_sample_it_brought_is_stored(server: BatchServer, tmp_path: Path) -> None:
    cfg = batch_cfg("openai", server, max_retries=0)
    server.poll_status = 503
    with pytest.raises(RetriesExhausted):
        generator(cfg, tmp_path).generate(requests("A", "B", n=2))
    server.poll_status = 200

    backend = build_backend(cfg, progress=False, cache_dir=tmp_path)
    got = list(backend.stream([SampleJob(requests("A", n=2)[0], (0, 1))]))  # nowhere to store B's samples
    assert len(got) == 2 and all(sample.text.startswith("answer to [A]") for _, _, sample in got)
    assert batch_states(tmp_path) == ["open"]

    results = generator(cfg, tmp_path).generate(requests("B", n=2))  # polls the open batch again
    assert len(results[0].texts) == 2 and len(server.batches) == 1
    assert batch_states(tmp_path) == ["done"] and cached_rows(tmp_path) == 4  # A's samples stored as spares
