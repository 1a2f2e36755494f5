"""The project's user cache: one folder per user for what any working directory may reuse.

Downloaded datasets (``data/<name>``), converted models (``converted/``) and the name of the
last default MLflow store live there. ``$MCU_EXP_CACHE`` names it, else
``$XDG_CACHE_HOME/mcu_exp``, else ``~/.cache/mcu_exp``: the same place whatever the working
directory, and always safe to delete (everything in it is fetched or built again)."""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "MCU_EXP_CACHE"
"""Environment variable naming the project's user cache."""


def user_cache() -> Path:
    """The project's user cache folder (module docstring); not created here."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mcu_exp"
