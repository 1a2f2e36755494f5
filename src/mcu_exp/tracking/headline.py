"""Which of a job's metrics MLflow shows as metrics, and which as tables, params and tags.

A job computes a few hundred numbers (every metric with its CI bounds and baselines, for
every reader group, the cross-proxy report, usage counters). As MLflow metrics they would
fill the UI with single-bar charts; the run logs a headline set (at most
:data:`MAX_HEADLINE` keys with its few series) as metrics and everything, headline
included, as the ``metrics.json`` artifact and the MLflow tables of :func:`metric_table`.

The headline opens with the numbers a sweep is sorted by (:data:`SORT_KEYS`): ΔF1 against
the always-understandable baseline with its interval (``f1_minus_always``, ``_ci_low``,
``_ci_high``) and the lower bound of AUC (score), so sorting the runs table by
``f1_minus_always_ci_low`` puts the configuration that beats the baseline most surely first.
Then every metric the registry flags ``headline`` (with its CI bounds), the baselines, the
verdict as numbers, the calibrated decision. Descriptors of the data and the job (n,
prevalence, calibration fraction: params ``result.*``; job seconds: a tag) are no metrics:
they would otherwise sit beside the results as if they were some. The verdict is also a
readable tag (:func:`verdict_tags`: ✓ / ✗), and the headline a rounded one
(:func:`headline_tags`: ``mcu.headline``, ``MCC 0.16 [-0.24, 0.35] · AUC (score) 0.61 · High
46/50``): MLflow prints a metric with every stored digit and has no display format, while a tag
shows as written.

Sensitivity curves (:func:`chart_key`) are named for what their integer step means, e.g.
``sensitivity/f1_vs_threshold_milli.minilm``: F1 at threshold step/1000 of the scorer
``minilm``, so thresholds of different scorers never share a chart line.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

import pandas as pd

from mcu_exp import names

MAX_HEADLINE = 40  # metric keys of a job run, series included; every other figure is in its tables

# The sortable headline: MCC's and AUC (score)'s lower bounds (the rank), ΔF1 vs always-1 [CI],
# the share labelled High.
SORT_KEYS = (
    "mcc_ci_low",
    "f1_minus_always",
    "f1_minus_always_ci_low",
    "f1_minus_always_ci_high",
    "auc_score_ci_low",
    "labelled_high",
)
SORT_BY = "mcc_ci_low"  # then auc_score_ci_low: the order of the runs table and the sweep (report.ranking)
CI = ("_ci_low", "_ci_high")
# Against all readers, after the registry's headline metrics: the baselines they are read
# against, tests, the verdict as numbers, the calibrated decision.
MAIN = (
    "prr",
    "baseline_always_f1",
    "baseline_random_f1",
    "verdict.f1_vs_always",
    "verdict.auc_vs_chance",
    "tau",
    "coverage",
)
GROUP = ("f1", "auc_score")  # per reader subgroup
OTHER = (f"{names.VS_REFERENCE_PREFIX}f1", f"{names.VS_REFERENCE_PREFIX}auc_binary")
# The humans' two bounds against all readers, the proxy's difference to the upper one and its
# disattenuated ρ (every ceiling.*, vs_ceiling.* and disattenuated.* figure, per group too, is
# in metrics.json): added while the run stays within
# MAX_HEADLINE, in this order.
CEILING = ("ceiling.auc_score", "ceiling.upper_auc_score", "vs_ceiling.upper", "disattenuated.spearman")
DESCRIPTOR_PARAMS = ("n", "prevalence", "calibration_fraction")  # params result.<name>
DESCRIPTOR_TAGS = {"job_seconds": "mcu.job_seconds"}
VERDICT_TAGS = {"verdict.f1_vs_always": "mcu.beats_always", "verdict.auc_vs_chance": "mcu.beats_chance"}
MARKS = {1.0: "✓", 0.0: "✗", -1.0: "✗ (below)"}


def headline_metrics() -> list[str]:
    """The metrics the registry flags ``headline`` (``Metric.headline``), in listing order."""
    from mcu_exp.evaluation.registry import registered

    return [m.name for m in registered() if getattr(m, "headline", False)]


def headline(metrics: Mapping[str, Any], groups: list[str], series: int = 0) -> dict[str, Any]:
    """The headline subset of ``metrics`` (keys it does not hold are left out):
    :data:`SORT_KEYS`, each of :func:`headline_metrics` with its CI bounds, :data:`MAIN`,
    :data:`GROUP` for each reader subgroup in ``groups``, :data:`OTHER`, then as many of
    :data:`CEILING` as keep the run, with its ``series`` metric series, within
    :data:`MAX_HEADLINE` keys."""
    keys = list(SORT_KEYS)
    for name in headline_metrics():
        keys += [name, *(name + suffix for suffix in CI)]
    keys += MAIN
    for group in groups:
        if group != names.ALL_READERS:
            keys += [names.group_prefix(group) + k for k in GROUP]
    keys += OTHER
    found = {k: metrics[k] for k in dict.fromkeys(keys) if k in metrics}
    room = MAX_HEADLINE - series - len(found)
    found.update({k: metrics[k] for k in [k for k in CEILING if k in metrics][: max(room, 0)]})
    return found


def _text(value: Any) -> str:
    number = float(value)
    return names.UNDEFINED if math.isnan(number) else f"{number:.6g}"


def descriptor_params(metrics: Mapping[str, Any]) -> dict[str, str]:
    """Descriptors of the data as params ``result.<name>`` (n, prevalence, calibration fraction)."""
    return {f"result.{k}": _text(metrics[k]) for k in DESCRIPTOR_PARAMS if k in metrics}


def verdict_tags(metrics: Mapping[str, Any]) -> dict[str, str]:
    """The verdict as readable tags: ``mcu.beats_always`` (F1's interval above the always-1
    baseline: ✓, containing it: ✗, below it: ✗ (below)) and ``mcu.beats_chance`` (AUC's
    interval against 0.5), ``undefined`` when it cannot be told; and ``mcu.job_seconds``."""
    tags = {}
    for key, tag in VERDICT_TAGS.items():
        if key in metrics:
            value = float(metrics[key])
            tags[tag] = names.UNDEFINED if math.isnan(value) else MARKS.get(value, str(value))
    tags.update({tag: _text(metrics[k]) for k, tag in DESCRIPTOR_TAGS.items() if k in metrics})
    return tags


def _two(value: float) -> str:
    """Two decimals, as the sweep's summary prints MCC and AUC (score)."""
    return f"{value:.2f}"


def _finite(metrics: Mapping[str, Any], key: str) -> float:
    """``metrics[key]`` as a float, NaN when absent, None, undefined or not a number."""
    try:
        value = float(metrics[key])
    except (KeyError, TypeError, ValueError):
        return math.nan
    return value if math.isfinite(value) else math.nan


def _with_ci(metrics: Mapping[str, Any], key: str) -> str:
    """``0.16 [-0.24, 0.35]``; the value alone when a bound is undefined; ``undefined``."""
    value = _finite(metrics, key)
    if math.isnan(value):
        return names.UNDEFINED
    low, high = _finite(metrics, key + CI[0]), _finite(metrics, key + CI[1])
    if math.isnan(low) or math.isnan(high):
        return _two(value)
    return f"{_two(value)} [{_two(low)}, {_two(high)}]"


def _high(metrics: Mapping[str, Any]) -> str | None:
    """How many programs the proxy labelled High of how many, ``46/50`` (TP + FP of n; from the
    share when the counts were not logged, a percentage without n); None without either."""
    n, tp, fp = (_finite(metrics, k) for k in ("n", "tp", "fp"))
    share = _finite(metrics, "labelled_high")
    if not math.isnan(n) and not math.isnan(tp + fp):
        return f"{tp + fp:.0f}/{n:.0f}"
    if math.isnan(share):
        return None
    return f"{share:.0%}" if math.isnan(n) else f"{round(share * n)}/{n:.0f}"


def headline_text(metrics: Mapping[str, Any]) -> str | None:
    """The job's headline, rounded, in at most about 60 characters: MCC with its interval, AUC
    (score) and how many programs it labelled High, ``MCC 0.16 [-0.24, 0.35] · AUC (score) 0.61 ·
    High 46/50`` (two decimals, as the sweep's summary; ``undefined`` for an undefined metric,
    never 0; a figure the job did not compute is left out). None when it computed none."""
    parts = []
    if "mcc" in metrics:
        parts.append(f"MCC {_with_ci(metrics, 'mcc')}")
    if "auc_score" in metrics:
        auc = _finite(metrics, "auc_score")
        parts.append(f"AUC (score) {names.UNDEFINED if math.isnan(auc) else _two(auc)}")
    high = _high(metrics)
    if high is not None:
        parts.append(f"High {high}")
    return " · ".join(parts) or None


def headline_tags(metrics: Mapping[str, Any]) -> dict[str, str]:
    """The rounded headline as the tag ``mcu.headline`` (:func:`headline_text`; none when empty),
    the first column of the UI's views (:mod:`mcu_exp.tracking.ui_view`)."""
    text = headline_text(metrics)
    return {} if text is None else {names.TAG_HEADLINE: text}


_SERIES = re.compile(r"^sens\.(?P<grid>\w+?)_x(?P<scale>\d+)\.(?P<column>.+)$")


def chart_key(series: str, scorer: str | None) -> str:
    """The MLflow key of a sensitivity series (``sens.<grid>_x1000.<column>``, see
    :func:`mcu_exp.names.mlflow_series`): ``sensitivity/<column>_vs_<grid>_milli``, the
    threshold grid's with ``.<scorer>`` appended (a threshold is on its scorer's scale). Any
    other key is returned as it is."""
    found = _SERIES.match(series)
    if found is None:
        return series
    key = f"sensitivity/{found['column']}_vs_{found['grid']}_milli"
    if found["grid"] == names.THRESHOLD_GRID and scorer:
        key += f".{scorer}"
    return key


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
            value = float(metrics[key])
        except (TypeError, ValueError):
            continue
        rows.append({"group": group, "metric": metric, "value": value if math.isfinite(value) else None})
    return pd.DataFrame(rows, columns=["group", "metric", "value"])
