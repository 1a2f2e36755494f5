"""Open a SQLite file that several processes of a sweep share: WAL mode, a busy timeout, and
a file lock around the one-time set-up.

Switching a new file to WAL and creating its tables need an exclusive lock that SQLite's
busy handler does not always wait for, so two jobs opening a fresh cache at the same moment
could fail with "database is locked"; the lock beside the file serialises just that step.

Rows a cache deletes (a stage's leases, once it ends; a finished provider batch) leave free
pages that SQLite keeps in the file: a remote stage's cache held more than half again its
samples' size that way. A new file is made with ``auto_vacuum = INCREMENTAL`` and
:func:`close_shared` gives its free pages back to the file system; a file made before keeps
its layout (its free pages are reused by later writes).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Literal

from filelock import FileLock

BUSY_TIMEOUT_S = 120.0
RECLAIM_BUSY_MS = 1000  # how long closing waits for a busy peer before leaving the free pages to it


def open_shared(path: str | Path, schema: str, autocommit: bool = False) -> sqlite3.Connection:
    """A connection to ``path`` in WAL mode with ``schema`` (idempotent DDL) applied.

    ``autocommit`` gives each statement its own transaction (``isolation_level=None``).
    ``":memory:"`` opens a private in-memory database.
    """
    isolation: Literal["DEFERRED"] | None = None if autocommit else "DEFERRED"
    if str(path) == ":memory:":
        conn = sqlite3.connect(":memory:", timeout=BUSY_TIMEOUT_S, isolation_level=isolation)
        conn.executescript(schema)
        return conn
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path) + ".lock", timeout=BUSY_TIMEOUT_S):
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=isolation)
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        if conn.execute("PRAGMA page_count").fetchone()[0] == 0:  # a new file (set before any table)
            conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            conn.close()
            raise RuntimeError(f"{path}: cannot switch SQLite to WAL mode (got {mode!r})")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.executescript(schema)
    return conn


def close_shared(conn: sqlite3.Connection) -> None:
    """Close a connection of :func:`open_shared`, first handing the file's free pages back to
    the file system (a file made with ``auto_vacuum = INCREMENTAL``; on others a no-op). Best
    effort: a peer that keeps the file busy, or a read-only file, leaves them for later writes."""
    try:
        if not conn.in_transaction and conn.execute("PRAGMA freelist_count").fetchone()[0]:
            conn.execute(f"PRAGMA busy_timeout = {RECLAIM_BUSY_MS}")
            conn.executescript("PRAGMA incremental_vacuum;")  # run to its end (execute frees one page a step)
    except sqlite3.Error:
        pass
    finally:
        conn.close()
