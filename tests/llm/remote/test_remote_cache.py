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
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 8
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
