"""The ``mcu-exp`` command's first lines: a Ctrl-C (or SIGTERM) while the application's modules
are still importing (MLflow, Hydra, pandas take a second or two) is one line and the shell's 130
(143), like one at any later point (:func:`mcu_exp.app.main`), never an import traceback."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from typing import NoReturn

from mcu_exp import interrupts

INTERRUPTED_EXIT = 130  # what a shell reports for a command ended by SIGINT


def exit_interrupted(line: str, then: Callable[[], None] | None = None) -> NoReturn:
    """Print ``mcu-exp: <line>`` on stderr and exit with the shell's status for the signal that
    stopped the command (130 for SIGINT, 143 for SIGTERM; :func:`mcu_exp.interrupts.exit_status`).

    From then on a further signal ends the process at once and silently with that status: the
    interpreter's shutdown (threads joined, ``atexit`` handlers) interrupted would print an
    "Exception ignored" traceback after the one line. ``then`` runs after the line is printed
    (a launcher's own handler for the signal, :func:`mcu_exp.interrupts.hand_over`).

    CPython remembers a KeyboardInterrupt that escaped a string run by ``exec`` (dataclasses
    and namedtuple build their methods that way, so a Ctrl-C while Hydra or MLflow import often
    lands there) and, once the interpreter is finalised, kills the process with SIGINT even
    though the application caught it: the parent saw -2 instead of 130. A string that ``exec``
    runs to its end clears that record (CPython 3.11 to 3.14 reset it before each such run), so
    the exit status is the one chosen here."""
    status = interrupts.exit_status()
    print(f"mcu-exp: {interrupts.label(line)}", file=sys.stderr, flush=True)
    if then is not None:
        then()
    for signum in interrupts.SIGNALS:
        if signal.getsignal(signum) not in (signal.SIG_IGN, None):
            signal.signal(signum, lambda *_: os._exit(status))
    exec("pass", {})  # clears the stale interrupt record (see above); runs nothing
    raise SystemExit(status) from None


def interrupted_by(exc: BaseException) -> bool:
    """Whether a Ctrl-C is what caused ``exc``: a KeyboardInterrupt anywhere in its chain of
    causes and contexts (OmegaConf or Hydra interrupted halfway can fail in their own clean-up
    and report that failure instead)."""
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


def main() -> None:
    """Import the application, then run it."""
    interrupts.watch()
    try:
        from mcu_exp.app import main as app_main

        interrupts.check()
    except KeyboardInterrupt:
        exit_interrupted("interrupted while starting; nothing ran")
    app_main()
