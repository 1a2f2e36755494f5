"""The ``cache.url`` value checked before a job runs: its scheme, a password in it, psycopg missing."""

from __future__ import annotations

from collections.abc import Iterator

from mcu_exp.store.postgres import StoreError, check_url
from mcu_exp.store.sql import is_url


def cache_url_problems(url: str) -> Iterator[str]:
    """What is wrong with ``cache.url``, one message each."""
    if not is_url(url):
        yield f"cache.url={url}: expected postgresql://user@host:port/database (or null for SQLite files in cache.dir)"
        return
    try:
        check_url(url)
    except StoreError as exc:
        yield str(exc)
