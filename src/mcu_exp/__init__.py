"""mcu_exp: does a language model understand code the way humans do?

Behavioural proxies (P0-P3) turn a model's behaviour on each program into a High/Low label
through a calibrated threshold; the labels are scored against human comprehension labels.

:func:`load_run` reads one finished job (per-program table, metrics, config) from a local
store or a server, :func:`load_sweep` a sweep's ranked table (one row per job); they are imported
on first use, so ``import mcu_exp`` stays light.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: importing typing would double this package's import time
if TYPE_CHECKING:
    from mcu_exp.notebook import LoadedRun, RunNotFound, load_run, load_sweep

__version__ = "0.1.0"
__all__ = ["LoadedRun", "RunNotFound", "load_run", "load_sweep"]


def __getattr__(name: str) -> object:
    """``load_run``, ``load_sweep``, ``LoadedRun`` and ``RunNotFound`` from :mod:`mcu_exp.notebook`, on first use."""
    if name in __all__:
        from mcu_exp import notebook

        return getattr(notebook, name)
    raise AttributeError(f"module 'mcu_exp' has no attribute {name!r}")
