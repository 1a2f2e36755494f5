"""One line for a store that cannot be used: a cache file that is a folder, a cache folder
that is a file, a SQLite file of another layout, text that is not UTF-8, a full disk.

SQLite reports all of these as ``sqlite3.OperationalError`` (the same type as a busy file,
which a caller waits for), and a full disk reaches a job as an ``OSError`` (ENOSPC), a SQLite
"database or disk is full" or "disk I/O error", or MLflow's wrapping of one of them. The
functions here tell them apart and say what is wrong with which file; a :class:`StoreFault`
keeps that fact apart from the advice, so that ``mcu-exp cache`` can give its own advice
where a job's ("rerun") would not fit.
"""

from __future__ import annotations

import errno
import logging
import shutil
import sqlite3
from pathlib import Path

FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
FULL_TEXTS = ("database or disk is full", "no space left on device", "disk quota exceeded")
LOW_SPACE_BYTES = 1 << 20  # a "disk I/O error" on a file system with less free space than this: a full disk
OTHER_LAYOUT = ("no such table", "no such column", "has no column named", "columns but", "values for")
# Libraries that log a database error with its traceback before raising it (MLflow's SQL store).
TRACEBACK_LOGGERS = ("mlflow.store.db.utils",)


class StoreFault(ValueError):
    """A cache file or database that cannot be used: ``fact`` says what is wrong with which
    file, ``advice`` what a job's user should do; the message is both, on one line."""

    def __init__(self, fact: str, advice: str = "") -> None:
        super().__init__(f"{fact}; {advice}" if advice else fact)
        self.fact = fact
        self.advice = advice


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and the exceptions it was raised from or while handling, outermost first."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def is_disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` (or one it came from) says the disk is full."""
    for item in _chain(exc):
        if isinstance(item, OSError) and item.errno in FULL_ERRNOS:
            return True
        if any(text in str(item).lower() for text in FULL_TEXTS):
            return True
    return False


def _low_space(path: Path) -> bool:
    for folder in (path, *path.parents):
        if folder.exists():
            try:
                return shutil.disk_usage(folder).free < LOW_SPACE_BYTES
            except OSError:
                return False
    return False


def disk_full_advice(path: str | Path | None) -> str:
    """What to do about a full disk holding ``path``."""
    where = f" (df -h {Path(path).parent if Path(path).suffix else path})" if path else ""
    return f"free space on that disk{where} and rerun: what was stored before is kept"


def disk_full_message(exc: BaseException, path: str | Path | None = None) -> str | None:
    """One line for a job that stopped on a full disk (``path``: the file being written, when
    known), or None when ``exc`` is about something else."""
    if not is_disk_full(exc):
        return None
    target = path or next((getattr(e, "filename", None) for e in _chain(exc) if getattr(e, "filename", None)), None)
    first = next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
    named = f" writing {target}" if target else ""
    return f"the disk is full{named} ({first[:200]}); {disk_full_advice(target)}"


def check_sqlite_path(path: str | Path, what: str) -> None:
    """Raise :class:`StoreFault` when the SQLite file ``path`` cannot be one: it is a folder,
    or a folder it should lie in is a file."""
    path = Path(path)
    if path.is_dir():
        raise StoreFault(
            f"{what} {path} is a folder; expected a SQLite file",
            f"move the folder aside (or point cache.dir at the folder that holds {path.name})",
        )
    for folder in path.parents:
        if folder.exists():
            if not folder.is_dir():
                raise StoreFault(
                    f"{what} {path}: {folder} is a file; expected a folder to hold {path.name}",
                    "point cache.dir at a folder (it is created if missing) or move the file aside",
                )
            return


def sqlite_fault(what: str, path: str | Path, exc: sqlite3.Error, advice: str) -> StoreFault | None:
    """The :class:`StoreFault` a SQLite error means for the file ``path`` (``advice``: what to
    do about a file that is not a usable cache), or None for one the caller handles itself (a
    busy file, a value it cannot store)."""
    text = str(exc)
    lowered = text.lower()
    if is_disk_full(exc) or ("disk i/o error" in lowered and _low_space(Path(path))):
        return StoreFault(f"{what} {path}: the disk is full ({text})", disk_full_advice(path))
    if "could not decode to utf-8" in lowered:
        return StoreFault(
            f"{what} {path} holds text that is not UTF-8 ({text}); expected a cache written by mcu-exp", advice
        )
    if any(marker in lowered for marker in OTHER_LAYOUT):
        return StoreFault(
            f"{what} {path} is a SQLite database of another layout ({text}); expected a cache written by mcu-exp",
            advice,
        )
    if "unable to open database file" in lowered:
        check_sqlite_path(path, what)
        return StoreFault(f"{what} {path} cannot be opened ({text}); expected a readable, writable file", advice)
    if "readonly database" in lowered:
        return StoreFault(f"{what} {path} is read-only ({text}); expected a writable file", advice)
    if "disk i/o error" in lowered:
        return StoreFault(f"{what} {path}: the disk failed ({text})", "check the disk and rerun")
    return None


class _DiskFullTraces(logging.Filter):
    """Drops a log record carrying a full disk's traceback: the job reports it in one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return error is None or not is_disk_full(error)


def quiet_disk_full_traces() -> None:
    """Keep the libraries of :data:`TRACEBACK_LOGGERS` from printing a full disk's traceback
    (idempotent); their other records pass."""
    for name in TRACEBACK_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, _DiskFullTraces) for f in logger.filters):
            logger.addFilter(_DiskFullTraces())
