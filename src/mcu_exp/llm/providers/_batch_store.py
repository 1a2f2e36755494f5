"""The record of submitted provider batches (``batches.sqlite`` beside the generation cache).

A batch is recorded, with the sample keys of each of its requests, the moment the provider
accepts it and before it is polled, so a crash or Ctrl-C while it runs loses nothing: the
next run finds the keys it still needs in an open batch and polls that batch instead of
submitting (and paying for) the requests again. A batch is closed once every sample it
brought has been handed to the cache, or once it can no longer be read (deleted, results
expired): its failed samples are then asked again in a new batch.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from mcu_exp.sqlite_store import open_shared

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
"""
_CHUNK = 500


class BatchStore:
    """Submitted batches of one backend and model, and the sample keys each request carries."""

    def __init__(self, path: str | Path, backend: str, model_id: str) -> None:
        self.path = Path(path)
        self.backend = backend
        self.model_id = model_id
        self.conn: sqlite3.Connection = open_shared(self.path, _SCHEMA)

    def record(self, batch_id: str, items: Mapping[str, Sequence[str]]) -> None:
        """Record an accepted batch: its id and each request's ``custom_id`` with its sample keys."""
        with self.conn:
            self.conn.execute(
                "INSERT OR REPLACE INTO batches (id, backend, model_id, state, created, closed) "
                "VALUES (?, ?, ?, 'open', ?, NULL)", (batch_id, self.backend, self.model_id, time.time()))
            self.conn.executemany(
                "INSERT OR REPLACE INTO batch_items (batch_id, custom_id, keys) VALUES (?, ?, ?)",
                [(batch_id, cid, json.dumps(list(keys))) for cid, keys in items.items()])
            self.conn.executemany(
                "INSERT OR IGNORE INTO batch_keys (key, batch_id) VALUES (?, ?)",
                [(key, batch_id) for keys in items.values() for key in keys])

    def open_batches(self, keys: Iterable[str]) -> dict[str, dict[str, list[str]]]:
        """The open batches of this backend and model that carry any of ``keys``: batch id ->
        custom_id -> that request's sample keys (all of them, wanted or not)."""
        wanted = list(dict.fromkeys(keys))
        ids: set[str] = set()
        for start in range(0, len(wanted), _CHUNK):
            part = wanted[start:start + _CHUNK]
            marks = ",".join("?" * len(part))
            rows = self.conn.execute(
                f"SELECT DISTINCT k.batch_id FROM batch_keys k JOIN batches b ON b.id = k.batch_id "
                f"WHERE b.state = 'open' AND b.backend = ? AND b.model_id = ? AND k.key IN ({marks})",
                (self.backend, self.model_id, *part))
            ids.update(row[0] for row in rows)
        found: dict[str, dict[str, list[str]]] = {}
        for batch_id in sorted(ids):
            rows = self.conn.execute("SELECT custom_id, keys FROM batch_items WHERE batch_id = ?", (batch_id,))
            found[batch_id] = {cid: json.loads(blob) for cid, blob in rows}
        return found

    def close_batch(self, batch_id: str, state: str = "done") -> None:
        """Mark a batch handled (``done``) or unreadable (``lost``): it is never polled again."""
        with self.conn:
            self.conn.execute("UPDATE batches SET state = ?, closed = ? WHERE id = ?", (state, time.time(), batch_id))

    def states(self) -> dict[str, str]:
        """Every recorded batch id of this backend and model with its state (for tests and logs)."""
        rows = self.conn.execute("SELECT id, state FROM batches WHERE backend = ? AND model_id = ?",
                                 (self.backend, self.model_id))
        return dict(rows.fetchall())

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()
