"""Content-addressed, append-as-you-go cache of generated samples (one SQLite file).

A sample's key hashes everything that changes what the model writes: the backend identity
(model and weights), every decoding parameter, the messages and the sample index. It leaves
out ``n`` (raising ``n`` reuses the samples already made) and anything that does not change
the text (timeouts, retries). The samples of each response are committed together as they
arrive (:meth:`GenerationCache.put_responses`), so a crash loses at most the samples in
flight. WAL mode plus a busy timeout let several processes of a sweep read and write the
same file at once.

What a key is made of is kept for inspection: a request's parts (backend, decoding, messages)
once in ``requests`` (under ``id``, the first 16 hex digits of their sha256), each sample's
``parts`` as ``{"index": i, "request": id}``; rows written by older versions (or by
:meth:`GenerationCache.put`) hold the full parts. New files store ``samples`` and ``claims``
without a rowid (each key is stored once); older files are read and written unchanged.

Failed samples (errors, filtered, empty: :attr:`Sample.failure`) go to a ``failures`` table,
never to ``samples``, so a rerun asks for them again; a legacy empty row in ``samples`` is
not a hit and is replaced by the next good sample. ``claims`` holds a lease per key (owner,
host, pid, expiry), so two processes sharing the file never generate, and pay for, the same
sample: see :meth:`GenerationCache.claim`.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcu_exp.llm.contract import GenerationRequest, Sample
from mcu_exp.llm.errors import CacheCorrupt
from mcu_exp.sqlite_store import open_shared

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
"""
_CHUNK = 500
_BLANK = "trim(samples.text, ' ' || char(9, 10, 13)) = ''"
_ROWS = 500  # rows per multi-row statement (each statement is one round through SQLite)
_PUT_SAMPLES = (
    "INSERT INTO samples VALUES {values} ON CONFLICT(key) DO UPDATE SET text = excluded.text, "
    "finish_reason = excluded.finish_reason, prompt_tokens = excluded.prompt_tokens, "
    f"completion_tokens = excluded.completion_tokens, created = excluded.created WHERE {_BLANK}"
)
_PUT_FAILURE = (
    "INSERT INTO failures VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?) ON CONFLICT(key) DO UPDATE SET "
    "kind = excluded.kind, text = excluded.text, finish_reason = excluded.finish_reason, "
    "prompt_tokens = excluded.prompt_tokens, completion_tokens = excluded.completion_tokens, "
    "attempts = failures.attempts + 1, created = excluded.created"
)


def key_parts(identity: Mapping[str, Any], request: GenerationRequest, index: int) -> dict[str, Any]:
    """What a sample's key is made of."""
    return {
        "backend": dict(identity),
        "decoding": request.decoding(),
        "messages": [{"role": m.role, "content": m.content} for m in request.messages],
        "index": int(index),
    }


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no spaces: equal values give equal strings."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sample_key(identity: Mapping[str, Any], request: GenerationRequest, index: int) -> str:
    """sha256 of the canonical JSON of :func:`key_parts`."""
    return hashlib.sha256(canonical_json(key_parts(identity, request, index)).encode()).hexdigest()


_INDEX = '"index":'


def sample_keys(identity: Mapping[str, Any], request: GenerationRequest, indices: Iterable[int]) -> list[str]:
    """:func:`sample_key` of each of ``indices``, encoding the request's JSON once.

    The canonical JSON of the parts is ``{"backend":…,"decoding":…,"index":I,"messages":…}``
    (sorted keys), so only the digits of ``I`` differ between samples; the messages' strings
    are escaped, so the last ``"index":0,"messages":`` is the top-level one.
    """
    text = canonical_json(key_parts(identity, request, 0))
    cut = text.rfind(_INDEX + '0,"messages":')
    if cut < 0:  # a layout this shortcut does not know: the plain way
        return [sample_key(identity, request, index) for index in indices]
    cut += len(_INDEX)
    head = hashlib.sha256(text[:cut].encode())
    tail = text[cut + 1:].encode()
    keys = []
    for index in indices:
        digest = head.copy()
        digest.update(b"%d" % int(index) + tail)
        keys.append(digest.hexdigest())
    return keys


def request_parts(identity: Mapping[str, Any], request: GenerationRequest) -> dict[str, Any]:
    """What every sample key of ``request`` shares: :func:`key_parts` without the index."""
    parts = key_parts(identity, request, 0)
    del parts["index"]
    return parts


@dataclass(frozen=True)
class ClaimOwner:
    """Who holds a claim: one generator of one process on one host."""

    host: str = field(default_factory=socket.gethostname)
    pid: int = field(default_factory=os.getpid)
    token: str = field(default_factory=lambda: uuid.uuid4().hex[:12])

    @property
    def id(self) -> str:
        return f"{self.host}:{self.pid}:{self.token}"


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this host (a process we may not signal counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _corrupt(path: Path, exc: BaseException) -> CacheCorrupt:
    return CacheCorrupt(
        f"generation cache {path} is not a readable SQLite database ({exc}); move it aside with its "
        f"-wal and -shm files (mv {path}* <elsewhere>/) and rerun: its samples are generated again"
    )


class GenerationCache:
    """Samples by key in one SQLite file; safe to share between processes."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            self._conn = open_shared(self.path, _SCHEMA, autocommit=True)
            self._stored_requests: set[str] = set()  # ids known to be in ``requests``
            self._conn.execute("SELECT COUNT(*) FROM samples").fetchone()
        except sqlite3.OperationalError:
            raise
        except sqlite3.DatabaseError as exc:
            raise _corrupt(self.path, exc) from None

    @contextmanager
    def _guard(self) -> Iterator[None]:
        """Turn a corrupt file met mid-run into a one-line :class:`CacheCorrupt` (a busy file
        or a value SQLite cannot store is no corruption: those pass unchanged)."""
        try:
            yield
        except (sqlite3.OperationalError, sqlite3.ProgrammingError, sqlite3.IntegrityError):
            raise
        except sqlite3.DatabaseError as exc:
            raise _corrupt(self.path, exc) from None

    def _rows(self, sql: str, keys: list[str], *args: Any) -> Iterator[tuple[Any, ...]]:
        """``sql`` (with ``{marks}`` for the keys) run over ``keys`` in chunks."""
        for start in range(0, len(keys), _CHUNK):
            chunk = keys[start : start + _CHUNK]
            yield from self._conn.execute(sql.format(marks=",".join("?" * len(chunk))), [*chunk, *args])

    def get_many(self, keys: Iterable[str]) -> dict[str, Sample]:
        """The cached usable samples among ``keys`` (absent or legacy empty ones are left out)."""
        found: dict[str, Sample] = {}
        sql = ("SELECT key, text, finish_reason, prompt_tokens, completion_tokens "
               "FROM samples WHERE key IN ({marks})")
        with self._guard():
            for key, text, reason, prompt_tokens, completion_tokens in self._rows(sql, list(dict.fromkeys(keys))):
                sample = Sample(text, reason, prompt_tokens, completion_tokens)
                if sample.failure is None:
                    found[key] = sample
        return found

    def failures_since(self, keys: Iterable[str], since: float) -> dict[str, Sample]:
        """The failed samples among ``keys`` recorded at or after ``since`` (a peer's this run)."""
        sql = ("SELECT key, text, finish_reason, prompt_tokens, completion_tokens "
               "FROM failures WHERE key IN ({marks}) AND created >= ?")
        with self._guard():
            return {key: Sample(text, reason, p, c)
                    for key, text, reason, p, c in self._rows(sql, list(dict.fromkeys(keys)), since)}

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
        rows = [(key, sample, canonical_json(parts or {})) for key, sample, parts in rows]
        with self._guard(), self._transaction():
            return self._write(rows)

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
            rid = hashlib.sha256(blob.encode()).hexdigest()[:16]
            if rid not in self._stored_requests:
                new[rid] = blob
            rows += [(key, sample, f'{{"index":{int(index)},"request":"{rid}"}}') for key, index, sample in samples]
        with self._guard(), self._transaction():
            items = list(new.items())
            for start in range(0, len(items), _ROWS):
                part = items[start : start + _ROWS]
                self._conn.execute("INSERT OR IGNORE INTO requests VALUES " + ",".join(["(?,?)"] * len(part)),
                                   [value for item in part for value in item])
            written = self._write(rows)
        self._stored_requests.update(new)  # only once committed
        return written

    def _write(self, rows: list[tuple[str, Sample, str]]) -> int:
        """Insert ``(key, sample, parts JSON)`` rows inside the caller's transaction, a few
        statements for all of them (each SQLite call lets the network thread take the GIL)."""
        now = time.time()
        good = [(key, s.text, s.finish_reason, s.prompt_tokens, s.completion_tokens, now, blob)
                for key, s, blob in rows if s.failure is None]
        bad = [(key, s.failure, s.text, s.finish_reason, s.prompt_tokens, s.completion_tokens, now, blob)
               for key, s, blob in rows if s.failure is not None]
        written = 0
        for start in range(0, len(good), _ROWS):
            part = good[start : start + _ROWS]
            before = self._conn.total_changes
            self._conn.execute(_PUT_SAMPLES.format(values=",".join(["(?,?,?,?,?,?,?)"] * len(part))),
                               [value for row in part for value in row])
            written += self._conn.total_changes - before
            self._conn.execute(f"DELETE FROM failures WHERE key IN ({','.join('?' * len(part))})",
                               [row[0] for row in part])
        self._conn.executemany(_PUT_FAILURE, bad)
        return written

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """One write transaction (taken at once, so a busy peer makes it wait, never fail later)."""
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            if self._conn.in_transaction:  # an error SQLite rolled back itself leaves none
                self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    def claim(self, keys: Iterable[str], owner: ClaimOwner, ttl_s: float, since: float) -> set[str]:
        """Lease the ``keys`` nobody else holds for ``ttl_s`` seconds; the ones leased.

        A key is skipped while another owner's lease is live, or once it holds a usable sample
        or a failure recorded since ``since``. A lease is free once expired, or at once when
        its holder's pid is gone on this host.
        """
        wanted = list(dict.fromkeys(keys))
        now = time.time()
        with self._guard(), self._transaction():
            settled = {row[0] for row in self._rows(
                f"SELECT key FROM samples WHERE key IN ({{marks}}) AND NOT {_BLANK}", wanted)}
            settled |= {row[0] for row in self._rows(
                "SELECT key FROM failures WHERE key IN ({marks}) AND created >= ?", wanted, since)}
            held = {row[0]: row[1:] for row in self._rows(
                "SELECT key, owner, host, pid, expires FROM claims WHERE key IN ({marks})", wanted)}
            mine = {key for key in wanted if key not in settled and _free(held.get(key), owner, now)}
            self._conn.executemany(
                "INSERT OR REPLACE INTO claims VALUES (?, ?, ?, ?, ?)",
                [(key, owner.id, owner.host, owner.pid, now + ttl_s) for key in mine],
            )
        return mine

    def holders(self, keys: Iterable[str]) -> list[str]:
        """``host:pid`` of every owner holding a lease on some of ``keys``."""
        with self._guard():
            rows = self._rows("SELECT DISTINCT host, pid FROM claims WHERE key IN ({marks})", list(keys))
            return sorted({f"{host}:{pid}" for host, pid in rows})

    def release(self, owner: ClaimOwner) -> None:
        """Drop every lease ``owner`` holds."""
        with self._guard():
            self._conn.execute("DELETE FROM claims WHERE owner = ?", (owner.id,))

    @contextmanager
    def keep_claims(self, owner: ClaimOwner, ttl_s: float) -> Iterator[None]:
        """Renew ``owner``'s leases every ``ttl_s / 3`` seconds (own thread and connection) until exit."""
        stop = threading.Event()

        def renew() -> None:
            conn = open_shared(self.path, _SCHEMA, autocommit=True)
            try:
                while not stop.wait(ttl_s / 3):
                    conn.execute("UPDATE claims SET expires = ? WHERE owner = ?", (time.time() + ttl_s, owner.id))
            finally:
                conn.close()

        thread = threading.Thread(target=renew, name="mcu-exp-claims", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join(timeout=5.0)

    def __len__(self) -> int:
        with self._guard():
            return int(self._conn.execute("SELECT COUNT(*) FROM samples").fetchone()[0])

    def close(self) -> None:
        """Close the connection (the file stays)."""
        self._conn.close()

    def __enter__(self) -> GenerationCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _free(lease: tuple[Any, ...] | None, owner: ClaimOwner, now: float) -> bool:
    """Whether a key under ``lease`` (owner id, host, pid, expiry) may be taken by ``owner``."""
    if lease is None:
        return True
    holder, host, pid, expires = lease
    return holder == owner.id or expires < now or (host == owner.host and not pid_alive(int(pid)))
