"""Ctrl-C and the schedulers' stop signals end a job the same way, and never twice over.

Python turns SIGINT into a KeyboardInterrupt wherever the main thread happens to be. Inside a
library that can go wrong: OmegaConf interrupted halfway can fail in its own ``finally`` with an
AttributeError that the caller then treats as ordinary control flow, and the interrupt is gone
(measured: about one Ctrl-C in a hundred sent while Hydra composed let the whole job run). The
handler here also records the request, and :func:`check` raises it again at the points where a
job can stop cleanly: after composing, between generation batches, after the stages.

SIGTERM (``kill``, ``docker stop``, ``scancel``, SLURM's end of a time limit) and SIGUSR1 or
SIGUSR2 (SLURM's ``--signal`` warning before it kills a job) are handled like SIGINT; the job
exits with the shell's status for the signal (128 + its number: 130, 143, 138, 140).

While a remote backend streams (:func:`deferred`), the first signal only records the request:
the backend sends nothing more, waits a bounded grace for the answers already paid for, hands
them to the cache and then raises KeyboardInterrupt itself. A second signal raises at once.
A signal that lands while the interpreter runs a finaliser (``__del__``, a weakref callback) is
delivered again once the finaliser has returned: raised inside it, Python would print
"Exception ignored in …" and drop it.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any, NoReturn

# The signals a job handles, with the disposition it takes over (any other is left alone).
SIGNALS: dict[signal.Signals, Any] = {
    signal.SIGINT: signal.default_int_handler,
    signal.SIGTERM: signal.SIG_DFL,
    signal.SIGUSR1: signal.SIG_DFL,
    signal.SIGUSR2: signal.SIG_DFL,
}

_requested = False
_signum: int | None = None  # the first signal received
_taken = 0  # signals that took effect (raised, or recorded while deferring)
_deferring = 0  # nesting depth of deferred()
_chained: dict[int, Callable[[int, FrameType | None], Any]] = {}  # a launcher's own handlers, run after the job


def _in_finaliser(frame: FrameType | None) -> bool:
    """Whether ``frame`` runs inside a ``__del__`` method or a ``weakref.finalize`` callback."""
    while frame is not None:
        code = frame.f_code
        if code.co_name == "__del__" or (code.co_name == "__call__" and code.co_filename.endswith("weakref.py")):
            return True
        frame = frame.f_back
    return False


def _on_signal(signum: int, frame: FrameType | None) -> None:
    global _requested, _signum, _taken
    _requested = True
    if _signum is None:
        _signum = signum
    if _in_finaliser(frame):  # delivered again once the finaliser has returned
        later = threading.Timer(0.05, os.kill, (os.getpid(), signum))
        later.daemon = True
        later.start()
        return
    _taken += 1
    if _deferring and _taken == 1:
        return
    raise KeyboardInterrupt


def watch(*, chain: bool = False) -> None:
    """Record SIGINT, SIGTERM, SIGUSR1 and SIGUSR2 from now on, where each still has Python's own
    disposition (a process started with SIGINT ignored, e.g. in the background by a shell, keeps
    ignoring it). ``chain=True`` (inside a job) also takes over a signal another Python handler
    holds (submitit's pre-emption and SIGTERM handlers in a SLURM worker); :func:`hand_over`
    runs that handler once the job has ended."""
    for signum, default in SIGNALS.items():
        current = signal.getsignal(signum)
        if current is default:
            signal.signal(signum, _on_signal)
        elif chain and callable(current) and current is not _on_signal and current is not signal.default_int_handler:
            _chained[int(signum)] = current
            signal.signal(signum, _on_signal)


def check() -> None:
    """Raise KeyboardInterrupt when a signal came since :func:`watch` (no-op otherwise, and
    while a remote backend finishes its requests in flight, see :func:`deferred`)."""
    if _requested and not _deferring:
        raise KeyboardInterrupt


def requested() -> bool:
    """Whether a signal came since :func:`watch`."""
    return _requested


@contextmanager
def deferred() -> Iterator[None]:
    """Inside: the first signal is only recorded (:func:`requested`), for a caller that polls
    it and stops by itself after storing what it already paid for; a second one raises."""
    global _deferring
    _deferring += 1
    try:
        yield
    finally:
        _deferring -= 1


def exit_status() -> int:
    """The shell's status for the signal that stopped the job: 128 + its number (130 for a
    KeyboardInterrupt no signal here raised)."""
    return 128 + (_signum if _signum is not None else int(signal.SIGINT))


def label(line: str) -> str:
    """``line`` (``interrupted…``) naming the signal when it was not SIGINT."""
    if _signum in (None, signal.SIGINT) or not line.startswith("interrupted") or line.startswith("interrupted by "):
        return line
    return f"interrupted by {signal.Signals(_signum).name}{line[len('interrupted') :]}"


def hand_over() -> None:
    """Run the launcher's own handler for the signal that stopped the job, if it had one
    (submitit requeues a pre-empted job or records it as not finished); it may raise or exit."""
    if _signum is not None and _signum in _chained:
        _chained[_signum](_signum, None)


INTERRUPTED_EXIT = 130  # what a shell reports for a command ended by SIGINT


def exit_interrupted(line: str, then: Callable[[], None] | None = None) -> NoReturn:
    """Print ``mcu-exp: <line>`` on stderr and exit with the shell's status for the signal that
    stopped the command (130 for SIGINT, 143 for SIGTERM; :func:`exit_status`).

    From then on a further signal ends the process at once and silently with that status: the
    interpreter's shutdown (threads joined, ``atexit`` handlers) interrupted would print an
    "Exception ignored" traceback after the one line. ``then`` runs after the line is printed
    (a launcher's own handler for the signal, :func:`hand_over`).

    CPython remembers a KeyboardInterrupt that escaped a string run by ``exec`` (dataclasses
    and namedtuple build their methods that way, so a Ctrl-C while Hydra or MLflow import often
    lands there) and, once the interpreter is finalised, kills the process with SIGINT even
    though the application caught it: the parent saw -2 instead of 130. A string that ``exec``
    runs to its end clears that record (CPython 3.11 to 3.14 reset it before each such run), so
    the exit status is the one chosen here."""
    status = exit_status()
    print(f"mcu-exp: {label(line)}", file=sys.stderr, flush=True)
    if then is not None:
        then()
    for signum in SIGNALS:
        if signal.getsignal(signum) not in (signal.SIG_IGN, None):
            signal.signal(signum, lambda *_: os._exit(status))
    exec("pass", {})  # clears the stale interrupt record (see above); runs nothing
    raise SystemExit(status) from None


def interrupted_by(exc: BaseException) -> bool:
    """Whether a Ctrl-C (or stop signal) is what caused ``exc``: a signal recorded since
    :func:`watch`, or a KeyboardInterrupt anywhere in its chain of causes and contexts.

    OmegaConf interrupted halfway fails in its own clean-up (a ListConfig left holding None)
    and reports that failure with no trace of the KeyboardInterrupt in the chain, so the record
    of the signal is what tells; the chain serves where nothing called :func:`watch`."""
    if _requested:
        return True
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        current = todo.pop()
        if current is None or id(current) in seen:
            continue
        if isinstance(current, KeyboardInterrupt):
            return True
        seen.add(id(current))
        todo += [current.__cause__, current.__context__]
    return False


def raise_if_interrupted(exc: BaseException) -> None:
    """Raise KeyboardInterrupt in place of ``exc`` when a signal caused it (:func:`interrupted_by`).
    A command's handler of user errors calls it first, so that a Ctrl-C that made Hydra or
    OmegaConf fail halfway ends as an interrupt (one line, 130), never as a bad-input error."""
    if interrupted_by(exc):
        raise KeyboardInterrupt from None
