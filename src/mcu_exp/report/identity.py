"""What makes two runs the same configuration, and which differences a table shows.

A run's configuration is every resolved parameter it logged (its MLflow params: the
flattened composed config, see :func:`mcu_exp.tracking.flatten_config`) except those in
:data:`NOT_CONFIGURATION`, which cannot change a result. Runs whose configurations are equal
are reruns; any other difference (``labels.min_fraction``, ``proxy.k``, a seed, ``proxy.r``,
the expert pool, ``scorer.num_layers`` …) makes a configuration of its own.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from fnmatch import fnmatchcase
from typing import Any

import pandas as pd

# Parameters that cannot change a result, as fnmatch patterns over the dotted param keys
# (``*`` also matches dots, so ``*.timeout_s`` reaches every model config: the target's,
# each expert's, a scorer fallback's). Everything else is part of a configuration.
NOT_CONFIGURATION: tuple[str, ...] = (
    # Where the job writes and caches (the same request gives the same cached sample), how it
    # talks to the console, and whether it stopped before running (then it logs no run).
    "paths.*",
    "cache.*",
    "tracking.*",
    "quiet",
    "preview_only",
    "evaluation.plots",
    # Whether the pinned, checksummed dataset files may be fetched when absent (same files).
    "dataset.download",
    # How fast a backend is driven: the same requests, batched, threaded or throttled
    # differently (the generation cache keys leave these out too), and where the key lives.
    "*.num_threads",
    "*.max_batch_size",
    "*.batch_size",
    "*.tensor_parallel_size",
    "*.n_per_request",
    "*.max_concurrency",
    "*.requests_per_minute",
    "*.tokens_per_minute",
    "*.max_retries",
    "*.backoff_initial_s",
    "*.backoff_max_s",
    "*.timeout_s",
    "*.interrupt_grace_s",
    "*.api_key_env",
    # Whether requests go through a provider's batch API (the same request bodies and cache
    # keys, answered later), how it is polled and where its batch ids are recorded.
    "*.batch",
    "*.batch_poll_s",
    "*.batch_poll_max_s",
    "*.batch_max_requests",
    "*.batch_dir",
    # Prices only feed the cost preview and the budget caps.
    "*.price_input_per_mtok",
    "*.price_output_per_mtok",
    "*.batch_discount",
    # What a run found (τ, the rule it applied), logged as params after the fact: results.
    "result.*",
)

PARAM_PREFIX = "params."  # a configuration param's column in a runs frame: params.<key>

# Params that have a column of their own (shown readably, θ only where the rule uses it).
DERIVED = {
    "model": "model.name",
    "proxy": "proxy.name",
    "dataset": "dataset.name",
    "scorer": "scorer.name",
    "labels_group": "labels.group",
    "rule": "decision.rule",
    "quantile": "decision.quantile",
    "epsilon": "decision.epsilon",
    "theta": "decision.theta",
}
IDENTITY = tuple(DERIVED)  # in table order
ALWAYS_SHOWN = ("model", "proxy")
# The column holding each config section's name. A section's own setting that goes with its
# name (a model's backend and id, a proxy's _target_, an expert pool's members) is named in a
# note instead of taking a column; one that varies under one name gets a column.
SECTION_NAMES = {
    "model": "model",
    "proxy": "proxy",
    "dataset": "dataset",
    "scorer": "scorer",
    "experts": f"{PARAM_PREFIX}experts.name",
    "reference": f"{PARAM_PREFIX}reference.name",
}
HEADERS = {
    "model": "model",
    "proxy": "proxy",
    "dataset": "dataset",
    "scorer": "scorer",
    "labels_group": "reader group",
    "rule": "rule",
    "quantile": "quantile",
    "epsilon": "ε",
    "theta": "θ",
    **{
        PARAM_PREFIX + k: v
        for k, v in {
            "labels.rule": "label rule",
            "labels.min_fraction": "label ≥",
            "labels.readers": "readers",
            "proxy.k": "k",
            "proxy.k_cal": "k_cal",
            "proxy.r": "r",
            "proxy.samples": "samples",
            "proxy.split_seed": "split seed",
            "proxy.sample_seed": "sample seed",
            "proxy.judge_seed": "judge seed",
            "seed": "seed",
            "scorer.num_layers": "layer",
            "experts.name": "experts",
            "experts.m": "m",
            "experts.top_n": "top n",
            "experts.reference_seed": "reference seed",
            "dataset.limit": "limit",
            "evaluation.bootstrap_resamples": "resamples",
            "evaluation.seed": "bootstrap seed",
            "model.temperature": "temperature",
            "model.max_new_tokens": "max new tokens",
        }.items()
    },
}


def is_configuration(key: str) -> bool:
    """Whether param ``key`` can change a result (it is not in :data:`NOT_CONFIGURATION`)."""
    return not any(fnmatchcase(key, pattern) for pattern in NOT_CONFIGURATION)


def param_columns(params: Mapping[str, str]) -> dict[str, str]:
    """A run's configuration params without a column of their own, as ``params.<key>`` columns."""
    derived = set(DERIVED.values())
    return {PARAM_PREFIX + k: str(v) for k, v in params.items() if k not in derived and is_configuration(k)}


def identity_columns(frame: pd.DataFrame) -> list[str]:
    """Every configuration column of a runs frame: the derived ones, then each param."""
    params = sorted(c for c in frame.columns if c.startswith(PARAM_PREFIX))
    return [k for k in IDENTITY if k in frame.columns] + params


def _text(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value)


def as_text(frame: pd.DataFrame) -> pd.DataFrame:
    """Cells as exact strings ("" where there is no value), to compare and group by."""
    return frame.astype(object).map(_text)


def _varies(frame: pd.DataFrame, key: str) -> bool:
    return bool(as_text(frame[[key]])[key].nunique() > 1)


def _goes_with_name(frame: pd.DataFrame, key: str) -> bool:
    """Whether ``key`` is a section's own setting with one value per name of the section."""
    if not key.startswith(PARAM_PREFIX):
        return False
    name = SECTION_NAMES.get(key[len(PARAM_PREFIX) :].split(".", 1)[0])
    if name is None or name == key or name not in frame.columns:
        return False
    text = as_text(frame[[name, key]])
    return bool((text.groupby(name)[key].nunique() <= 1).all())


def varying_keys(frame: pd.DataFrame) -> list[str]:
    """The columns that tell the configurations apart: model and proxy, then every other
    configuration column with more than one value, except a section's own settings that go
    with its name (see :func:`name_settings`)."""
    keys = list(ALWAYS_SHOWN)
    for key in identity_columns(frame):
        if key not in ALWAYS_SHOWN and _varies(frame, key) and not _goes_with_name(frame, key):
            keys.append(key)
    return keys


def name_settings(frame: pd.DataFrame) -> list[str]:
    """Configuration columns that vary but only together with their section's name (a model's
    backend, a proxy's own parameters, an expert pool's members): named in a note, not shown
    as columns."""
    return [
        k for k in identity_columns(frame) if k not in ALWAYS_SHOWN and _varies(frame, k) and _goes_with_name(frame, k)
    ]


def key_header(key: str) -> str:
    """A column's header: readable for the known keys, the raw param key for the others."""
    return HEADERS.get(key, key[len(PARAM_PREFIX) :] if key.startswith(PARAM_PREFIX) else key)


def key_text(key: str, value: Any) -> str:
    """A configuration value for display (numbers short, "—" when the run has none)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def row_label(row: Mapping[str, Any] | pd.Series, keys: Sequence[str], skip: Sequence[str] = ()) -> str:
    """A configuration in words: "gpt-4o · p1 · ε=0.1 · k=20" (model, proxy, dataset and
    scorer by value alone, other keys as header=value)."""
    bare = ("model", "proxy", "dataset", "scorer")
    parts = [
        key_text(k, row[k]) if k in bare else f"{key_header(k)}={key_text(k, row[k])}" for k in keys if k not in skip
    ]
    return " · ".join(parts) or "all runs"


def numeric_params(frame: pd.DataFrame) -> pd.DataFrame:
    """``params.*`` columns whose every value is a number, as numbers (so they sort as such)."""
    for column in [c for c in frame.columns if c.startswith(PARAM_PREFIX)]:
        values = frame[column]
        numbers = pd.to_numeric(values, errors="coerce")
        if values.notna().any() and numbers[values.notna()].notna().all():
            frame[column] = numbers
    return frame
