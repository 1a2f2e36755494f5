"""Leases on cache keys: who holds one (host, pid, a token per generator) and when a lease
may be taken over (its holder is the taker, it expired, or its holder's process is gone on
this host; another host's pid means nothing here, so only expiry frees its leases).
"""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ClaimOwner:
    """Who holds a claim: one generator of one process on one host."""

    host: str = field(default_factory=socket.gethostname)
    pid: int = field(default_factory=os.getpid)
    token: str = field(default_factory=lambda: uuid.uuid4().hex[:12])

    @property
    def id(self) -> str:
        return f"{self.host}:{self.pid}:{self.token}"


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this host (a process we may not signal counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def lease_free(lease: tuple[Any, ...] | None, owner: ClaimOwner, now: float) -> bool:
    """Whether a key under ``lease`` (owner id, host, pid, expiry) may be taken by ``owner``."""
    if lease is None:
        return True
    holder, host, pid, expires = lease
    return holder == owner.id or expires < now or (host == owner.host and not pid_alive(int(pid)))
