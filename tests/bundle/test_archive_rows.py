"""A bundle's cache rows as JSON lines (:meth:`mcu_exp.bundle.archive.RowSet.jsonl`): the text
of rows a sweep's jobs share is reused, and only for exactly the same rows."""

from __future__ import annotations

import json

from mcu_exp.bundle.archive import RowSet


def _rows(texts: dict[str, str]) -> RowSet:
    rows = RowSet()
    rows.add_rows("samples", [(key, text, "stop", 10, 3) for key, text in texts.items()])
    rows.add_rows("pair_scores", [(bytes([i]), 0.5 + i / 10) for i in range(3)])
    return rows


def test_jsonl_is_the_rows_in_key_order_and_follows_their_content() -> None:
    first = _rows({"b": "second", "a": "first"})
    text = first.jsonl("samples")
    assert [json.loads(line) for line in text.decode().splitlines()] == [
        ["a", "first", "stop", 10, 3],
        ["b", "second", "stop", 10, 3],
    ]
    assert first.jsonl("pair_scores").decode().splitlines()[0] == '["00",0.5]'
    assert _rows({"a": "first", "b": "second"}).jsonl("samples") == text  # equal rows: the same text
    changed = _rows({"a": "first", "b": "another"}).jsonl("samples")
    assert b"another" in changed and b"second" not in changed  # one text changed: encoded anew
    grown = _rows({"a": "first", "b": "second", "c": "third"}).jsonl("samples")
    assert grown.count(b"\n") == 3
    assert RowSet().jsonl("samples") == b""
