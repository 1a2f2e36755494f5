"""Remote backends behind the generation cache: what is cached, resuming, and the key's secrecy."""

from __future__ import annotations

import json
import logging
import signal
import sqlite3
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import pytest

from mcu_exp.llm import CachedGenerator, GenerationRequest, Message
from mcu_exp.llm.providers._errors import AuthenticationFailed, BudgetExceeded, RetriesExhausted

WORKER = Path(__file__).with_name("gen_worker.py")


def requests(*prompts: str, n: int = 2) -> list[GenerationRequest]:
    return [GenerationRequest(messages=(Message("user", p),), n=n, max_new_tokens=16) for p in prompts]


def rows(cache_dir: Path) -> int:
    with sqlite3.connect(cache_dir / "generations.sqlite") as conn:
        return int(conn.execute("SELECT COUNT(*) FROM samples").fetchone()[0])


def prompts_sent(log: list[Any]) -> list[str]:
    return [entry.body["messages"][-1]["content"] for entry in log]


def test_cache_holds_exactly_the_successful_responses(remote: Any, tmp_path: Path) -> None:
    cfg = remote.cfg("openai", n_per_request=2, max_concurrency=1, max_retries=2)
    reqs = requests("A", "B", "C")
    remote.server.push(remote.action(), *[remote.action(500, remote.error(500, "boom"))] * 3)
    gen = CachedGenerator(cfg, tmp_path, progress=False, backend=remote.backend(cfg))
    with pytest.raises(RetriesExhausted):
        gen.generate(reqs)
    assert rows(tmp_path) == 2  # A's two samples; B failed, C was never started
    sent_before = len(remote.server.log)

    again = CachedGenerator(cfg, tmp_path, progress=False, backend=remote.backend(cfg))
    results = again.generate(reqs)
    assert prompts_sent(remote.server.log[sent_before:]) == ["B", "C"]
    assert [len(r.samples) for r in results] == [2, 2, 2] and rows(tmp_path) == 6
    assert results[0].texts[0].startswith("answer to [A]")


def test_budget_stop_keeps_what_was_done_and_a_rerun_resumes(remote: Any, tmp_path: Path) -> None:
    reqs = requests("A", "B", "C", "D", n=1)
    capped = remote.cfg("anthropic", max_requests=2, max_concurrency=1)
    with pytest.raises(BudgetExceeded, match="2 samples completed and kept"):
        CachedGenerator(capped, tmp_path, progress=False, backend=remote.backend(capped)).generate(reqs)
    assert rows(tmp_path) == 2
    free = remote.cfg("anthropic", max_concurrency=1)
    results = CachedGenerator(free, tmp_path, progress=False, backend=remote.backend(free)).generate(reqs)
    assert prompts_sent(remote.server.log) == ["A", "B", "C", "D"]  # nothing asked twice
    assert all(len(r.samples) == 1 for r in results)


def test_a_killed_run_resumes_without_sending_any_answered_request_again(remote: Any, tmp_path: Path) -> None:
    spec = [[f"program {i}", 3, 0] for i in range(4)]  # 12 samples, one request each
    server = remote.server
    server.stall_after = 5
    proc = subprocess.Popen(
        [sys.executable, str(WORKER), server.url + "/v1", str(tmp_path), json.dumps(spec)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60  # the worker's imports alone can take seconds on a busy machine
        while time.monotonic() < deadline and proc.poll() is None:
            if len(server.answered()) >= 5 and (tmp_path / "generations.sqlite").exists() and rows(tmp_path) >= 5:
                break
            time.sleep(0.05)
        assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=5)
    finally:
        if proc.poll() is None:
            proc.kill()
    first_run = {(e.body["messages"][-1]["content"], e.body["seed"]) for e in server.answered()}
    assert len(first_run) == 5 and rows(tmp_path) == 5
    sent_before = len(server.log)
    server.stall_after = None
    server.release.set()

    cfg = remote.cfg("openai", n_per_request=1, max_concurrency=2, timeout_s=30.0)
    reqs = [GenerationRequest(messages=(Message("user", p),), n=n, seed=s, max_new_tokens=16) for p, n, s in spec]
    results = CachedGenerator(cfg, tmp_path, progress=False, backend=remote.backend(cfg)).generate(reqs)
    second_run = [(e.body["messages"][-1]["content"], e.body["seed"]) for e in server.log[sent_before:]]
    assert not first_run & set(second_run)
    assert len(second_run) == len(set(second_run)) == 12 - 5
    assert all(len(r.samples) == 3 for r in results) and rows(tmp_path) == 12


@pytest.mark.parametrize("provider", ["openai", "anthropic", "google", "openai_compatible"])
def test_the_key_appears_in_no_log_error_cache_or_repr(
    remote: Any, provider: str, tmp_path: Path, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.DEBUG)
    echo = "the key {KEY} is wrong"  # the fake server echoes the key it received
    remote.server.push(
        remote.action(429, remote.error(429, echo)),
        remote.action(500, remote.error(500, echo)),
        remote.action(),
        remote.action(401, remote.error(401, echo)),
    )
    cfg = remote.cfg(provider, max_concurrency=1, max_retries=3)
    backend = remote.backend(cfg, progress=True)
    gen = CachedGenerator(cfg, tmp_path, progress=True, backend=backend)
    with pytest.raises(AuthenticationFailed) as info:
        gen.generate(requests("A", "B", n=1))
    gen.close()
    assert backend.usage()["retries"] == 2 and rows(tmp_path) == 1
    assert remote.key in json.dumps([e.headers for e in remote.server.log])  # the key was really sent
    err = info.value
    texts = {
        "exception": str(err) + repr(err) + "".join(traceback.format_exception(type(err), err, err.__traceback__)),
        "logs": "\n".join(r.getMessage() for r in caplog.records) + caplog.text,
        "stdio": "".join(capfd.readouterr()),
        "cache": b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file()).decode("utf-8", "replace"),
        "backend": repr(backend) + repr(vars(backend)) + json.dumps(backend.identity()) + json.dumps(backend.usage()),
    }
    assert "retry" in texts["logs"]  # the retries were logged, scrubbed
    for where, text in texts.items():
        assert remote.key not in text, where


@pytest.mark.parametrize("progress", [True, False])
def test_progress_reaches_the_remote_bar_through_the_generator(
    remote: Any, tmp_path: Path, progress: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = remote.cfg("openai", n_per_request=2)
    gen = CachedGenerator(cfg, tmp_path, progress=progress)  # builds its own backend
    gen.generate(requests("A", "B"))
    gen.close()
    err = capsys.readouterr().err
    assert gen.backend_created and len(remote.server.answered()) == 2
    if progress:
        assert "openai:fake-model" in err and "generate" in err
    else:
        assert err == ""


def test_usage_is_what_the_server_billed_for_this_run_only(remote: Any, tmp_path: Path) -> None:
    cfg = remote.cfg("openai", n_per_request=2, max_concurrency=1, price_input_per_mtok=1.0, price_output_per_mtok=2.0)

    def billed(log: list[Any]) -> tuple[int, int]:
        # The fake server bills 10 prompt tokens and 5 completion tokens per sample of a request.
        answered = [e for e in log if e.answered]
        return 10 * len(answered), sum(5 * int(e.body.get("n") or 1) for e in answered)

    remote.server.push(remote.action(503, remote.error(503, "overloaded")))
    gen = CachedGenerator(cfg, tmp_path, progress=False)
    gen.generate(requests("A", "B", n=3))  # 2 + 1 samples per prompt: 4 requests, one retried
    prompt, completion = billed(remote.server.log)
    assert (prompt, completion) == (40, 30)
    assert gen.usage() == {
        "usage.requests": 5.0,
        "usage.retries": 1.0,
        "usage.samples": 6.0,
        "usage.prompt_tokens": float(prompt),
        "usage.completion_tokens": float(completion),
        "usage.cost_usd": pytest.approx((prompt * 1.0 + completion * 2.0) / 1e6),
    }

    sent_before = len(remote.server.log)
    again = CachedGenerator(cfg, tmp_path, progress=False)
    again.generate(requests("A", "B", n=3))  # all cached: nothing spent
    assert again.usage() == {} and len(remote.server.log) == sent_before
    again.generate(requests("A", n=4))  # one new sample: only its request counts
    prompt, completion = billed(remote.server.log[sent_before:])
    assert (prompt, completion) == (10, 5)
    assert again.usage() == {
        "usage.requests": 1.0,
        "usage.retries": 0.0,
        "usage.samples": 1.0,
        "usage.prompt_tokens": 10.0,
        "usage.completion_tokens": 5.0,
        "usage.cost_usd": pytest.approx((10 * 1.0 + 5 * 2.0) / 1e6),
    }
