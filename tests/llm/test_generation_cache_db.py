"""The SQLite generation cache: round trips, errors never stored, WAL, two writers at once."""

from __future__ import annotations

import multiprocessing as mp
import sqlite3
from pathlib import Path

from mcu_exp.llm import GenerationCache, Sample


def test_put_then_get_many_round_trips_and_chunks_large_lookups(tmp_path: Path):
    with GenerationCache(tmp_path / "g.sqlite") as cache:
        for i in range(1200):
            assert cache.put(f"k{i}", Sample(f"text {i}", "stop", 10, i), {"index": i})
        found = cache.get_many([f"k{i}" for i in range(0, 1300)])
    assert len(found) == 1200
    assert found["k1199"] == Sample("text 1199", "stop", 10, 1199)


def test_errors_are_never_cached_and_a_second_put_keeps_the_first(tmp_path: Path):
    with GenerationCache(tmp_path / "g.sqlite") as cache:
        assert not cache.put("a", Sample("", "error"))
        assert cache.get_many(["a"]) == {}
        assert cache.put("a", Sample("first", "length", 1, 2))
        assert not cache.put("a", Sample("second", "stop"))
        assert cache.get_many(["a"])["a"].text == "first"


def test_database_is_in_wal_mode_and_keeps_key_parts(tmp_path: Path):
    GenerationCache(tmp_path / "g.sqlite").put("a", Sample("t", "stop"), {"index": 3})
    conn = sqlite3.connect(tmp_path / "g.sqlite")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("SELECT parts FROM samples").fetchone()[0] == '{"index":3}'


def _writer(path: str, worker: int, rows: int, errors) -> None:
    try:
        cache = GenerationCache(path)
        for i in range(rows):
            key = f"shared{i}" if i % 3 == 0 else f"w{worker}-{i}"
            cache.put(key, Sample(f"{worker}:{i}", "stop", 1, 1), {"worker": worker})
            cache.get_many([key, f"shared{i}"])
        cache.close()
    except Exception as exc:  # noqa: BLE001 (any error is reported to the parent, which fails the test)
        errors.put(f"{type(exc).__name__}: {exc}")


def test_two_processes_writing_at_once_leave_a_consistent_file(tmp_path: Path):
    path, rows = str(tmp_path / "g.sqlite"), 300
    ctx = mp.get_context("spawn")
    errors = ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(path, w, rows, errors)) for w in (0, 1)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]
    assert errors.empty(), errors.get()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    shared = len(range(0, rows, 3))
    assert conn.execute("SELECT COUNT(*) FROM samples").fetchone()[0] == 2 * (rows - shared) + shared
