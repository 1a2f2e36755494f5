"""Content-addressed, append-as-you-go cache of generated samples (one SQLite file).

A sample's key hashes everything that changes what the model writes: the backend identity
(model and weights), every decoding parameter, the messages and the sample index. It leaves
out ``n`` (raising ``n`` reuses the samples already made) and anything that does not change
the text (timeouts, retries). Each sample is committed as it arrives, so a crash loses at
most the samples in flight. WAL mode plus a busy timeout let several processes of a sweep
read and write the same file at once.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from mcu_exp.llm.contract import GenerationRequest, Sample
from mcu_exp.sqlite_store import open_shared

_SCHEMA = """
CREATE TABLE IF NOT EXISTS samples (
    key TEXT PRIMARY KEY,
    text TEXT NOT NULL,
    finish_reason TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    created REAL NOT NULL,
    parts TEXT NOT NULL
)
"""
_CHUNK = 500


def key_parts(identity: Mapping[str, Any], request: GenerationRequest, index: int) -> dict[str, Any]:
    """What a sample's key is made of."""
    return {
        "backend": dict(identity),
        "decoding": request.decoding(),
        "messages": [{"role": m.role, "content": m.content} for m in request.messages],
        "index": int(index),
    }


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no spaces: equal values give equal strings."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sample_key(identity: Mapping[str, Any], request: GenerationRequest, index: int) -> str:
    """sha256 of the canonical JSON of :func:`key_parts`."""
    return hashlib.sha256(canonical_json(key_parts(identity, request, index)).encode()).hexdigest()


class GenerationCache:
    """Samples by key in one SQLite file; safe to share between processes."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._conn = open_shared(self.path, _SCHEMA, autocommit=True)

    def get_many(self, keys: Iterable[str]) -> dict[str, Sample]:
        """The cached samples among ``keys`` (absent keys are left out)."""
        wanted = list(dict.fromkeys(keys))
        found: dict[str, Sample] = {}
        for start in range(0, len(wanted), _CHUNK):
            chunk = wanted[start : start + _CHUNK]
            marks = ",".join("?" * len(chunk))
            rows = self._conn.execute(
                "SELECT key, text, finish_reason, prompt_tokens, completion_tokens "
                f"FROM samples WHERE key IN ({marks})",
                chunk,
            )
            for key, text, reason, prompt_tokens, completion_tokens in rows:
                found[key] = Sample(text, reason, prompt_tokens, completion_tokens)
        return found

    def put(self, key: str, sample: Sample, parts: Mapping[str, Any] | None = None) -> bool:
        """Store one sample in its own transaction; errors are never stored.

        Returns whether a row was written (False for an error or a key already present).
        """
        if sample.finish_reason == "error":
            return False
        cursor = self._conn.execute(
            "INSERT OR IGNORE INTO samples VALUES (?, ?, ?, ?, ?, ?, ?)",
            (key, sample.text, sample.finish_reason, sample.prompt_tokens, sample.completion_tokens,
             time.time(), canonical_json(parts or {})),
        )
        return cursor.rowcount == 1

    def __len__(self) -> int:
        return int(self._conn.execute("SELECT COUNT(*) FROM samples").fetchone()[0])

    def close(self) -> None:
        """Close the connection (the file stays)."""
        self._conn.close()

    def __enter__(self) -> GenerationCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
