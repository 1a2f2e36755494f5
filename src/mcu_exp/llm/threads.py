"""How many torch threads the embedded model uses on the CPU.

``model.num_threads`` always wins. Unset, the rule looks at how busy the CPUs are *now* (their
idle share over a fifth of a second, from ``/proc/stat``), not at the 1-minute load average,
which stays high for a minute after any work (a ``pip install``, the previous job) and so made
a free 2-core machine decode on one thread.
"""

from __future__ import annotations

import logging
import math
import os
import time
from pathlib import Path
from typing import Any

from mcu_exp.llm.errors import BackendError

log = logging.getLogger(__name__)

SAMPLE_S = 0.2
_PROC_STAT = Path("/proc/stat")


def cpu_budget() -> int:
    """CPUs this process may use: its affinity mask, capped by a cgroup v2 CPU quota."""
    budget = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()[:2]
        if quota != "max":
            budget = min(budget, max(1, math.ceil(int(quota) / int(period))))
    except (OSError, ValueError):
        pass
    return max(1, budget)


def _cpu_times() -> tuple[int, int]:
    """(idle, total) jiffies of all CPUs since boot, from the first line of ``/proc/stat``."""
    fields = [int(x) for x in _PROC_STAT.read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return idle, sum(fields[:8])  # guest time is already counted in user


def busy_cpus(seconds: float = SAMPLE_S) -> float:
    """How many CPUs other work keeps busy now: ``cpus × (1 − idle share)`` over ``seconds``
    (this process sleeps meanwhile). Without ``/proc/stat``: the 1-minute load average."""
    cpus = os.cpu_count() or 1
    try:
        idle0, total0 = _cpu_times()
        time.sleep(seconds)
        idle1, total1 = _cpu_times()
    except (OSError, ValueError, IndexError):
        return os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    if total1 <= total0:
        return 0.0
    return cpus * (1.0 - (idle1 - idle0) / (total1 - total0))


def thread_count(requested: int | None, current: int, budget: int, busy: float, cpus: int) -> int:
    """torch's intra-op thread count for a model load.

    ``requested`` (``model.num_threads``) always wins. Unset: the CPU ``budget`` (torch itself
    counts every core of the host, ignoring cgroup quotas) when the machine has that many CPUs
    free now (``cpus − busy >= budget − 0.5``: a core counts as free when at least half of it
    is idle), else half the budget; never above the ``current`` count: the rule only lowers
    torch's default, never undoing a count the process has set (tests, a caller's
    ``torch.set_num_threads``, an earlier load). Why halve on a busy machine: OpenMP threads
    that must wait for descheduled peers make a decode step ~10x slower (measured: 16 s with 2
    threads vs 1.9 s with 1 on a 2-core box at load 6).
    """
    if requested is not None:
        if int(requested) < 1:
            raise BackendError(f"model.num_threads must be >= 1 (or null for automatic), got {requested}")
        return int(requested)
    threads = budget if cpus - busy >= budget - 0.5 else max(1, budget // 2)
    return max(1, min(threads, current))


def choose_threads(torch: Any, requested: int | None = None) -> None:
    """Set torch's intra-op threads by :func:`thread_count`; with ``model.num_threads`` unset,
    a user's OMP_NUM_THREADS / MKL_NUM_THREADS is kept as it is (joblib's workers get theirs
    set to their share of the CPUs)."""
    if requested is None and any(v in os.environ for v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")):
        return
    current, budget = torch.get_num_threads(), cpu_budget()
    busy = busy_cpus() if requested is None and min(current, budget) > 1 else 0.0
    threads = thread_count(requested, current, budget, busy, os.cpu_count() or 1)
    if threads != current:
        log.debug(
            "torch threads: %d (model.num_threads %s, CPU budget %d, busy CPUs %.1f)", threads, requested, budget, busy
        )
        torch.set_num_threads(threads)
