"""Copying a cache's tables row chunk by row chunk, from one store to another: what ``mcu-exp cache
export|import`` does between SQLite files and PostgreSQL, and what a run bundle does with its rows."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Protocol

TABLE_LABELS = {
    "requests": "requests",
    "samples": "samples",
    "specs": "scorer specs",
    "pair_scores": "pair scores",
    "text_lengths": "text lengths",
}


class Table(Protocol):
    def rows(self, table: str, size: int = ...) -> Iterator[list[tuple[Any, ...]]]: ...
    def count(self, table: str) -> int: ...
    def add_rows(self, table: str, rows: list[tuple[Any, ...]]) -> int: ...


class Cache(Table, Protocol):
    """A cache whose tables can be copied (GenerationCache, ScoreCache), closed on exit."""

    def __enter__(self) -> Cache: ...
    def __exit__(self, *exc: object) -> None: ...


def copy_tables(source: Table, dest: Table, tables: Sequence[str], progress: bool) -> dict[str, tuple[int, int]]:
    """Copy ``tables`` from ``source`` to ``dest`` in chunks (each its own transaction);
    ``{table: (rows read, rows new at dest)}``."""
    from tqdm.auto import tqdm

    counts: dict[str, tuple[int, int]] = {}
    for table in tables:
        read = added = 0
        with tqdm(
            total=source.count(table), desc=TABLE_LABELS[table], unit=" rows", disable=not progress, leave=False
        ) as bar:
            for rows in source.rows(table):
                added += dest.add_rows(table, rows)
                read += len(rows)
                bar.update(len(rows))
        counts[table] = (read, added)
    return counts
