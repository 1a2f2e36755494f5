"""Texts no database column can hold, stored losslessly.

A model's output may hold a NUL byte (PostgreSQL's ``TEXT`` refuses it) or a lone surrogate
(``\\ud800``: a half of a UTF-16 pair, which no UTF-8 encoder writes, so neither SQLite nor
PostgreSQL takes it). Such a sample was paid for, so it is stored all the same: its ``text``
column holds the text's JSON string literal (ASCII, and :func:`unescape` gives back the very
text), and its key is listed in the cache's ``escaped`` table, which tells a reader to decode
it. Every other text is stored as it is, so the texts of existing caches keep their meaning.
A key's parts (JSON) escape NUL anyway; parts holding a lone surrogate are stored with ASCII
escapes, the same JSON value.
"""

from __future__ import annotations

import json
import re
from typing import Any

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")  # in a str from JSON, always a lone half


def needs_escape(text: str) -> bool:
    """Whether ``text`` holds a NUL byte or a lone surrogate (so some database cannot store it)."""
    return _UNSTORABLE.search(text) is not None


def escape(text: str) -> str:
    """``text`` as its JSON string literal: ASCII only, lossless."""
    return json.dumps(text)


def unescape(stored: str) -> str:
    """The text :func:`escape` made ``stored`` from."""
    return str(json.loads(stored))


def storable(text: str) -> str:
    """``text`` unchanged, or its JSON string literal when a database could not hold it (for a
    column no reader decodes: a failure's text, kept to be read by people)."""
    return escape(text) if needs_escape(text) else text


def storable_json(blob: str, value: Any) -> str:
    """The JSON ``blob`` of ``value`` unchanged, or the same value with ASCII escapes when
    ``blob`` holds a character a database could not store."""
    if not needs_escape(blob):
        return blob
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def escape_rows(rows: dict[str, tuple[Any, ...]], column: int) -> list[tuple[str, str]]:
    """Escape in place (:func:`escape`) the texts in ``column`` of ``rows`` (by key) that some
    database cannot hold; the ``(key, stored text)`` of each, to be listed in ``escaped``."""
    marks = []
    for key, row in rows.items():
        if needs_escape(row[column]):
            stored = escape(row[column])
            rows[key] = (*row[:column], stored, *row[column + 1 :])
            marks.append((key, stored))
    return marks


def valid_text(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD, as a UTF-8 decoder reads an unpaired
    half: what tokenizers, files and prompts can take (NUL bytes are kept: they are valid text)."""
    return _SURROGATE.sub("\ufffd", text)
