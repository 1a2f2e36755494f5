"""The ``mcu-exp`` command's first lines: a Ctrl-C (or SIGTERM) while the application's modules
are still importing (MLflow, Hydra, pandas take a second or two) is one line and the shell's 130
(143), like one at any later point (:func:`mcu_exp.app.main`), never an import traceback."""

from __future__ import annotations

from mcu_exp import collector, interrupts


def main() -> None:
    """Import the application, then run it."""
    collector.tune()
    interrupts.watch()
    try:
        from mcu_exp.app import main as app_main

        interrupts.check()
    except KeyboardInterrupt:
        interrupts.exit_interrupted("interrupted while starting; nothing ran")
    except Exception as exc:  # Hydra's or OmegaConf's import interrupted halfway fails in its clean-up
        if not interrupts.interrupted_by(exc):
            raise
        interrupts.exit_interrupted("interrupted while starting; nothing ran")
    app_main()
