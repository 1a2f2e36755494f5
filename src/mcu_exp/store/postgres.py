"""Connections to a shared cache database on PostgreSQL (``cache.url=postgresql://…``).

The URL is logged with the run's params, so it must not hold a password: libpq reads one from
``PGPASSWORD`` or ``~/.pgpass`` (``PGPASSFILE``), as it reads every other ``PG*`` variable.
The tables are created on first use; a session-wide advisory lock serialises that step, so
many jobs starting at once against an empty database do not race on ``CREATE TABLE``.
psycopg 3 is an optional dependency (``pip install 'mcu-exp[postgres]'``), imported here only.
"""

from __future__ import annotations

import re
from typing import Any

INSTALL = "pip install 'mcu-exp[postgres]'"
_SCHEMA_LOCK = 0x6D63_7565_7870  # pg_advisory_lock key of the schema step ("mcuexp")
CONNECT_TIMEOUT_S = 10
# libpq's keywords whose values are secrets: the password, and the passphrase of the client key.
SECRET_PARAMS = {
    "password": "PGPASSWORD or a ~/.pgpass entry",
    "sslpassword": "a pg_service.conf entry (PGSERVICEFILE)",
}
_SECRET_PAIR = re.compile(
    r"(?P<key>(?:^|[\s?&])(?:" + "|".join(SECRET_PARAMS) + r")\s*=\s*)"
    r"(?:'(?P<quoted>(?:[^'\\]|\\.)*)'|(?P<plain>[^\s&#]*))",
    re.IGNORECASE,
)
_USER_PASSWORD = re.compile(r"^(?P<head>[a-z][a-z0-9+.\-]*://[^/?#@:]*):[^/?#]*@", re.IGNORECASE)


class StoreError(ValueError):
    """A cache database that cannot be used: the message is one line saying what to fix."""


def check_url(url: str, key: str = "cache.url") -> None:
    """Raise :class:`StoreError` for a URL libpq cannot parse, or one that holds a password."""
    psycopg = _psycopg(key)
    try:
        parts = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError as exc:
        raise StoreError(
            f"{key}: not a PostgreSQL URL ({_line(exc)}); expected postgresql://user@host:port/database"
        ) from None
    for name, instead in SECRET_PARAMS.items():
        if parts.get(name):
            what = "a password" if name == "password" else f"{name} (the client key's passphrase)"
            raise StoreError(
                f"{key}: the URL holds {what}, which would show in process lists, logs and "
                f"run params; remove it and set {instead} instead"
            )


def conninfo_secrets(url: str) -> set[str]:
    """The secret values (:data:`SECRET_PARAMS`) in a libpq connection string, whatever its
    form: ``?password=…``/``&sslpassword=…`` of a URL, or ``password=…`` (quoted or not) of a
    ``key=value`` string; both as written and as libpq decodes them, so either is masked."""
    found = {
        m.group("quoted") if m.group("quoted") is not None else m.group("plain") for m in _SECRET_PAIR.finditer(url)
    }
    try:
        from psycopg.conninfo import conninfo_to_dict

        parts = conninfo_to_dict(url)
    except Exception:  # noqa: BLE001 (no psycopg, or a string libpq cannot parse: what was read above)
        parts = {}
    found.update(str(parts[name]) for name in SECRET_PARAMS if parts.get(name))
    return {value for value in found if value}


def redact_conninfo(url: str) -> str:
    """``url`` with its password and SSL passphrase, in any of libpq's forms, shown as ``***``;
    the user, host and every other parameter kept (what an error about the URL should show)."""
    masked = _SECRET_PAIR.sub(lambda m: f"{m.group('key')}***", url)
    return _USER_PASSWORD.sub(lambda m: f"{m.group('head')}:***@", masked)


def connect(url: str, schema: str) -> Any:
    """An autocommit psycopg connection to ``url`` with ``schema`` (``;``-separated,
    idempotent DDL) applied; a :class:`StoreError` naming the URL when it cannot connect."""
    check_url(url)
    psycopg = _psycopg("cache.url")
    try:
        conn = psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S, application_name="mcu-exp")
    except psycopg.OperationalError as exc:
        raise StoreError(
            f"cache.url={url}: cannot connect ({_line(exc)}); is the server up, and does the database exist?"
        ) from None
    try:
        conn.execute("SELECT pg_advisory_lock(%s)", (_SCHEMA_LOCK,))
        try:
            for statement in filter(None, (s.strip() for s in schema.split(";"))):
                conn.execute(statement)
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (_SCHEMA_LOCK,))
    except psycopg.Error as exc:
        conn.close()
        raise StoreError(f"cache.url={url}: cannot create the cache tables ({_line(exc)})") from None
    return conn


def _psycopg(key: str) -> Any:
    try:
        import psycopg
    except ImportError:
        raise StoreError(f"{key}: a PostgreSQL cache needs psycopg 3: {INSTALL}") from None
    return psycopg


def _line(exc: BaseException) -> str:
    """The first non-empty line of an error's message."""
    return next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
