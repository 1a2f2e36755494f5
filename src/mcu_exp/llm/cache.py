"""Content-addressed, append-as-you-go cache of generated samples: one SQLite file (the
default) or a PostgreSQL database shared by many machines (``cache.url``).

A sample's key hashes everything that changes what the model writes: the backend identity
(model and weights), every decoding parameter, the messages and the sample index. It leaves
out ``n`` (raising ``n`` reuses the samples already made) and anything that does not change
the text (timeouts, retries). The samples of each response are committed together as they
arrive (:meth:`GenerationCache.put_responses`), so a crash loses at most the samples in
flight. WAL mode plus a busy timeout let several processes of a sweep read and write the
same file at once; on PostgreSQL, processes on any host share the tables the same way
(:mod:`mcu_exp.store.sql` runs the same SQL on both).

What a key is made of is kept for inspection: a request's parts (backend, decoding, messages)
once in ``requests`` (under ``id``, the first 16 hex digits of their sha256), each sample's
``parts`` as ``{"index": i, "request": id}``; rows written by older versions (or by
:meth:`GenerationCache.put`) hold the full parts. New files store ``samples`` and ``claims``
without a rowid (each key is stored once); older files are read and written unchanged.

Failed samples (errors, filtered, empty: :attr:`Sample.failure`) go to a ``failures`` table,
never to ``samples``, so a rerun asks for them again; a legacy empty row in ``samples`` is
not a hit and is replaced by the next good sample. A text no database column can hold (a NUL
byte, a lone surrogate) is stored as its JSON string literal, its key listed in ``escaped``
(:mod:`mcu_exp.llm.stored_text`): a sample paid for is kept whatever it holds. ``claims``
holds a lease per key (owner, PID space in ``host``, pid, expiry), so two processes sharing
the file, in one container or several, never generate, and pay for, the same sample: see
:meth:`GenerationCache.claim`.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mcu_exp.llm.cache_keys import (  # noqa: F401  (the key helpers' first home: still importable from here)
    canonical_json,
    key_parts,
    request_parts,
    sample_key,
    sample_keys,
)
from mcu_exp.llm.claims import ClaimOwner, holder_name, lease_free
from mcu_exp.llm.contract import Sample
from mcu_exp.llm.errors import CacheCorrupt
from mcu_exp.llm.stored_text import escape_rows, storable, storable_json, unescape
from mcu_exp.store import reads
from mcu_exp.store.faults import check_sqlite_path, sqlite_fault
from mcu_exp.store.sql import (
    POSTGRESQL,
    SQLITE,
    Store,
    database_errors,
    is_url,
    open_store,
    postgres_schema,
)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS samples (
    key TEXT PRIMARY KEY,
    text TEXT NOT NULL,
    finish_reason TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    created REAL NOT NULL,
    parts TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS requests (
    id TEXT PRIMARY KEY,
    parts TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS failures (
    key TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    text TEXT NOT NULL,
    finish_reason TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    attempts INTEGER NOT NULL,
    created REAL NOT NULL,
    parts TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS claims (
    key TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    expires REAL NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS escaped (
    key TEXT PRIMARY KEY
) WITHOUT ROWID;
"""
# PostgreSQL: the same tables, and an index for releasing one owner's leases.
_SCHEMA_POSTGRESQL = postgres_schema(_SCHEMA) + "CREATE INDEX IF NOT EXISTS claims_owner ON claims (owner);\n"
_SCHEMAS = {SQLITE: _SCHEMA, POSTGRESQL: _SCHEMA_POSTGRESQL}
# What moves between caches (``mcu-exp cache export/import``), in that order: failures are
# asked again by the next run anyway, and claims belong to processes of one store.
EXPORTED = {
    "requests": "SELECT id, parts FROM requests",
    "samples": "SELECT key, text, finish_reason, prompt_tokens, completion_tokens, created, parts FROM samples",
}
CACHE_FILE = "generations.sqlite"  # the SQLite file's name in a job's cache.dir
_CHUNK = 500
_ROWS = 500  # rows per multi-row statement (each statement is one round through the database)
_PUT_SAMPLES = (
    "INSERT INTO samples VALUES {values} ON CONFLICT(key) DO UPDATE SET text = excluded.text, "
    "finish_reason = excluded.finish_reason, prompt_tokens = excluded.prompt_tokens, "
    "completion_tokens = excluded.completion_tokens, created = excluded.created WHERE {blank}"
)
_CLAIM = (
    "INSERT INTO claims VALUES (?, ?, ?, ?, ?) ON CONFLICT(key) DO UPDATE SET owner = excluded.owner, "
    "host = excluded.host, pid = excluded.pid, expires = excluded.expires"
)
_IS_ESCAPED = "EXISTS (SELECT 1 FROM escaped WHERE escaped.key = samples.key)"  # text is a JSON literal
_MARK_ESCAPED = (
    "INSERT INTO escaped SELECT key FROM samples WHERE key = ? AND text = ? "
    "ON CONFLICT DO NOTHING"
)  # only where the escaped text was the one stored
_PUT_FAILURE = (
    "INSERT INTO failures VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?) ON CONFLICT(key) DO UPDATE SET "
    "kind = excluded.kind, text = excluded.text, finish_reason = excluded.finish_reason, "
    "prompt_tokens = excluded.prompt_tokens, completion_tokens = excluded.completion_tokens, "
    "attempts = failures.attempts + 1, created = excluded.created"
)


class _Rows:
    """Rows of an iterator read like a cursor's ``fetchmany``."""

    def __init__(self, rows: Iterator[tuple[Any, ...]]) -> None:
        self._rows = rows

    def fetchmany(self, size: int) -> list[tuple[Any, ...]]:
        return [row for _, row in zip(range(size), self._rows)]


def _broken(name: str, dialect: str, exc: BaseException) -> CacheCorrupt:
    """The one-line error of a cache database that failed under us."""
    if dialect == POSTGRESQL:
        first = next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
        return CacheCorrupt(
            f"generation cache {name}: the database failed ({first}); what was stored "
            "before is kept: rerun to resume once it is reachable"
        )
    return CacheCorrupt(f"generation cache {name} is not a readable SQLite database ({exc})", _move_aside(name))


def _move_aside(name: str) -> str:
    """A job's advice for a cache file it cannot use."""
    return (
        f"move it aside with its -wal and -shm files (mv {name}* <elsewhere>/) and rerun: "
        "its samples are generated again"
    )


class GenerationCache:
    """Samples by key in one SQLite file (a path) or a PostgreSQL database (a
    ``postgresql://`` URL); safe to share between processes, on PostgreSQL between hosts."""

    def __init__(self, location: str | Path) -> None:
        self.path: str | Path = location if is_url(location) else Path(location)
        dialect = POSTGRESQL if is_url(location) else SQLITE
        self._stored_requests: set[str] = set()  # ids known to be in ``requests``
        if dialect == SQLITE:
            check_sqlite_path(self.path, "generation cache")
        with self._guard(dialect, str(self.path)):
            self._db: Store = open_store(self.path, _SCHEMAS)
            # SQLite: reading every page finds a corrupt file now, not mid-run. PostgreSQL checks its
            # own pages, and counting a shared table of millions of rows at every open is a full scan.
            probe = "SELECT COUNT(*) FROM samples" if dialect == SQLITE else "SELECT 1 FROM samples LIMIT 1"
            self._db.execute(probe).fetchone()
            self._db.execute(EXPORTED["samples"] + " LIMIT 0").fetchall()  # a samples table of another layout
        self._blank = self._db.blank("samples.text")

    @property
    def dialect(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return self._db.dialect

    @contextmanager
    def _guard(self, dialect: str | None = None, name: str | None = None) -> Iterator[None]:
        """Turn a corrupt file (or a PostgreSQL server that failed) met mid-run into a one-line
        :class:`CacheCorrupt` (a busy SQLite file or a value it cannot store is no corruption:
        those pass unchanged)."""
        dialect = dialect or self._db.dialect
        try:
            yield
        except sqlite3.OperationalError as exc:  # a busy file passes; a file of another layout, a full disk do not
            fault = sqlite_fault("generation cache", name or self._db.name, exc, _move_aside(name or self._db.name))
            if fault is None:
                raise
            raise CacheCorrupt(fault.fact, fault.advice) from None
        except (sqlite3.ProgrammingError, sqlite3.IntegrityError):
            raise
        except database_errors(dialect) as exc:
            raise _broken(name or self._db.name, dialect, exc) from None

    def _rows(self, sql: str, keys: list[str], *args: Any) -> Iterator[tuple[Any, ...]]:
        """``sql`` (with ``{marks}`` for the keys) run over ``keys`` in chunks."""
        for start in range(0, len(keys), _CHUNK):
            chunk = keys[start : start + _CHUNK]
            yield from self._db.execute(sql.format(marks=",".join("?" * len(chunk))), [*chunk, *args])

    def get_many(self, keys: Iterable[str]) -> dict[str, Sample]:
        """The cached usable samples among ``keys`` (absent or legacy empty ones are left out)."""
        found: dict[str, Sample] = {}
        sql = (
            f"SELECT key, text, finish_reason, prompt_tokens, completion_tokens, {_IS_ESCAPED} "
            "FROM samples WHERE key IN ({marks})"
        )
        with self._guard():
            for key, text, reason, prompt_tokens, completion_tokens, escaped in self._rows(
                sql, list(dict.fromkeys(keys))
            ):
                sample = Sample(unescape(text) if escaped else text, reason, prompt_tokens, completion_tokens)
                if sample.failure is None:
                    found[key] = sample
        reads.note(reads.SAMPLES, found)
        return found

    def failures_since(self, keys: Iterable[str], since: float) -> dict[str, Sample]:
        """The failed samples among ``keys`` recorded at or after ``since`` (a peer's this run)."""
        sql = (
            "SELECT key, text, finish_reason, prompt_tokens, completion_tokens "
            "FROM failures WHERE key IN ({marks}) AND created >= ?"
        )
        with self._guard():
            return {
                key: Sample(text, reason, p, c)
                for key, text, reason, p, c in self._rows(sql, list(dict.fromkeys(keys)), since)
            }

    def put(self, key: str, sample: Sample, parts: Mapping[str, Any] | None = None) -> bool:
        """Store one sample in its own transaction.

        A failed sample (error, filtered, empty) is recorded in ``failures`` and never served
        as a hit. Returns whether a usable sample was written (False for a failure or a key
        already holding one).
        """
        return self.put_many([(key, sample, parts)]) == 1

    def put_many(self, rows: Iterable[tuple[str, Sample, Mapping[str, Any] | None]]) -> int:
        """Store ``(key, sample, parts)`` rows in one transaction (all or none); how many
        usable samples were written. Each row is handled as :meth:`put` handles one."""
        stored = [(key, sample, storable_json(canonical_json(parts or {}), parts or {})) for key, sample, parts in rows]
        with self._guard(), self._transaction():
            return self._write(stored)

    def put_responses(self, responses: Iterable[tuple[Mapping[str, Any], Sequence[tuple[str, int, Sample]]]]) -> int:
        """Store the ``(key, index, sample)`` rows of several responses in one transaction.

        Each response comes with its request's shared key parts (:func:`request_parts`), kept
        once in ``requests``; a sample's ``parts`` is ``{"index": i, "request": id}``. Returns
        how many usable samples were written.
        """
        rows: list[tuple[str, Sample, str]] = []
        new: dict[str, str] = {}
        for parts, samples in responses:
            blob = canonical_json(parts)
            rid = hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()[:16]
            if rid not in self._stored_requests:
                new[rid] = storable_json(blob, parts)
            rows += [(key, sample, f'{{"index":{int(index)},"request":"{rid}"}}') for key, index, sample in samples]
        with self._guard(), self._transaction():
            items = sorted(new.items())
            for start in range(0, len(items), _ROWS):
                part = items[start : start + _ROWS]
                self._db.execute(
                    "INSERT INTO requests VALUES " + ",".join(["(?,?)"] * len(part)) + " ON CONFLICT DO NOTHING",
                    [value for item in part for value in item],
                )
            written = self._write(rows)
        self._stored_requests.update(new)  # only once committed
        return written

    def _write(self, rows: list[tuple[str, Sample, str]]) -> int:
        """Insert ``(key, sample, parts JSON)`` rows inside the caller's transaction, a few
        statements for all of them (each SQLite call lets the network thread take the GIL).

        A key met twice keeps its first usable sample (as a second put of it would); rows go in
        key order, so two PostgreSQL writers overlapping on some keys lock them in one order.
        A text no database can hold is stored escaped (:mod:`mcu_exp.llm.stored_text`).
        """
        now = time.time()
        stored = int(now)  # a sample's time in whole seconds: 4 bytes a row where a float takes 8
        good: dict[str, tuple[Any, ...]] = {}
        for key, s, blob in rows:
            if s.failure is None and key not in good:
                good[key] = (key, s.text, s.finish_reason, s.prompt_tokens, s.completion_tokens, stored, blob)
        reads.note(reads.SAMPLES, good)
        escaped = escape_rows(good, 1)
        bad = [
            (key, s.failure, storable(s.text), s.finish_reason, s.prompt_tokens, s.completion_tokens, now, blob)
            for key, s, blob in rows
            if s.failure is not None
        ]
        ordered = [good[key] for key in sorted(good)] if self._db.dialect == POSTGRESQL else list(good.values())
        written = 0
        for start in range(0, len(ordered), _ROWS):
            part = ordered[start : start + _ROWS]
            cursor = self._db.execute(
                _PUT_SAMPLES.format(values=",".join(["(?,?,?,?,?,?,?)"] * len(part)), blank=self._blank),
                [value for row in part for value in row],
            )
            written += max(cursor.rowcount, 0)
            self._db.execute(
                f"DELETE FROM failures WHERE key IN ({','.join('?' * len(part))})", [row[0] for row in part]
            )
        self._db.executemany(_PUT_FAILURE, bad)
        self._db.executemany(_MARK_ESCAPED, escaped)
        return written

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """One write transaction (taken at once, so a busy peer makes it wait, never fail later)."""
        with self._db.transaction():
            yield

    def claim(self, keys: Iterable[str], owner: ClaimOwner, ttl_s: float, since: float) -> set[str]:
        """Lease the ``keys`` nobody else holds for ``ttl_s`` seconds; the ones leased.

        A key is skipped while another owner's lease is live, or once it holds a usable sample
        or a failure recorded since ``since``. A lease is free once expired, or at once when
        its holder's pid is gone from this process's PID space (:func:`lease_free`).
        """
        wanted = list(dict.fromkeys(keys))
        now = time.time()
        with self._guard(), self._db.transaction(exclusive="claims"):
            settled = {
                row[0]
                for row in self._rows(f"SELECT key FROM samples WHERE key IN ({{marks}}) AND NOT {self._blank}", wanted)
            }
            settled |= {
                row[0]
                for row in self._rows("SELECT key FROM failures WHERE key IN ({marks}) AND created >= ?", wanted, since)
            }
            held = {
                row[0]: row[1:]
                for row in self._rows(
                    "SELECT key, owner, host, pid, expires FROM claims WHERE key IN ({marks})", wanted
                )
            }
            mine = {key for key in wanted if key not in settled and lease_free(held.get(key), owner, now)}
            self._db.executemany(_CLAIM, [(key, owner.id, owner.host, owner.pid, now + ttl_s) for key in sorted(mine)])
        return mine

    def holders(self, keys: Iterable[str]) -> list[str]:
        """``host:pid`` of every owner holding a lease on some of ``keys``."""
        with self._guard():
            rows = self._rows("SELECT DISTINCT host, pid FROM claims WHERE key IN ({marks})", list(keys))
            return sorted({holder_name(host, pid) for host, pid in rows})

    def release(self, owner: ClaimOwner) -> None:
        """Drop every lease ``owner`` holds."""
        with self._guard():
            self._db.execute("DELETE FROM claims WHERE owner = ?", (owner.id,))

    @contextmanager
    def keep_claims(self, owner: ClaimOwner, ttl_s: float) -> Iterator[None]:
        """Renew ``owner``'s leases every ``ttl_s / 3`` seconds (own thread and connection) until exit."""
        stop = threading.Event()

        def renew() -> None:
            store = self._db.reopen()
            try:
                while not stop.wait(ttl_s / 3):
                    store.execute("UPDATE claims SET expires = ? WHERE owner = ?", (time.time() + ttl_s, owner.id))
            finally:
                store.close()

        thread = threading.Thread(target=renew, name="mcu-exp-claims", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join(timeout=5.0)

    def rows(self, table: str, size: int = 5_000, keys: Sequence[str] | None = None) -> Iterator[list[tuple[Any, ...]]]:
        """Every row of ``table`` (one of :data:`EXPORTED`), ``size`` at a time, in the
        columns :meth:`add_rows` takes; legacy blank samples are left out. With ``keys``
        (sample keys, or request ids), only those rows (a run bundle's)."""
        if table not in EXPORTED:
            raise ValueError(f"unknown generation cache table {table!r}")
        samples = table == "samples"
        sql = EXPORTED[table]
        if samples:
            sql = sql.replace(" FROM", f", {_IS_ESCAPED} FROM") + f" WHERE NOT {self._blank}"
        if keys is not None:
            sql += (" AND " if samples else " WHERE ") + ("key" if samples else "id") + " IN ({marks})"
        with self._guard():
            cursor = self._db.execute(sql) if keys is None else _Rows(self._rows(sql, sorted(keys)))
            while batch := cursor.fetchmany(size):
                if samples:  # the texts themselves, escaped again by the destination where needed
                    yield [(row[0], unescape(row[1]) if row[-1] else row[1], *row[2:-1]) for row in batch]
                else:
                    yield [tuple(row) for row in batch]

    def count(self, table: str) -> int:
        """How many rows ``table`` (one of :data:`EXPORTED`) holds."""
        if table not in EXPORTED:
            raise ValueError(f"unknown generation cache table {table!r}")
        with self._guard():
            return int(self._db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])

    def add_rows(self, table: str, rows: Sequence[tuple[Any, ...]]) -> int:
        """Insert rows read by :meth:`rows` from another cache, in one transaction: a request
        already here is kept, a sample replaces only a legacy blank one. How many were new."""
        if table not in EXPORTED:
            raise ValueError(f"unknown generation cache table {table!r}")
        unique = {row[0]: row for row in reversed(rows)}  # one row a key (the first), in key order
        samples = table == "samples"
        escaped = escape_rows(unique, 1) if samples else []
        ordered = [unique[key] for key in sorted(unique)]
        added = 0
        with self._guard(), self._transaction():
            for start in range(0, len(ordered), _ROWS):
                part = ordered[start : start + _ROWS]
                values = ",".join(["(" + ",".join("?" * len(part[0])) + ")"] * len(part))
                sql = (
                    _PUT_SAMPLES.format(values=values, blank=self._blank)
                    if samples
                    else f"INSERT INTO requests VALUES {values} ON CONFLICT DO NOTHING"
                )
                added += max(self._db.execute(sql, [v for row in part for v in row]).rowcount, 0)
            self._db.executemany(_MARK_ESCAPED, escaped)
        return added

    def __len__(self) -> int:
        with self._guard():
            return int(self._db.execute("SELECT COUNT(*) FROM samples").fetchone()[0])

    def close(self) -> None:
        """Close the connection (the file or database stays)."""
        self._db.close()

    def __enter__(self) -> GenerationCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_generation_cache(
    cache_dir: str | Path, url: str | None = None, existing: bool = False
) -> GenerationCache | None:
    """A job's generation cache: the PostgreSQL store at ``url`` when given, else
    :data:`CACHE_FILE` in ``cache_dir``. With ``existing``, None when that file does not exist
    yet (a preview opens nothing it would create)."""
    if url:
        return GenerationCache(url)
    path = Path(cache_dir) / CACHE_FILE
    if existing and not path.is_file():
        return None
    return GenerationCache(path)
