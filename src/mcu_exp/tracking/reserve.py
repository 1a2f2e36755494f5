"""Room kept on a local store's disk, so that a job that fills it still records how it ended.

A job whose cache or outputs fill the disk must still end its MLflow run (FAILED), and that
is a write to the SQLite store, often on the same full disk: without room it fails too and
the run stays RUNNING. Each job of a local store takes a small file of :data:`RESERVE_BYTES`
beside the store before it creates its run, names it after the run (``.mcu-reserve/<run
id>``) and deletes it just before it records the run's end. A job killed before that leaves
its file; whoever marks that run KILLED deletes it.
"""

from __future__ import annotations

import logging
import os
import secrets
from pathlib import Path

from mcu_exp.tracking.artifacts import store_folder

log = logging.getLogger(__name__)

RESERVE_BYTES = 64 * 1024  # a SQLite journal of a few pages, a tag row and the run's status, several times over
RESERVE_DIR = ".mcu-reserve"


def reserve_path(uri: str, name: str) -> Path | None:
    """Where the room ``name`` (a run id) lies: beside a SQLite store; None for a server (its
    disk is not this job's to fill)."""
    if not uri.startswith("sqlite:///"):
        return None
    return store_folder(uri) / RESERVE_DIR / name


class Reserve:
    """The room of one job: taken when made (when the disk still has it), named after its run
    by :meth:`name`, given back by :meth:`release` (idempotent)."""

    def __init__(self, uri: str) -> None:
        self.path = reserve_path(uri, f"pending-{os.getpid()}-{secrets.token_hex(4)}")
        if self.path is None:
            return
        try:
            self.path.parent.mkdir(exist_ok=True)
            self.path.write_bytes(b"\0" * RESERVE_BYTES)
        except OSError as exc:  # already full: the job goes on without room kept
            log.debug("no room reserved beside the MLflow store: %s", exc)
            self.path.unlink(missing_ok=True)
            self.path = None

    def name(self, run_id: str) -> None:
        """Name the room after the run it is kept for (a rename: it needs no room itself)."""
        if self.path is not None:
            named = self.path.with_name(run_id)
            os.replace(self.path, named)
            self.path = named

    def release(self) -> None:
        """Delete the file, freeing its room for the writes that follow."""
        if self.path is not None:
            self.path.unlink(missing_ok=True)
            self.path = None


def release_stale(uri: str, run_id: str) -> None:
    """Delete the room a killed job's run ``run_id`` left behind."""
    path = reserve_path(uri, run_id)
    if path is not None:
        path.unlink(missing_ok=True)
