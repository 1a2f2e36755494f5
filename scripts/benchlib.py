"""What the benchmark scripts share: best-of-repeats timing of a block, peak RSS, labelled lines."""

from __future__ import annotations

import resource
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


def rss_gb() -> float:
    """Peak resident set size of this process so far, in GB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def show(label: str, value: object) -> None:
    """One ``label: value`` line, flushed at once (benchmarks run long)."""
    print(f"{label}: {value}", flush=True)
