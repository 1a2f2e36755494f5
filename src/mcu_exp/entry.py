"""The ``mcu-exp`` command's first lines: a Ctrl-C while the application's modules are still
importing (MLflow, Hydra, pandas take a second or two) is one line and the shell's 130, like a
Ctrl-C at any later point (:func:`mcu_exp.app.main`), never an import traceback."""

from __future__ import annotations

import sys

INTERRUPTED_EXIT = 130  # what a shell reports for a command ended by SIGINT


def main() -> None:
    """Import the application, then run it."""
    try:
        from mcu_exp.app import main as app_main
    except KeyboardInterrupt:
        print("mcu-exp: interrupted while starting; nothing ran", file=sys.stderr)
        raise SystemExit(INTERRUPTED_EXIT) from None
    app_main()
