"""The cache's batched paths: keys made once per request, one transaction per response (all or
nothing, also under SIGKILL), request parts kept once, older files still read, chunked lookups."""

from __future__ import annotations

import hashlib
import json
import signal
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from mcu_exp.llm import CachedGenerator, GenerationCache, GenerationRequest, Message, Sample, SampleJob
from mcu_exp.llm import generator as generator_module
from mcu_exp.llm.cache import canonical_json, key_parts, request_parts, sample_key, sample_keys

IDENTITY = {"backend": "openai", "model_id": "m", "quirks": {"params": {"index": 0, "messages": [1]}}}


def _request(text: str, n: int = 3, **fields: Any) -> GenerationRequest:
    return GenerationRequest((Message("system", "be brief"), Message("user", text)), n=n, **fields)


@pytest.mark.parametrize(
    "text",
    [
        "plain",
        "",
        'tricky "index":0,"messages":[{"content":"x"}] inside',
        'ünïcode ✓ \n\t\\ "quoted"',
    ],
)
def test_sample_keys_match_sample_key_byte_for_byte(text: str):
    request = _request(text, stop=("\n\n", '"index":0'), seed=7, temperature=0.3)
    indices = [0, 1, 9, 10, 99, 100, 12345]
    assert sample_keys(IDENTITY, request, indices) == [sample_key(IDENTITY, request, i) for i in indices]


def test_put_responses_keeps_request_parts_once_and_each_key_can_be_rebuilt(tmp_path: Path):
    first, second = _request("a", n=2), _request("b", n=1)
    responses = [
        (
            request_parts(IDENTITY, r),
            [(k, i, Sample(f"t{i}", "stop", 1, 1)) for i, k in enumerate(sample_keys(IDENTITY, r, range(r.n)))],
        )
        for r in (first, second)
    ]
    with GenerationCache(tmp_path / "g.sqlite") as cache:
        assert cache.put_responses(responses) == 3
        assert cache.put_responses(responses[:1]) == 0  # already there: nothing rewritten
    conn = sqlite3.connect(tmp_path / "g.sqlite")
    requests = {rid: json.loads(parts) for rid, parts in conn.execute("SELECT id, parts FROM requests")}
    assert len(requests) == 2
    for key, parts in conn.execute("SELECT key, parts FROM samples"):
        ref = json.loads(parts)
        rebuilt = {**requests[ref["request"]], "index": ref["index"]}
        assert hashlib.sha256(canonical_json(rebuilt).encode()).hexdigest() == key


def test_a_response_that_fails_midway_writes_nothing(tmp_path: Path):
    request = _request("a", n=3)
    keys = sample_keys(IDENTITY, request, range(3))
    bad = Sample("t2", "stop", [1], 1)  # type: ignore[arg-type]  # SQLite cannot bind a list
    rows = [(keys[0], 0, Sample("t0", "stop")), (keys[1], 1, Sample("", "error")), (keys[2], 2, bad)]
    with GenerationCache(tmp_path / "g.sqlite") as cache:
        with pytest.raises(sqlite3.ProgrammingError):
            cache.put_responses([(request_parts(IDENTITY, request), rows)])
        conn = sqlite3.connect(tmp_path / "g.sqlite")
        assert [
            conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("samples", "failures", "requests")
        ] == [0, 0, 0]
        assert cache.put_responses([(request_parts(IDENTITY, request), rows[:2])]) == 1
        assert conn.execute("SELECT COUNT(*) FROM requests").fetchone()[0] == 1  # not skipped after the rollback
        assert conn.execute("SELECT kind FROM failures").fetchall() == [("error",)]


WRITER = textwrap.dedent("""
    import sys
    from mcu_exp.llm import GenerationCache, GenerationRequest, Message, Sample
    from mcu_exp.llm.cache import request_parts, sample_keys
    identity = {"backend": "openai", "model_id": "m"}
    with GenerationCache(sys.argv[1]) as cache:
        for r in range(100000):
            request = GenerationRequest((Message("user", "prompt %d " % r + "x" * 2000),), n=50)
            keys = sample_keys(identity, request, range(50))
            rows = [(k, i, Sample("CORRECT", "stop", 1, 1)) for i, k in enumerate(keys)]
            cache.put_responses([(request_parts(identity, request), rows)])
            if r == 20:
                print("ready", flush=True)
""")


def test_sigkill_while_writing_responses_leaves_each_one_whole(tmp_path: Path):
    db = tmp_path / "g.sqlite"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(db)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    per_request = dict(conn.execute("SELECT json_extract(parts, '$.request'), COUNT(*) FROM samples GROUP BY 1"))
    assert len(per_request) > 20 and set(per_request.values()) == {50}
    stored = {rid for (rid,) in conn.execute("SELECT id FROM requests")}
    assert set(per_request) <= stored


OLD_SCHEMA = """CREATE TABLE samples (key TEXT PRIMARY KEY, text TEXT NOT NULL, finish_reason TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL, created REAL NOT NULL, parts TEXT NOT NULL);
CREATE TABLE failures (key TEXT PRIMARY KEY, kind TEXT NOT NULL, text TEXT NOT NULL, finish_reason TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL, attempts INTEGER NOT NULL,
    created REAL NOT NULL, parts TEXT NOT NULL);
CREATE TABLE claims (key TEXT PRIMARY KEY, owner TEXT NOT NULL, host TEXT NOT NULL, pid INTEGER NOT NULL,
    expires REAL NOT NULL);"""


class _Counting:
    """A stand-in model: ``text <request> <index>`` for every sample asked, counting them."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, int]] = []

    def identity(self) -> dict[str, Any]:
        return dict(IDENTITY)

    def stream(self, jobs: Sequence[SampleJob]) -> Iterator[tuple[int, int, Sample]]:
        for pos, job in enumerate(jobs):
            for i in job.indices:
                self.asked.append((job.request.messages[-1].content, i))
                yield pos, i, Sample(f"text {job.request.messages[-1].content} {i}", "stop", 2, 1)


def test_a_file_of_the_older_layout_is_read_and_extended(tmp_path: Path):
    request = _request("old", n=3)
    conn = sqlite3.connect(tmp_path / generator_module.CACHE_FILE)
    conn.executescript(OLD_SCHEMA)
    conn.execute(
        "INSERT INTO samples VALUES (?, 'kept', 'stop', 1, 1, 0, ?)",
        (sample_key(IDENTITY, request, 1), canonical_json(key_parts(IDENTITY, request, 1))),
    )
    conn.commit()
    model = _Counting()
    generator = CachedGenerator(None, tmp_path, progress=False, backend=model)
    assert generator.generate([request])[0].texts == ["text old 0", "kept", "text old 2"]
    generator.close()
    assert model.asked == [("old", 0), ("old", 2)]
    assert conn.execute("SELECT COUNT(*) FROM samples").fetchone()[0] == 3
    assert conn.execute("SELECT COUNT(*) FROM requests").fetchone()[0] == 1


def test_chunked_lookup_equals_one_by_one_lookup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(generator_module, "_LOOKUP", 7)  # many chunks, requests straddling none
    wanted = [_request(f"p{i % 9}", n=1 + i % 4) for i in range(30)]  # repeats across chunks
    with GenerationCache(tmp_path / generator_module.CACHE_FILE) as cache:
        for r in wanted[::3]:
            cache.put(sample_key(IDENTITY, r, 0), Sample(f"cached {r.messages[-1].content}", "stop"))
    model = _Counting()
    generator = CachedGenerator(None, tmp_path, progress=False, backend=model)
    results = generator.generate(wanted)
    generator.close()
    with GenerationCache(tmp_path / generator_module.CACHE_FILE) as cache:
        one_by_one = [
            [cache.get_many([sample_key(IDENTITY, r, i)])[sample_key(IDENTITY, r, i)] for i in range(r.n)]
            for r in wanted
        ]
    assert [res.samples for res in results] == one_by_one
    distinct = {(r.messages[-1].content, i) for r in wanted for i in range(r.n)}
    cached = {(r.messages[-1].content, 0) for r in wanted[::3]}
    assert sorted(model.asked) == sorted(distinct - cached)  # each missing sample asked once
    assert generator.stats["hits"] + generator.stats["misses"] == sum(r.n for r in wanted)
