"""An output no database column can hold (a NUL byte: PostgreSQL's TEXT; a lone surrogate: any
UTF-8 store) is paid for once: stored losslessly, served back by the next run without a request.

The fake server sends them JSON-escaped (``\\u0000``, ``\\ud800``), as a real API would, and the
real OpenAI client decodes them into the texts the cache has to keep.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from mcu_exp.llm import CachedGenerator, GenerationRequest, Message
from mcu_exp.llm.cache import CACHE_FILE, GenerationCache, sample_keys
from mcu_exp.llm.contract import Sample

SENT = ["a\x00b", "c\ud800d", "plain é"]  # what the model wrote
READ = ["a\x00b", "c\ufffdd", "plain é"]  # what the pipeline reads (a lone surrogate is no text)


def completion(texts: list[str]) -> dict[str, Any]:
    """An OpenAI chat completion holding ``texts`` as its choices."""
    return {
        "id": "chatcmpl-odd",
        "object": "chat.completion",
        "created": 0,
        "model": "fake-model",
        "choices": [
            {"index": k, "message": {"role": "assistant", "content": t}, "finish_reason": "stop"}
            for k, t in enumerate(texts)
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5 * len(texts), "total_tokens": 25},
    }


def test_nul_and_lone_surrogate_outputs_are_stored_once_and_served_back(remote: Any, tmp_path: Path) -> None:
    cfg = remote.cfg("openai", n_per_request=3)
    request = GenerationRequest(messages=(Message("user", "odd"),), n=3, max_new_tokens=16)
    remote.server.push(remote.action(body=completion(SENT)))
    first = CachedGenerator(cfg, tmp_path, progress=False)
    assert first.generate([request])[0].texts == READ
    second = CachedGenerator(cfg, tmp_path, progress=False)
    assert second.generate([request])[0].texts == READ
    assert len(remote.server.log) == 1 and second.stats["hits"] == 3  # paid once
    keys = sample_keys(first.identity(), request, range(3))
    with GenerationCache(tmp_path / CACHE_FILE) as cache:  # the cache keeps what was sent, exactly
        assert [cache.get_many(keys)[k].text for k in keys] == SENT
        rows = [r for batch in cache.rows("samples") for r in batch]
        assert sorted(r[1] for r in rows) == sorted(SENT)  # what an export carries
    with sqlite3.connect(tmp_path / CACHE_FILE) as conn:
        stored = dict(conn.execute("SELECT key, text FROM samples").fetchall())
        escaped = {k for (k,) in conn.execute("SELECT key FROM escaped")}
    assert [stored[k] for k in keys] == [json.dumps(SENT[0]), json.dumps(SENT[1]), SENT[2]]
    assert escaped == set(keys[:2])  # a plain text is stored as it is


def test_a_cache_file_of_an_older_version_is_read_and_gains_the_escaped_table(tmp_path: Path) -> None:
    path = tmp_path / CACHE_FILE
    with sqlite3.connect(path) as conn:  # the samples table as older versions wrote it, no escaped table
        conn.execute(
            "CREATE TABLE samples (key TEXT PRIMARY KEY, text TEXT NOT NULL, finish_reason TEXT NOT NULL, "
            "prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL, created REAL NOT NULL, "
            "parts TEXT NOT NULL) WITHOUT ROWID"
        )
        conn.executemany(
            "INSERT INTO samples VALUES (?, ?, 'stop', 1, 1, 0, '{}')",
            [("k1", "nul \x00 kept"), ("k2", '"looks like JSON"')],
        )
    conn.close()
    with GenerationCache(path) as cache:
        assert {k: s.text for k, s in cache.get_many(["k1", "k2"]).items()} == {
            "k1": "nul \x00 kept",
            "k2": '"looks like JSON"',
        }  # old texts keep their meaning
        cache.put("k3", Sample("x\ud800", "stop", 1, 1))
        assert cache.get_many(["k3"])["k3"].text == "x\ud800"
