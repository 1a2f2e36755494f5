"""Reading a dataset's text files: UTF-8 only, with errors that name the file, line and byte."""

from __future__ import annotations

import codecs
from pathlib import Path

from mcu_exp.data.types import DatasetError


def read_text(path: Path) -> str:
    """The file's text, decoded as UTF-8 (a leading byte-order mark is dropped).

    Bytes that are not UTF-8 raise a one-line :class:`DatasetError` naming the file, the line
    (as an editor counts it) and the byte offset in the file, instead of Python's bare
    ``'utf-8' codec can't decode…``.
    """
    return decode_text(path.read_bytes(), path)


def decode_text(data: bytes, path: Path) -> str:
    """``data`` (the bytes of ``path``) as :func:`read_text` decodes them, with its errors."""
    start = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        return data[start:].decode("utf-8")
    except UnicodeDecodeError as err:
        offset = start + err.start
        line = data.count(b"\n", 0, offset) + 1
        raise DatasetError(
            f"{path}:{line}: not UTF-8 text (byte 0x{data[offset]:02x} at byte offset {offset}); "
            "expected UTF-8, e.g. save it again as UTF-8"
        ) from None
