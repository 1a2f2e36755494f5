"""One small interface over the two databases a cache can live in: a SQLite file (one machine,
the default) or a PostgreSQL database (``cache.url``, shared by the processes of many machines).

The caches write their SQL once, with ``?`` marks and the upsert syntax both databases share
(``INSERT … ON CONFLICT … DO UPDATE/NOTHING``); :class:`Store` runs it on either, and gives
what differs: the schema (each cache passes one per dialect), how a write transaction that
must exclude other writers starts (SQLite's ``BEGIN IMMEDIATE``; a table lock in
PostgreSQL), the SQL of "this text is blank", and how a broken database reads in an error.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mcu_exp.store.sqlite import close_shared, open_shared

URL_SCHEMES = ("postgresql://", "postgres://")
SQLITE, POSTGRESQL = "sqlite", "postgresql"
_BLANK = {  # SQL that is true when a text column holds only whitespace (or nothing)
    SQLITE: "trim({column}, ' ' || char(9, 10, 13)) = ''",
    POSTGRESQL: "btrim({column}, E' \\t\\n\\r') = ''",
}


def postgres_schema(sqlite_schema: str) -> str:
    """The PostgreSQL form of a cache's SQLite DDL: the same tables and columns, with 64-bit
    integers and floats (SQLite's INTEGER and REAL are 64-bit), BYTEA for BLOB, and no
    ``WITHOUT ROWID`` (a PostgreSQL table has no rowid to drop)."""
    replacements = {
        r"\bINTEGER\b": "BIGINT",
        r"\bREAL\b": "DOUBLE PRECISION",
        r"\bBLOB\b": "BYTEA",
        r"\)\s*WITHOUT ROWID": ")",
    }
    for pattern, replacement in replacements.items():
        sqlite_schema = re.sub(pattern, replacement, sqlite_schema)
    return sqlite_schema


def is_url(location: str | Path | None) -> bool:
    """Whether ``location`` names a database server (``postgresql://…``), not a file."""
    return isinstance(location, str) and location.startswith(URL_SCHEMES)


class Store:
    """A connection to one cache database in autocommit mode (each statement its own
    transaction unless inside :meth:`transaction`); ``name`` is what errors call it."""

    def __init__(self, conn: Any, dialect: str, location: str | Path, schema: str) -> None:
        self._conn = conn
        self.dialect = dialect
        self.location = location
        self.name = str(location)
        self._schema = schema

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """Run ``sql`` (``?`` marks) and return its cursor."""
        if self.dialect == POSTGRESQL:
            return self._conn.execute(sql.replace("?", "%s"), params or None)
        return self._conn.execute(sql, params)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        """Run ``sql`` once per row of ``rows``."""
        rows = list(rows)
        if not rows:
            return
        if self.dialect == POSTGRESQL:
            with self._conn.cursor() as cursor:
                cursor.executemany(sql.replace("?", "%s"), rows)
        else:
            self._conn.executemany(sql, rows)

    def blank(self, column: str) -> str:
        """SQL that is true when ``column`` holds only whitespace."""
        return _BLANK[self.dialect].format(column=column)

    @contextmanager
    def transaction(self, exclusive: str | None = None) -> Iterator[None]:
        """One transaction, committed on exit and rolled back on any error.

        With ``exclusive`` (a table name) no other process writes that table until it ends:
        SQLite takes its one write lock at once (``BEGIN IMMEDIATE``, so a busy peer makes it
        wait, never fail later); PostgreSQL locks the table against other writers (readers go on).
        """
        if self.dialect == POSTGRESQL:
            with self._conn.transaction():
                if exclusive is not None:
                    self._conn.execute(f"LOCK TABLE {exclusive} IN SHARE ROW EXCLUSIVE MODE")
                yield
            return
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            if self._conn.in_transaction:  # an error SQLite rolled back itself leaves none
                self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    def reopen(self) -> Store:
        """A second connection to the same database (for another thread)."""
        return open_store(self.location, {self.dialect: self._schema})

    def close(self) -> None:
        """Close the connection (SQLite: its file's free pages first given back, :func:`close_shared`)."""
        if self.dialect == SQLITE:
            close_shared(self._conn)
        else:
            self._conn.close()


def open_store(location: str | Path, schemas: Mapping[str, str]) -> Store:
    """A :class:`Store` on ``location`` (a SQLite path, ``":memory:"``, or a ``postgresql://``
    URL) with the schema of its dialect applied (idempotent DDL)."""
    if is_url(location):
        from mcu_exp.store.postgres import connect

        return Store(connect(str(location), schemas[POSTGRESQL]), POSTGRESQL, str(location), schemas[POSTGRESQL])
    return Store(open_shared(location, schemas[SQLITE], autocommit=True), SQLITE, location, schemas[SQLITE])


def database_errors(dialect: str) -> tuple[type[BaseException], ...]:
    """The exception types a database of ``dialect`` raises (for turning them into one line)."""
    if dialect == POSTGRESQL:
        import psycopg

        return (psycopg.Error,)
    return (sqlite3.Error,)
