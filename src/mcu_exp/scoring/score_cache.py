"""Cache of BERTScore-F1 values, content-addressed: one SQLite file (WAL mode), or a
PostgreSQL database shared by many machines (``cache.url``; :mod:`mcu_exp.store.sql`).

A pair's key is the sha256 of canonical JSON ``{"a": text, "b": text, "spec": spec_hash}``,
where the spec hash names the encoder's identity, layer, idf, rescaling, baseline and library
versions. F1 is symmetric (P and R swap when the texts do), so the two texts are put in
sorted order and (a, b) and (b, a) share one entry. The cache also remembers each text's
token count and whether the encoder truncated it, so a job served from the cache still
reports how many of its inputs were truncated. Lookups and inserts go in chunks.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any

from mcu_exp.store import reads
from mcu_exp.store.faults import check_sqlite_path, sqlite_fault
from mcu_exp.store.sql import (
    POSTGRESQL,
    SQLITE,
    database_errors,
    is_url,
    open_store,
    postgres_schema,
)

SCHEMA_VERSION = "1"
_CHUNK = 900  # bound parameters per query (old SQLite builds allow 999)


def _json_text(text: str) -> str:
    return json.dumps(text, ensure_ascii=True)


KEYS_KEPT = 1 << 17  # keys remembered per process: a sweep's jobs look up the same pairs


@lru_cache(maxsize=KEYS_KEPT)
def pair_key(spec_hash: str, a: str, b: str, symmetric: bool = True) -> bytes:
    """Cache key of the F1 of texts `a` and `b` under the scorer `spec_hash` (remembered: each
    job of a sweep over cached samples asks for the same keys, and hashing them cost more
    than looking them up)."""
    if symmetric and b < a:
        a, b = b, a
    payload = f'{{"a":{_json_text(a)},"b":{_json_text(b)},"spec":{_json_text(spec_hash)}}}'
    return hashlib.sha256(payload.encode("ascii")).digest()


@lru_cache(maxsize=KEYS_KEPT)
def text_key(spec_hash: str, text: str) -> bytes:
    """Cache key of one text's token count under the scorer `spec_hash`."""
    payload = f'{{"spec":{_json_text(spec_hash)},"text":{_json_text(text)}}}'
    return hashlib.sha256(payload.encode("ascii")).digest()


_READ: dict[tuple[str, int, int], dict[bytes, float]] = {}  # per store: the pair scores this process has read


_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS specs (hash TEXT PRIMARY KEY, spec TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS pair_scores (key BLOB PRIMARY KEY, f1 REAL NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS text_lengths (
    key BLOB PRIMARY KEY, n_tokens INTEGER NOT NULL, truncated INTEGER NOT NULL
) WITHOUT ROWID;
"""
_SCHEMA_POSTGRESQL = postgres_schema(_SCHEMA)
_SCHEMAS = {SQLITE: _SCHEMA, POSTGRESQL: _SCHEMA_POSTGRESQL}
TABLES = ("specs", "pair_scores", "text_lengths")  # what export and import copy


class ScoreCache:
    """Pair scores and text lengths in a SQLite file (`":memory:"` keeps them in RAM only) or
    a PostgreSQL database (a ``postgresql://`` URL)."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        dialect = POSTGRESQL if is_url(self.path) else SQLITE
        if dialect == SQLITE:
            check_sqlite_path(self.path, "score cache")
        try:
            self._db = open_store(self.path, _SCHEMAS)
            self._db.execute("INSERT INTO meta VALUES ('schema', ?) ON CONFLICT DO NOTHING", (SCHEMA_VERSION,))
            found = self._db.execute("SELECT value FROM meta WHERE name='schema'").fetchone()[0]
        except database_errors(dialect) as err:
            fault = (
                sqlite_fault("score cache", self.path, err, self._advice)
                if dialect == SQLITE and isinstance(err, sqlite3.Error)
                else None
            )
            raise fault or ValueError(f"{self.path}: not a usable score cache ({err})") from None
        if found != SCHEMA_VERSION:
            raise ValueError(
                f"{self.path}: score cache schema {found}, expected {SCHEMA_VERSION}; "
                "move the file away to start a new cache"
            )

    @property
    def _advice(self) -> str:
        return f"move it aside (mv {self.path}* <elsewhere>/) and rerun: its scores are computed again"

    @contextmanager
    def _guard(self) -> Iterator[None]:
        """A SQLite file of another layout, with text that is not UTF-8 or on a full disk, met
        mid-run: one line naming it (a busy file passes unchanged)."""
        try:
            yield
        except sqlite3.OperationalError as exc:
            fault = sqlite_fault("score cache", self.path, exc, self._advice)
            if fault is None:
                raise
            raise fault from None

    @classmethod
    def in_dir(cls, cache_dir: str | Path) -> ScoreCache:
        """The score cache file inside a job's cache folder (or the store a URL names)."""
        return cls(cache_dir if is_url(cache_dir) else Path(cache_dir) / "bertscore.sqlite")

    def get_scores(self, keys: Sequence[bytes]) -> dict[bytes, float]:
        """The cached F1 of each key that has one. Values this process already read come from
        memory: an entry never changes once stored (content-addressed, first write kept), and a
        sweep's jobs read the same pairs."""
        store = self._identity()
        known = _READ.setdefault(store, {}) if store is not None else {}
        found = {k: known[k] for k in keys if k in known}
        rest = [k for k in keys if k not in found]
        if rest:
            fetched = dict(self._select("SELECT key, f1 FROM pair_scores", rest))
            if len(known) + len(fetched) > KEYS_KEPT * 8:
                known.clear()
            known.update(fetched)
            found.update(fetched)
        reads.note(reads.PAIRS, found)
        return found

    def _identity(self) -> tuple[str, int, int] | None:
        """The SQLite file this cache reads (path, device, inode: a file moved aside and made
        again is another); None for a database server or memory, whose reads are not kept."""
        if self._db.dialect != SQLITE or self.path == ":memory:":
            return None
        try:
            found = os.stat(self.path)
        except OSError:
            return None
        return (self.path, found.st_dev, found.st_ino)

    def put_scores(self, items: Iterable[tuple[bytes, float]]) -> None:
        """Store F1 values (a key already present keeps its value)."""
        items = list(items)
        reads.note(reads.PAIRS, (key for key, _ in items))
        self._insert("INSERT INTO pair_scores VALUES (?, ?) ON CONFLICT DO NOTHING", list(items))

    def get_lengths(self, keys: Sequence[bytes]) -> dict[bytes, tuple[int, bool]]:
        """Token count and truncation flag of each text key that has them."""
        rows = self._select("SELECT key, n_tokens, truncated FROM text_lengths", keys)
        reads.note(reads.LENGTHS, (row[0] for row in rows))
        return {k: (int(n), bool(t)) for k, n, t in rows}

    def put_lengths(self, items: Iterable[tuple[bytes, int, bool]]) -> None:
        """Store token counts and truncation flags (a key already present keeps its values)."""
        items = list(items)
        reads.note(reads.LENGTHS, (key for key, _, _ in items))
        self._insert(
            "INSERT INTO text_lengths VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            [(k, int(n), int(t)) for k, n, t in items],
        )

    def put_spec(self, spec_hash: str, spec: dict[str, Any]) -> None:
        """Record what a spec hash stands for (for people reading the cache)."""
        self._insert(
            "INSERT INTO specs VALUES (?, ?) ON CONFLICT DO NOTHING", [(spec_hash, json.dumps(spec, sort_keys=True))]
        )

    def __len__(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM pair_scores").fetchone()[0])

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> ScoreCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _select(self, query: str, keys: Sequence[Any], column: str = "key") -> list[tuple[Any, ...]]:
        rows: list[tuple[Any, ...]] = []
        unique = list(dict.fromkeys(keys))
        with self._guard():
            for start in range(0, len(unique), _CHUNK):
                chunk = unique[start : start + _CHUNK]
                marks = ",".join("?" * len(chunk))
                rows.extend(self._db.execute(f"{query} WHERE {column} IN ({marks})", chunk).fetchall())
        if self._db.dialect == POSTGRESQL:  # BYTEA reads back as memoryview
            rows = [(bytes(row[0]) if isinstance(row[0], memoryview) else row[0], *row[1:]) for row in rows]
        return rows

    def _insert(self, statement: str, rows: list[tuple[Any, ...]]) -> None:
        if not rows:
            return
        with self._guard(), self._db.transaction():
            for start in range(0, len(rows), 10_000):
                self._db.executemany(statement, rows[start : start + 10_000])

    def rows(self, table: str, size: int = 5_000, keys: Sequence[Any] | None = None) -> Iterator[list[tuple[Any, ...]]]:
        """Every row of ``table`` (one of :data:`TABLES`), ``size`` at a time (for export and
        import); with ``keys`` (or spec hashes), only those rows (a run bundle's)."""
        if table not in TABLES:
            raise ValueError(f"unknown score cache table {table!r}")
        if keys is not None:
            column = "hash" if table == "specs" else "key"
            found = self._select(f"SELECT * FROM {table}", list(keys), column)
            for start in range(0, len(found), size):
                yield found[start : start + size]
            return
        with self._guard():
            cursor = self._db.execute(f"SELECT * FROM {table}")
            while batch := cursor.fetchmany(size):
                yield [(bytes(row[0]) if isinstance(row[0], memoryview) else row[0], *row[1:]) for row in batch]

    def count(self, table: str) -> int:
        """How many rows ``table`` (one of :data:`TABLES`) holds."""
        if table not in TABLES:
            raise ValueError(f"unknown score cache table {table!r}")
        with self._guard():
            return int(self._db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])

    def add_rows(self, table: str, rows: list[tuple[Any, ...]]) -> int:
        """Insert ``rows`` into ``table`` (one transaction) where their key is new; how many were new."""
        if table not in TABLES or not rows:
            return 0
        marks = "(" + ",".join("?" * len(rows[0])) + ")"
        added = 0
        with self._guard(), self._db.transaction():
            for start in range(0, len(rows), 500):
                part = rows[start : start + 500]
                cursor = self._db.execute(
                    f"INSERT INTO {table} VALUES {','.join([marks] * len(part))} ON CONFLICT DO NOTHING",
                    [v for row in part for v in row],
                )
                added += max(cursor.rowcount, 0)
        return added
