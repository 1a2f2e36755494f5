"""Where a process id means something: one PID namespace of one boot of one kernel.

A lease on a cache key and an MLflow run both name the process that holds them, so that a
peer can tell when that process has died. A pid alone says nothing across containers:
containers started with ``--network host`` share the host's name, yet each has its own PID
namespace, where a peer's pid is absent (so it looks dead) or belongs to another process.
A pid is therefore only judged by a process of the same PID space: the host name, the
kernel's boot id (``/proc/sys/kernel/random/boot_id``, which tells apart machines that share
a name) and the inode of the PID namespace (``/proc/self/ns/pid``). Where ``/proc`` tells
neither (not Linux), the space is the host name alone, as before.
"""

from __future__ import annotations

import functools
import os
import socket
from pathlib import Path

SEPARATOR = "/"  # never part of a host name


@functools.lru_cache(maxsize=1)
def pid_space() -> str:
    """This process's PID space: ``host/boot-id/pid-namespace-inode``, or the host name alone
    where the boot id or the namespace cannot be read."""
    host = socket.gethostname()
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        namespace = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return host
    return SEPARATOR.join((host, boot, str(namespace)))


def host_of(space: str) -> str:
    """The host name part of a PID space (a legacy record's whole value)."""
    return space.split(SEPARATOR, 1)[0]


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists in this PID namespace (one we may not signal counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True
