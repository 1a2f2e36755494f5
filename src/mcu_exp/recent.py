"""A small per-process memo of the most recently used values, for work a sweep's jobs repeat
in one process on the same content (result tables, bundle rows): bounded, so a long process
keeps a few entries, and the least recently used leaves first."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class Recent(Generic[V]):
    """At most ``size`` values by key, the least recently used dropped first."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.values: dict[Hashable, V] = {}

    def get(self, key: Hashable, make: Callable[[], V]) -> V:
        """The value kept for ``key``, else ``make()`` kept for it."""
        found = self.values.pop(key, None)
        if found is None:
            found = make()
        self.values[key] = found  # the most recently used last
        while len(self.values) > self.size:
            del self.values[next(iter(self.values))]
        return found
