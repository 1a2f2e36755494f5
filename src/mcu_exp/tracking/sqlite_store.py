"""A new SQLite MLflow store comes into being whole or not at all.

MLflow builds a new SQLite store's schema by running some sixty migrations, one transaction
each, when a client first opens the file. A Ctrl-C or a crash halfway (the first job's first
seconds) left a store that no later command could open: every run after it failed with
``duplicate column name`` from the migration it re-ran. Here the migrations run on a temporary
file beside the store, renamed into place only once complete.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

SQLITE = "sqlite:///"
CREATING = ".creating-"  # <store file>.creating-<pid>: a store being built (a leftover: its builder died)


def sqlite_path(uri: str) -> Path | None:
    """The file of a ``sqlite:///`` tracking URI; None for any other store."""
    return Path(uri[len(SQLITE) :]) if uri.startswith(SQLITE) else None


def ensure_created(uri: str, client_for: Any) -> None:
    """Create the SQLite store of ``uri`` when its file does not exist yet: ``client_for(uri)``
    (MLflow's client, which migrates a new store when it opens it) on a temporary file, renamed
    onto the store's path once every migration ran. Call it holding the store's lock; it removes
    the temporary files of builders that died. Any other store is left to MLflow."""
    path = sqlite_path(uri)
    if path is None or path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    for stale in path.parent.glob(f"{path.name}{CREATING}*"):
        stale.unlink(missing_ok=True)  # the lock is held: no living process is building these
    tmp = path.with_name(f"{path.name}{CREATING}{os.getpid()}")
    tmp_uri = SQLITE + str(tmp)
    try:
        client_for(tmp_uri)
        _close_engine(tmp_uri)
        os.replace(tmp, path)
    finally:
        for leftover in (tmp, tmp.with_name(tmp.name + "-journal")):
            leftover.unlink(missing_ok=True)


def _close_engine(uri: str) -> None:
    """Close MLflow's pooled connections to the temporary file before it is renamed (MLflow
    keeps one engine per database URI for the process)."""
    with contextlib.suppress(ImportError, AttributeError):
        from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

        engine = SqlAlchemyStore._engine_map.pop(uri, None)
        if engine is not None:
            engine.dispose()
