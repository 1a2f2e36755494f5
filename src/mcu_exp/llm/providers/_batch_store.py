"""The record of provider batches (``batches.sqlite`` beside the generation cache).

A batch is recorded under its tag (:func:`~._batch_api.new_tag`) *before* the create call is
sent (state ``submitting``): the sample keys of each of its requests, and what those requests
were (their key parts and sample indices, as the cache's ``requests`` table keeps them). Once
the provider answers, the record takes the provider's batch id (state ``open``). A run that
never heard the answer, or the next run, looks the batch up by its tag before submitting
those samples again; a crash or Ctrl-C while the batch runs loses nothing either: the next
run finds the keys it still needs in an open batch and polls it instead of paying again.

A batch is closed (``done``) once every sample it brought is in the cache, the samples no
run asked for included (they are stored from the recorded requests); ``lost`` once it can
no longer be read (deleted, results expired), and ``unsent`` when a lookup shows the provider
never made it: its samples are then asked again. A closed batch keeps its keys, not its requests.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcu_exp.llm.cache_keys import canonical_json
from mcu_exp.llm.contract import GenerationRequest, Message
from mcu_exp.store.sqlite import close_shared, open_shared

STORE_FILE = "batches.sqlite"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS batches (
    id TEXT PRIMARY KEY,
    backend TEXT NOT NULL,
    model_id TEXT NOT NULL,
    state TEXT NOT NULL,
    created REAL NOT NULL,
    closed REAL
);
CREATE TABLE IF NOT EXISTS batch_items (
    batch_id TEXT NOT NULL,
    custom_id TEXT NOT NULL,
    keys TEXT NOT NULL,
    PRIMARY KEY (batch_id, custom_id)
);
CREATE TABLE IF NOT EXISTS batch_keys (
    key TEXT NOT NULL,
    batch_id TEXT NOT NULL,
    PRIMARY KEY (key, batch_id)
);
CREATE TABLE IF NOT EXISTS batch_requests (
    batch_id TEXT NOT NULL,
    request TEXT NOT NULL,
    parts TEXT NOT NULL,
    PRIMARY KEY (batch_id, request)
);
CREATE TABLE IF NOT EXISTS batch_item_requests (
    batch_id TEXT NOT NULL,
    custom_id TEXT NOT NULL,
    request TEXT NOT NULL,
    indices TEXT NOT NULL,
    PRIMARY KEY (batch_id, custom_id)
);
"""
_CHUNK = 500
_TABLES = ("batch_items", "batch_keys", "batch_requests", "batch_item_requests")


@dataclass(frozen=True)
class RecordedItem:
    """One request of a recorded batch: its sample keys in index order, and (in records written
    since requests are kept) its sample indices and its request's key parts."""

    keys: list[str]
    indices: list[int] | None = None
    parts: dict[str, Any] | None = None

    def request(self) -> GenerationRequest | None:
        """The request the item asked, rebuilt from its key parts; None where they were not kept."""
        if self.parts is None or self.indices is None:
            return None
        decoding = self.parts["decoding"]
        return GenerationRequest(
            messages=tuple(Message(str(m["role"]), str(m["content"])) for m in self.parts["messages"]),
            n=len(self.indices),
            temperature=float(decoding["temperature"]),
            top_p=float(decoding["top_p"]),
            max_new_tokens=int(decoding["max_new_tokens"]),
            stop=tuple(decoding["stop"]),
            seed=int(decoding["seed"]),
        )


@dataclass(frozen=True)
class RecordedBatch:
    """A recorded batch still to handle: ``open`` (submitted) or ``submitting`` (its create call
    unanswered: look it up by its tag, the record's id), and its requests by custom id."""

    state: str
    created: float
    items: dict[str, RecordedItem] = field(default_factory=dict)


class BatchStore:
    """Submitted batches of one backend and model, and the sample keys each request carries."""

    def __init__(self, path: str | Path, backend: str, model_id: str) -> None:
        self.path = Path(path)
        self.backend = backend
        self.model_id = model_id
        self.conn: sqlite3.Connection = open_shared(self.path, _SCHEMA)

    def intend(self, tag: str, items: Mapping[str, RecordedItem]) -> float:
        """Record a batch about to be submitted, under its ``tag`` (state ``submitting``): each
        request's ``custom_id`` with its sample keys, indices and key parts. Returns its time."""
        now = time.time()
        requests: dict[str, str] = {}
        links = []
        for cid, item in items.items():
            if item.parts is not None and item.indices is not None:
                blob = canonical_json(item.parts)
                rid = hashlib.sha256(blob.encode()).hexdigest()[:16]
                requests[rid] = blob
                links.append((tag, cid, rid, json.dumps(list(item.indices))))
        with self.conn:
            self.conn.execute(
                "INSERT OR REPLACE INTO batches (id, backend, model_id, state, created, closed) "
                "VALUES (?, ?, ?, 'submitting', ?, NULL)",
                (tag, self.backend, self.model_id, now),
            )
            self.conn.executemany(
                "INSERT OR REPLACE INTO batch_items (batch_id, custom_id, keys) VALUES (?, ?, ?)",
                [(tag, cid, json.dumps(list(item.keys))) for cid, item in items.items()],
            )
            self.conn.executemany(
                "INSERT OR IGNORE INTO batch_keys (key, batch_id) VALUES (?, ?)",
                [(key, tag) for item in items.values() for key in item.keys],
            )
            self.conn.executemany(
                "INSERT OR REPLACE INTO batch_requests VALUES (?, ?, ?)",
                [(tag, rid, blob) for rid, blob in requests.items()],
            )
            self.conn.executemany("INSERT OR REPLACE INTO batch_item_requests VALUES (?, ?, ?, ?)", links)
        return now

    def accept(self, tag: str, batch_id: str) -> None:
        """The provider made the batch recorded under ``tag``: record it under ``batch_id``, open."""
        with self.conn:
            self.conn.execute("UPDATE batches SET id = ?, state = 'open' WHERE id = ?", (batch_id, tag))
            for table in _TABLES:
                self.conn.execute(f"UPDATE {table} SET batch_id = ? WHERE batch_id = ?", (batch_id, tag))

    def known(self, batch_ids: Iterable[str]) -> set[str]:
        """Those of ``batch_ids`` recorded here (for any backend or model)."""
        ids = list(dict.fromkeys(batch_ids))
        found: set[str] = set()
        for start in range(0, len(ids), _CHUNK):
            part = ids[start : start + _CHUNK]
            rows = self.conn.execute(f"SELECT id FROM batches WHERE id IN ({','.join('?' * len(part))})", part)
            found.update(row[0] for row in rows)
        return found

    def open_batches(self, keys: Iterable[str]) -> dict[str, RecordedBatch]:
        """The open or still-submitting batches of this backend and model that carry any of
        ``keys``, by batch id (the tag of one still submitting), with every request they hold."""
        wanted = list(dict.fromkeys(keys))
        ids: set[str] = set()
        for start in range(0, len(wanted), _CHUNK):
            part = wanted[start : start + _CHUNK]
            marks = ",".join("?" * len(part))
            rows = self.conn.execute(
                f"SELECT DISTINCT k.batch_id FROM batch_keys k JOIN batches b ON b.id = k.batch_id "
                f"WHERE b.state IN ('open', 'submitting') AND b.backend = ? AND b.model_id = ? "
                f"AND k.key IN ({marks})",
                (self.backend, self.model_id, *part),
            )
            ids.update(row[0] for row in rows)
        found: dict[str, RecordedBatch] = {}
        for batch_id in sorted(ids):
            state, created = self.conn.execute(
                "SELECT state, created FROM batches WHERE id = ?", (batch_id,)
            ).fetchone()
            parts = {
                rid: json.loads(blob)
                for rid, blob in self.conn.execute(
                    "SELECT request, parts FROM batch_requests WHERE batch_id = ?", (batch_id,)
                )
            }
            links = {
                cid: (rid, json.loads(indices))
                for cid, rid, indices in self.conn.execute(
                    "SELECT custom_id, request, indices FROM batch_item_requests WHERE batch_id = ?", (batch_id,)
                )
            }
            items = {}
            for cid, blob in self.conn.execute(
                "SELECT custom_id, keys FROM batch_items WHERE batch_id = ?", (batch_id,)
            ):
                rid, indices = links.get(cid, (None, None))
                items[cid] = RecordedItem(json.loads(blob), indices, parts.get(rid) if rid else None)
            found[batch_id] = RecordedBatch(state, float(created), items)
        return found

    def close_batch(self, batch_id: str, state: str = "done") -> None:
        """Mark a batch handled (``done``), unreadable (``lost``) or never made (``unsent``): it is
        never polled again, and the requests kept for it are dropped."""
        with self.conn:
            self.conn.execute("UPDATE batches SET state = ?, closed = ? WHERE id = ?", (state, time.time(), batch_id))
            for table in ("batch_requests", "batch_item_requests"):
                self.conn.execute(f"DELETE FROM {table} WHERE batch_id = ?", (batch_id,))

    def states(self) -> dict[str, str]:
        """Every recorded batch id of this backend and model with its state (for tests and logs)."""
        rows = self.conn.execute(
            "SELECT id, state FROM batches WHERE backend = ? AND model_id = ?", (self.backend, self.model_id)
        )
        return dict(rows.fetchall())

    def close(self) -> None:
        """Close the connection (the pages of dropped requests given back first: :func:`close_shared`)."""
        close_shared(self.conn)
