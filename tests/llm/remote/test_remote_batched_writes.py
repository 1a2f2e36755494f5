"""The real OpenAI client against the fake server: a response's samples travel and are stored together."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from mcu_exp.llm import CachedGenerator, GenerationRequest, Message, SampleJob
from mcu_exp.llm.generator import CACHE_FILE


def _requests(count: int, n: int) -> list[GenerationRequest]:
    return [GenerationRequest((Message("user", f"prompt {i}"),), n=n, max_new_tokens=16) for i in range(count)]


def test_stream_batches_keep_each_response_whole(remote: Any):
    backend = remote.backend(remote.cfg("openai", n_per_request=4, max_concurrency=2))
    jobs = [SampleJob(r, tuple(range(8))) for r in _requests(3, 8)]  # two responses of 4 per job
    batches = list(backend.stream_batches(jobs))
    assert sorted((pos, i) for batch in batches for pos, i, _ in batch) == [(p, i) for p in range(3) for i in range(8)]
    for batch in batches:  # a response's four samples never straddle two batches
        seen = {(pos, i // 4) for pos, i, _ in batch}
        assert all(sum((pos, i // 4) == part for pos, i, _ in batch) == 4 for part in seen)
    assert len(remote.server.answered()) == 6
    assert backend.usage()["samples"] == 24


def test_generator_stores_each_response_in_one_write(remote: Any, tmp_path: Path):
    cfg = remote.cfg("openai", n_per_request=5, max_concurrency=3)
    generator = CachedGenerator(cfg, tmp_path, progress=False)
    results = generator.generate(_requests(4, 5))
    generator.close()
    assert [len(r.texts) for r in results] == [5] * 4
    conn = sqlite3.connect(tmp_path / CACHE_FILE)
    rows = conn.execute("SELECT created, parts FROM samples").fetchall()
    by_request: dict[str, set[float]] = {}
    for created, parts in rows:
        by_request.setdefault(json.loads(parts)["request"], set()).add(created)
    assert len(rows) == 20 and len(by_request) == 4
    assert all(len(stamps) == 1 for stamps in by_request.values())  # one transaction per response
    again = CachedGenerator(cfg, tmp_path, progress=False)
    assert [r.texts for r in again.generate(_requests(4, 5))] == [r.texts for r in results]
    assert not again.backend_created and len(remote.server.answered()) == 4
