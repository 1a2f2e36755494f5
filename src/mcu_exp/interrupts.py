"""A Ctrl-C that a library swallowed still stops the job.

Python turns SIGINT into a KeyboardInterrupt wherever the main thread happens to be. Inside a
library that can go wrong: OmegaConf interrupted halfway can fail in its own ``finally`` with an
AttributeError that the caller then treats as ordinary control flow, and the interrupt is gone
(measured: about one Ctrl-C in a hundred sent while Hydra composed let the whole job run). The
handler here also records the request, and :func:`check` raises it again at the points where a
job can stop cleanly: after composing, between generation batches, after the stages."""

from __future__ import annotations

import signal
from types import FrameType

_requested = False


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    global _requested
    _requested = True
    raise KeyboardInterrupt


def watch() -> None:
    """Record every Ctrl-C from now on (where SIGINT still has Python's own handler: a process
    started with SIGINT ignored, e.g. in the background by a shell, keeps ignoring it)."""
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _on_sigint)


def check() -> None:
    """Raise KeyboardInterrupt when a Ctrl-C came since :func:`watch` (no-op otherwise)."""
    if _requested:
        raise KeyboardInterrupt
