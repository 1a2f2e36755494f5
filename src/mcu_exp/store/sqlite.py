"""Open a SQLite file that several processes of a sweep share: WAL mode, a busy timeout, and
a file lock around the one-time set-up.

Switching a new file to WAL and creating its tables need an exclusive lock that SQLite's
busy handler does not always wait for, so two jobs opening a fresh cache at the same moment
could fail with "database is locked"; the lock beside the file serialises just that step.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Literal

from filelock import FileLock

BUSY_TIMEOUT_S = 120.0


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
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            conn.close()
            raise RuntimeError(f"{path}: cannot switch SQLite to WAL mode (got {mode!r})")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.executescript(schema)
    return conn
