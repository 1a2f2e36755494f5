"""Batch mode around the providers: a killed run resumes, batch limits, budget caps and the
preview at the batch price, configuration errors found before anything starts."""

from __future__ import annotations

import dataclasses
import json
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest
from batch_server import BatchServer

from mcu_exp.config import ModelConfig
from mcu_exp.llm import CachedGenerator, GenerationRequest, Message
from mcu_exp.llm.errors import BackendError
from mcu_exp.llm.factory import build_backend, check_backend
from mcu_exp.llm.providers._errors import AuthenticationFailed, BudgetExceeded, RetriesExhausted
from mcu_exp.proxies.preview import estimate, render_preview
from support.batch import batch_cfg, batch_states, cached_rows, generator, requests

WORKER = Path(__file__).with_name("batch_worker.py")


def bare(*prompts: str, n: int) -> list[GenerationRequest]:
    """Requests without a system turn, as the worker sends them."""
    return [GenerationRequest(messages=(Message("user", p),), n=n, max_new_tokens=16) for p in prompts]


def _open_batches(cache_dir: Path) -> int:
    """Open batches the worker recorded (read only: never creates or locks its file)."""
    path = cache_dir / "batches.sqlite"
    if not path.is_file():
        return 0
    try:
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM batches WHERE state = 'open'").fetchone()[0])
    except sqlite3.Error:  # the worker is creating it
        return 0


def _polled(server: BatchServer) -> bool:
    with server.lock:
        return any(b.polls for b in server.batches.values())


def test_a_killed_run_resumes_polling_its_batch_without_a_second_create(server: BatchServer, tmp_path: Path) -> None:
    server.polls_to_end = 10**6  # the batch never ends while the worker lives
    worker = subprocess.Popen(
        [sys.executable, str(WORKER), server.url + "/v1", str(tmp_path), json.dumps(["A", "B"])],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while _open_batches(tmp_path) == 0 or not _polled(server):
            assert worker.poll() is None, worker.communicate()[1].decode()[-2000:]
            assert time.monotonic() < deadline, "the worker never submitted its batch"
            time.sleep(0.05)
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.communicate()
    assert len(server.creates()) == 1 and cached_rows(tmp_path) == 0

    batch = next(iter(server.batches.values()))
    server.polls_to_end = batch.polls + 1
    cfg = batch_cfg("openai", server)
    results = generator(cfg, tmp_path).generate(bare("A", "B", n=2))
    assert [len(r.texts) for r in results] == [2, 2] and results[1].texts[0].startswith("answer to [B]")
    assert len(server.creates()) == 1 and batch_states(tmp_path) == ["done"]


def test_a_rejected_key_stops_with_one_line_and_the_batch_stays_recorded(
    server: BatchServer, planted_keys: str, tmp_path: Path
) -> None:
    server.poll_status = 401
    with pytest.raises(AuthenticationFailed, match="environment variable OPENAI_API_KEY") as caught:
        generator(batch_cfg("openai", server), tmp_path).generate(bare("A", n=1))
    message = str(caught.value)
    assert planted_keys not in message and "\n" not in message and caught.value.__cause__ is None
    assert batch_states(tmp_path) == ["open"] and len(server.creates()) == 1


def test_a_recorded_batch_the_provider_lost_fails_its_samples_and_the_next_run_resubmits(
    server: BatchServer, tmp_path: Path
) -> None:
    cfg = batch_cfg("openai", server, max_retries=0)
    server.poll_status = 503
    with pytest.raises(RetriesExhausted):
        generator(cfg, tmp_path).generate(bare("A", n=1))
    server.poll_status = 200
    server.batches.clear()  # the provider deleted it: polls answer 404
    lost = generator(cfg, tmp_path).generate(bare("A", n=1))
    assert lost[0].failures()["error"] == 1 and batch_states(tmp_path) == ["lost"]
    again = generator(cfg, tmp_path).generate(bare("A", n=1))
    assert again[0].texts[0].startswith("answer to [A]") and len(server.creates()) == 2
    assert batch_states(tmp_path) == ["lost", "done"]


def test_batches_are_split_within_the_request_and_byte_limits(server: BatchServer, tmp_path: Path) -> None:
    cfg = batch_cfg("openai", server, n_per_request=1, batch_max_requests=3)
    results = generator(cfg, tmp_path).generate(requests("A", "B", "C", "D", n=2))  # 8 requests
    assert [len(r.texts) for r in results] == [2, 2, 2, 2]
    assert [len(b.items) for b in server.batches.values()] == [3, 3, 2]

    backend = build_backend(batch_cfg("openai", server, n_per_request=1), progress=False, cache_dir=tmp_path / "b")
    backend.api.max_bytes = 900  # about three request lines
    CachedGenerator(None, tmp_path / "b", progress=False, backend=backend).generate(requests("E", "F", "G", n=2))
    uploads = [v for k, v in server.files.items() if k.startswith("file-") and k[5:].isdigit()][1 * 3 :]
    assert len(uploads) >= 2 and all(len(u) <= 900 for u in uploads)
    assert sum(len(u.splitlines()) for u in uploads) == 6


def test_budget_caps_count_at_the_batch_price(server: BatchServer, tmp_path: Path) -> None:
    # each request: ~5 prompt tokens, 16 output tokens at most: $170e-6 worst case interactive,
    # $85e-6 at the batch price; a $300e-6 cap admits one interactive request or three batched ones
    cfg = batch_cfg("openai", server, max_cost_usd=300e-6, n_per_request=1)
    results = generator(cfg, tmp_path).generate(bare("A", "B", "C", n=1))
    assert [len(r.texts) for r in results] == [1, 1, 1]

    capped = batch_cfg("openai", server, max_requests=2)
    with pytest.raises(BudgetExceeded, match="max_requests=2 reached .*; 2 requests submitted"):
        generator(capped, tmp_path / "c").generate(requests("A", "B", "C", n=1))
    assert cached_rows(tmp_path / "c") == 2
    generator(batch_cfg("openai", server), tmp_path / "c").generate(requests("A", "B", "C", n=1))
    assert [len(b.items) for b in server.batches.values()][-2:] == [2, 1]


def test_batch_dir_records_batches_where_the_config_says(server: BatchServer, tmp_path: Path) -> None:
    cfg = batch_cfg("openai", server, batch_dir=str(tmp_path / "records"))
    CachedGenerator(cfg, tmp_path / "cache", progress=False).generate(requests("A", n=1))
    assert batch_states(tmp_path / "records") == ["done"] and cached_rows(tmp_path / "cache") == 1
    assert not (tmp_path / "cache" / "batches.sqlite").exists()
    CachedGenerator(batch_cfg("openai", server), tmp_path / "other", progress=False).generate(requests("B", n=1))
    assert batch_states(tmp_path / "other") == ["done"]  # unset: beside the generation cache it feeds


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"backend": "openai_compatible", "base_url": "http://127.0.0.1:1/v1"},
            "backend 'openai_compatible' declares no batch API",
        ),
        ({"backend": "local"}, "backend 'local' declares no batch API"),
        ({"batch_discount": 0.0}, "batch_discount=0.0 must be in"),
        ({"batch_poll_s": 0.0}, "batch_poll_s must be > 0"),
    ],
)
def test_batch_config_errors_are_one_line_before_any_request(fields: dict, message: str, planted_keys: str) -> None:
    cfg = ModelConfig(**{"name": "m", "backend": "openai", "model_id": "x", "batch": True, **fields})
    with pytest.raises(BackendError, match=message) as caught:
        check_backend(cfg)
    assert "\n" not in str(caught.value)
    with pytest.raises(BackendError, match=message):
        build_backend(cfg, progress=False)


def test_the_preview_shows_the_batch_price() -> None:
    cfg = ModelConfig(name="m", backend="openai", model_id="x", price_input_per_mtok=2.5, price_output_per_mtok=10.0)
    reqs = requests("some code to summarise", "more", n=4)
    interactive = estimate("summaries", "m", cfg, reqs)
    batched = estimate("summaries", "m", dataclasses.replace(cfg, batch=True), reqs)
    assert interactive.cost_usd and batched.cost_usd == pytest.approx(interactive.cost_usd / 2)
    assert batched.batch and not interactive.batch
    table = render_preview([interactive, batched])
    assert f"{batched.cost_usd:,.2f} (batch)" in table and "batch_discount" in table
    assert "(batch)" not in render_preview([interactive])
