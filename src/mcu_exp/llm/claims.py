"""Leases on cache keys: who holds one and when a lease may be taken over.

An owner is one generator of one process: a random token (128 bits, so two owners never share
an id), its pid, and the PID space that pid lives in (:func:`mcu_exp.pid_space.pid_space`:
host, boot and PID namespace), kept in the ``host`` column of ``claims``. The holder renews
its leases while it works (:meth:`GenerationCache.keep_claims`), so a lease is free when its
holder is the taker, when it expired (its holder stopped renewing it), or at once when its
holder's pid is gone and that pid belongs to the taker's own PID space. A pid of another
host, another boot or another container's namespace means nothing here, and a lease written
by an older version (whose ``host`` is a bare host name) names no namespace: only expiry
frees those.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass, field
from typing import Any

from mcu_exp.pid_space import host_of, pid_alive, pid_space

__all__ = ["ClaimOwner", "lease_free", "pid_alive", "holder_name"]


@dataclass(frozen=True)
class ClaimOwner:
    """Who holds a claim: one generator of one process in one PID space."""

    host: str = field(default_factory=pid_space)
    pid: int = field(default_factory=os.getpid)
    token: str = field(default_factory=lambda: uuid.uuid4().hex)

    @property
    def id(self) -> str:
        return f"{self.host}:{self.pid}:{self.token}"


def holder_name(host: str, pid: int) -> str:
    """``host:pid`` of a lease's holder, for a log line (the host name without its namespace)."""
    return f"{host_of(host)}:{pid}"


def lease_free(lease: tuple[Any, ...] | None, owner: ClaimOwner, now: float) -> bool:
    """Whether a key under ``lease`` (owner id, PID space, pid, expiry) may be taken by ``owner``."""
    if lease is None:
        return True
    holder, space, pid, expires = lease
    return holder == owner.id or expires < now or (space == owner.host and not pid_alive(int(pid)))
