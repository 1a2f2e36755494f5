"""Tuning the decision (ε or τ) on cached scores, with nested cross-validation over programs
to show how much tuning on the evaluation programs overstates alignment.

The names below load on first use, so ``mcu-exp`` (which imports :mod:`mcu_exp.cli.tune`)
does not pay for scikit-learn or Optuna at start-up.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["SEARCHES", "Fold", "Scores", "TuneResult", "Tuned", "nested_cv", "read_per_program", "tune"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module("mcu_exp.tune.nested_cv"), name)
    raise AttributeError(f"module 'mcu_exp.tune' has no attribute {name!r}")
