"""Which of a job's metrics MLflow shows as metrics, and which as tables.

A job computes a few hundred numbers (every metric with its CI bounds and baselines, for
every reader group, the cross-proxy report, usage counters). As MLflow metrics they would
fill the UI with single-bar charts; the run logs a headline set (at most
:data:`MAX_HEADLINE` keys with its few series) as metrics and everything, headline
included, as the ``metrics.json`` artifact and the MLflow tables of :func:`metric_table`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from mcu_exp import names

MAX_HEADLINE = 40  # metric keys of a job run, series included

# Against all readers: the headline metrics with their interval bounds, the baselines they
# are read against, the verdict as numbers, the calibrated decision.
MAIN = (
    "n",
    "prevalence",
    "f1",
    "f1_ci_low",
    "f1_ci_high",
    "auc_score",
    "auc_score_ci_low",
    "auc_score_ci_high",
    "auc_score_perm_p",
    "auc_binary",
    "auc_binary_ci_low",
    "auc_binary_ci_high",
    "spearman",
    "prr",
    "prr_ci_low",
    "prr_ci_high",
    "prr_perm_p",
    "baseline_always_f1",
    "baseline_random_f1",
    "verdict.f1_vs_always",
    "verdict.auc_vs_chance",
    "tau",
    "calibration_fraction",
    "coverage",
)
GROUP = ("f1", "auc_score")  # per reader subgroup
OTHER = (f"{names.VS_REFERENCE_PREFIX}f1", f"{names.VS_REFERENCE_PREFIX}auc_binary", "job_seconds")
# The humans' ceiling against all readers and the proxy's share of it (every ceiling.* and
# share.* figure, per group too, is in metrics.json): added while the run stays within
# MAX_HEADLINE, in this order.
CEILING = ("ceiling.auc_score", "share.auc_score", "share.spearman")


def headline(metrics: Mapping[str, Any], groups: list[str], series: int = 0) -> dict[str, Any]:
    """The headline subset of ``metrics`` (keys it does not hold are left out): :data:`MAIN`,
    :data:`GROUP` for each reader subgroup in ``groups``, :data:`OTHER`, then as many of
    :data:`CEILING` as keep the run, with its ``series`` metric series, within
    :data:`MAX_HEADLINE` keys."""
    keys = list(MAIN)
    for group in groups:
        if group != names.ALL_READERS:
            keys += [names.group_prefix(group) + k for k in GROUP]
    keys += OTHER
    found = {k: metrics[k] for k in keys if k in metrics}
    room = MAX_HEADLINE - series - len(found)
    found.update({k: metrics[k] for k in [k for k in CEILING if k in metrics][: max(room, 0)]})
    return found


def _split(key: str) -> tuple[str, str]:
    """``(group, metric)`` of a metric key: ``group.<g>.<m>`` → (g, m), ``vs_reference.<m>`` →
    ("vs_reference", m), anything else → ("all", key)."""
    if key.startswith("group."):
        group, _, metric = key[len("group.") :].partition(".")
        return group, metric
    if key.startswith(names.VS_REFERENCE_PREFIX):
        return names.VS_REFERENCE_PREFIX.rstrip("."), key[len(names.VS_REFERENCE_PREFIX) :]
    return names.ALL_READERS, key


def metric_table(metrics: Mapping[str, Any]) -> pd.DataFrame:
    """Every metric as rows ``group, metric, value`` (value None when undefined or not a
    finite number), sorted: the long form MLflow's table views can filter."""
    rows = []
    for key in sorted(metrics):
        group, metric = _split(key)
        try:
            value: float | None = float(metrics[key])
        except (TypeError, ValueError):
            continue
        rows.append({"group": group, "metric": metric, "value": value if math.isfinite(value) else None})
    return pd.DataFrame(rows, columns=["group", "metric", "value"])
