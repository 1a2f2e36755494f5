"""Helpers of the report and tracking tests: real runs in a real MLflow store, logged by
the project's own tracker from a config composed like the app composes it."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from mcu_exp.config import Config
from mcu_exp.tracking import flatten_config, mlflow_run, run_name, run_tags
from support.compose import compose

# Metrics of an ordinary run against all readers (values do not matter, their presence does).
METRICS = {
    "f1": 0.7,
    "f1_ci_low": 0.6,
    "f1_ci_high": 0.8,
    "accuracy": 0.6,
    "accuracy_ci_low": 0.5,
    "accuracy_ci_high": 0.7,
    "auc_binary": 0.55,
    "auc_binary_ci_low": 0.45,
    "auc_binary_ci_high": 0.65,
    "baseline_always_f1": 0.684,
    "baseline_random_f1": 0.518,
    "tau": 0.3,
    "coverage": 0.9,
    "n": 50.0,
    "prevalence": 0.52,
}


@dataclasses.dataclass(frozen=True)
class Store:
    """A fresh SQLite MLflow store and the outputs folder beside it."""

    outputs: Path
    uri: str


def compose_job(*overrides: str) -> tuple[DictConfig, Config]:
    """The composed config of ``mcu-exp OVERRIDES`` and its typed form (nothing run)."""
    raw = compose(*overrides)
    return raw, OmegaConf.to_object(raw)  # type: ignore[return-value]


def log_job(
    store: Store,
    experiment: str,
    overrides: Sequence[str] = (),
    metrics: Mapping[str, Any] | None = None,
    tags: Mapping[str, str] | None = None,
    series: Mapping[str, list[tuple[int, float]]] | None = None,
) -> str:
    """Log one job's run as the pipeline does (name, tags, flattened config as params, metrics
    and series); return its run id."""
    raw, cfg = compose_job(f"tracking.experiment={experiment}", *overrides)
    tracking = dataclasses.replace(cfg.tracking, uri=store.uri)
    with mlflow_run(tracking, str(store.outputs), run_name(cfg), {**run_tags(cfg), **(tags or {})}) as tracker:
        tracker.log_params(flatten_config(raw))
        tracker.log_metrics_and_series(METRICS if metrics is None else metrics, series or {})
        run_id = str(tracker.run_id)
    time.sleep(0.01)  # start times tell reruns apart (milliseconds)
    return run_id
