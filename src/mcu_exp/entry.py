"""The ``mcu-exp`` command's first lines: a Ctrl-C while the application's modules are still
importing (MLflow, Hydra, pandas take a second or two) is one line and the shell's 130, like a
Ctrl-C at any later point (:func:`mcu_exp.app.main`), never an import traceback."""

from __future__ import annotations

import sys
from typing import NoReturn

INTERRUPTED_EXIT = 130  # what a shell reports for a command ended by SIGINT


def exit_interrupted(line: str) -> NoReturn:
    """Print ``mcu-exp: <line>`` on stderr and exit with status 130.

    CPython remembers a KeyboardInterrupt that escaped a string run by ``exec`` (dataclasses
    and namedtuple build their methods that way, so a Ctrl-C while Hydra or MLflow import often
    lands there) and, once the interpreter is finalised, kills the process with SIGINT even
    though the application caught it: the parent saw -2 instead of 130. A string that ``exec``
    runs to its end clears that record (CPython 3.11 to 3.14 reset it before each such run), so
    the exit status is the one chosen here."""
    print(f"mcu-exp: {line}", file=sys.stderr)
    exec("pass", {})  # clears the stale interrupt record (see above); runs nothing
    raise SystemExit(INTERRUPTED_EXIT) from None


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
    from mcu_exp import interrupts

    interrupts.watch()
    try:
        from mcu_exp.app import main as app_main

        interrupts.check()
    except KeyboardInterrupt:
        exit_interrupted("interrupted while starting; nothing ran")
    app_main()
