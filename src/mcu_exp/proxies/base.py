"""What a proxy receives and what it returns.

A proxy turns model behaviour into records and a per-program table; the pipeline scores
that table against the human labels. Proxies are plain functions ``run(ctx) -> ProxyOutcome``
looked up by name (or given as ``proxy.impl: "module:function"``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from omegaconf import DictConfig

from mcu_exp.data import Dataset

BUILTIN: dict[str, str] = {
    "p0": "mcu_exp.proxies.p0_subject:run",
    "p1": "mcu_exp.proxies.p1_consistency:run",
    "p2": "mcu_exp.proxies.p2_meta_review:run",
    "p3": "mcu_exp.proxies.p3_judge:run",
}


@dataclass
class JobContext:
    """Everything a proxy needs: the config, the data, and where to keep things."""

    cfg: DictConfig
    dataset: Dataset
    program_ids: list[str]  # the programs to label (those with human labels), in order
    run_dir: Path
    cache_dir: Path
    progress: bool = True


@dataclass
class ProxyOutcome:
    """A proxy's result.

    ``table`` is indexed by program id and has at least ``label`` (1 = High) and ``score``
    (continuous, higher = more understandable, for the threshold-free AUC). Calibrated
    proxies also fill ``alpha_cal``/``alpha_test`` so the pipeline can draw sensitivity
    curves; ``records`` are extra tables logged as artifacts (summaries, verdicts…).
    """

    table: pd.DataFrame
    params: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    records: dict[str, pd.DataFrame] = field(default_factory=dict)
    specs: dict[str, Any] = field(default_factory=dict)
    alpha_cal: np.ndarray | None = None
    alpha_test: np.ndarray | None = None
    quantile: str = "empirical"


ProxyFn = Callable[[JobContext], ProxyOutcome]


def resolve_proxy(name: str, impl: str | None = None) -> ProxyFn:
    """The function that runs proxy ``name`` (``impl`` = "module:function" overrides)."""
    target = impl or BUILTIN.get(name)
    if target is None:
        raise ValueError(f"proxy.name: unknown proxy {name!r}; known: {sorted(BUILTIN)} (or set proxy.impl)")
    module, _, attr = target.partition(":")
    if not attr:
        raise ValueError(f"proxy.impl must look like 'package.module:function', got {target!r}")
    try:
        fn = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"proxy.impl: cannot load {target!r}: {exc}") from exc
    return fn
