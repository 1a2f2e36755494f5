"""What the benchmark scripts share: best-of-repeats timing of a block."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def timed(record: dict[str, tuple[float, float]], name: str) -> Iterator[None]:
    """Record (wall, CPU) seconds of the block under ``name``, keeping the best of repeats."""
    wall, cpu = time.perf_counter(), time.process_time()
    yield
    now = (time.perf_counter() - wall, time.process_time() - cpu)
    old = record.get(name, now)
    record[name] = (min(old[0], now[0]), min(old[1], now[1]))
