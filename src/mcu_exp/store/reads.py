"""What a job read from its caches, and the identities its keys were made from.

A run bundle holds exactly the cache rows its job used, so the job records them as it goes:
once a job has called :func:`start`, the generation cache notes every sample key it served or
stored, and the score cache every pair and text key (:func:`note`). The same recorder keeps
the identity each model's keys were made from (:func:`pinned_identity`) and each scorer's
spec hash: a replay pins them (:func:`pin`), so a machine without the weights, with another
torch or transformers, or with a GPU where the job had none, computes the very keys the
bundle holds, and never loads a model to fill a miss.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

SAMPLES, PAIRS, LENGTHS = "samples", "pair_scores", "text_lengths"
MODELS, SCORERS = "models", "scorers"
_lock = threading.Lock()
_active: dict[str, set[Any]] | None = None
_identities: dict[str, dict[str, Any]] = {MODELS: {}, SCORERS: {}}  # seen by the current recording
_pins: dict[str, dict[str, Any]] = {MODELS: {}, SCORERS: {}}  # set by a replay
_replaying: list[str] = []  # the bundle being replayed, while one is


class ReplayMiss(ValueError):
    """A replay needed a sample or score its bundle does not hold (it never loads a model)."""


def start() -> dict[str, set[Any]]:
    """Start a recording that lasts until the next :func:`start` (a job's whole life)."""
    global _active
    keys: dict[str, set[Any]] = {SAMPLES: set(), PAIRS: set(), LENGTHS: set()}
    with _lock:
        _active = keys
        for seen in _identities.values():
            seen.clear()
    return keys


def current() -> dict[str, set[Any]] | None:
    """The keys recorded so far, None when nothing records."""
    return _active


def note(table: str, keys: Iterable[Any]) -> None:
    """Record ``keys`` of ``table`` as read by the job (no-op when nothing records)."""
    found = _active
    if found is not None:
        found[table].update(keys)


def identities() -> dict[str, dict[str, Any]]:
    """The model identities and scorer spec hashes met during the recording, by config digest."""
    return {kind: dict(seen) for kind, seen in _identities.items()}


def config_digest(cfg: Any) -> str:
    """A digest of a model or scorer config, secrets masked first (a bundle stores digests)."""
    from mcu_exp.redact import redact_tree

    tree = dataclasses.asdict(cfg) if dataclasses.is_dataclass(cfg) and not isinstance(cfg, type) else dict(cfg)
    text = json.dumps(redact_tree(tree), sort_keys=True, default=str, ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def pinned_identity(kind: str, cfg: Any, compute: Callable[[], Any]) -> Any:
    """The identity of ``cfg`` (``kind``: :data:`MODELS` or :data:`SCORERS`): the pinned one
    during a replay, else ``compute()``; recorded either way."""
    digest = config_digest(cfg)
    value = _pins[kind].get(digest)
    if value is None:
        value = compute()
    _identities[kind][digest] = value
    return value


@contextmanager
def pin(pins: Mapping[str, Mapping[str, Any]], bundle: str) -> Iterator[None]:
    """Replay ``bundle``: use the identities of its manifest instead of computing them, and
    refuse to create a model backend or to score a pair (:func:`no_model`), until exit."""
    with _lock:
        for kind in (MODELS, SCORERS):
            _pins[kind].update(pins.get(kind, {}))
        _replaying.append(bundle)
    try:
        yield
    finally:
        with _lock:
            for kind in (MODELS, SCORERS):
                _pins[kind].clear()
            _replaying.clear()


def no_model(what: str) -> None:
    """Raise :class:`ReplayMiss` during a replay: ``what`` (a model, a scorer) would be needed."""
    if _replaying:
        raise ReplayMiss(
            f"{_replaying[-1]}: {what} is not in the bundle, and a replay loads no model "
            "and sends no request; export the bundle again from the run's cache"
        )
