"""Paper-style comparison tables from MLflow runs: one row per configuration, alignment
metrics with 95 % CIs and the trivial baselines beside them.

A configuration is every result-changing parameter of a run (see
:mod:`mcu_exp.report.identity`); reruns of one collapse to the newest, counted in ``runs``.
Everything here works on plain pandas frames (see :func:`runs_frame`), so the tables can be
rebuilt from any list of runs, from MLflow or not. Text cells are made in
:mod:`mcu_exp.report.display`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from mcu_exp.calibration import RULES
from mcu_exp.evaluation.alignment_report import AUC_PERMUTATION_P
from mcu_exp.evaluation.registry import HEADLINE, PRIMARY
from mcu_exp.names import ALL_READERS, TAG_CLASS_WARNING, TAG_UNDEFINED, group_prefix
from mcu_exp.report import ceiling
from mcu_exp.report.columns import (
    BASELINE_PREFIX,
    GROUP_WARNING,
    NOTE_COLUMNS,
    UNDEFINED_COLUMN,
    main_metrics,
    vs_reference_metrics,
    with_ci,
)
from mcu_exp.report.display import display_subgroups, display_table, group_sizes, to_markdown
from mcu_exp.report.identity import (
    ALWAYS_SHOWN,
    HEADERS,
    IDENTITY,
    as_text,
    identity_columns,
    key_text,
    name_settings,
    numeric_params,
    param_columns,
    varying_keys,
)
from mcu_exp.report.lead import ranked_columns

__all__ = [  # the frame functions, and what callers of this module also reach through it
    "ALWAYS_SHOWN",
    "HEADERS",
    "IDENTITY",
    "UNDEFINED_COLUMN",
    "csv_table",
    "display_subgroups",
    "display_table",
    "group_sizes",
    "identity_columns",
    "key_text",
    "latest_per_config",
    "main_metrics",
    "name_settings",
    "run_record",
    "runs_frame",
    "subgroup_table",
    "subgroups",
    "summary_table",
    "to_markdown",
    "varying_keys",
    "vs_reference_metrics",
    "with_ci",
]

RUN_COLUMNS = ("run_id", "run_name", "experiment_id", "status", "start_time", "sweep")
_GROUP_HEAD, _GROUP_TAIL = group_prefix("\0").split("\0")  # "group.", "." around a group name


def _param(params: Mapping[str, str], key: str) -> str | None:
    value = params.get(key)
    return None if value in (None, "null", "None") else str(value)


def _number(text: str | None) -> float:
    try:
        return float(text) if text is not None else math.nan
    except ValueError:
        return math.nan


def _nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def run_record(
    run_id: str,
    run_name: str,
    experiment_id: str,
    status: str,
    start_time: int,
    tags: Mapping[str, str],
    params: Mapping[str, str],
    metrics: Mapping[str, float],
) -> dict[str, Any]:
    """One run as a flat dict: run columns, identity columns, every configuration param as
    ``params.<key>``, the row notes (class-size warning, verdict), then every metric by name.

    θ is set only when the run's decision rule uses it (else it would be a meaningless
    default); tags win over params where both say the same thing. A metric logged as NaN
    (or named in the ``mcu.undefined`` tag) is undefined, which the tables tell apart from
    a metric the run never logged.
    """
    rule = _param(params, "decision.rule") or tags.get("mcu.decision.rule")
    record: dict[str, Any] = {
        "run_id": run_id,
        "run_name": run_name,
        "experiment_id": experiment_id,
        "status": status,
        "start_time": int(start_time or 0),
        "sweep": tags.get("mcu.sweep", ""),
        "model": tags.get("mcu.model") or _param(params, "model.name") or "?",
        "proxy": tags.get("mcu.proxy") or _param(params, "proxy.name") or "?",
        "dataset": tags.get("mcu.dataset") or _param(params, "dataset.name") or "?",
        "scorer": tags.get("mcu.scorer") or _param(params, "scorer.name") or "?",
        "labels_group": tags.get("mcu.labels.group") or _param(params, "labels.group") or ALL_READERS,
        "rule": rule or "?",
        "quantile": _param(params, "decision.quantile") or "?",
        "epsilon": _number(_param(params, "decision.epsilon")),
        "theta": _number(_param(params, "decision.theta"))
        if rule and rule in RULES and RULES[rule].uses_theta
        else math.nan,
    }
    record.update(param_columns(params))
    for column, tag in NOTE_COLUMNS.items():
        record[column] = tags.get(tag) or ""
    for tag, text in tags.items():  # each reader subgroup's (and the reference's) class-size warning
        if tag.startswith(f"{TAG_CLASS_WARNING}."):
            record[f"{GROUP_WARNING}{tag[len(TAG_CLASS_WARNING) + 1 :]}"] = text
    undefined = {name for name, value in metrics.items() if _nan(float(value))}
    undefined |= {n.strip() for n in tags.get(TAG_UNDEFINED, "").split(",") if n.strip()}
    record[UNDEFINED_COLUMN] = frozenset(undefined)
    for name, value in metrics.items():
        if name not in record:
            record[name] = float(value)
    return record


def runs_frame(records: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """The records of :func:`run_record` as a frame indexed by run id (newest first)."""
    frame = pd.DataFrame(list(records))
    if frame.empty:
        return pd.DataFrame(columns=[*RUN_COLUMNS, *IDENTITY]).set_index("run_id")
    if UNDEFINED_COLUMN not in frame.columns:
        frame[UNDEFINED_COLUMN] = [frozenset()] * len(frame)
    frame[UNDEFINED_COLUMN] = [v if isinstance(v, frozenset) else frozenset() for v in frame[UNDEFINED_COLUMN]]
    frame = numeric_params(frame).sort_values("start_time", ascending=False, kind="stable")
    return frame.set_index("run_id")


def latest_per_config(frame: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """The newest run of each configuration (every identity column, not only ``keys``, must
    match: runs that differ in anything that changes results keep a row each), in the order
    of ``keys``, with a ``runs`` column counting the runs that shared the configuration."""
    if frame.empty:
        return frame.assign(runs=pd.Series(dtype=int))
    group_keys = identity_columns(frame) or list(keys)
    ident = as_text(frame[group_keys])
    counts = ident.groupby(group_keys, sort=False)[group_keys[0]].transform("size")
    latest = frame.assign(runs=counts.to_numpy())[~ident.duplicated(keep="first").to_numpy()]
    return latest.iloc[config_order(latest, keys, frame)]


def config_order(rows: pd.DataFrame, keys: Sequence[str], runs: pd.DataFrame | None = None) -> list[int]:
    """Row positions in table order: text keys in the order ``runs`` (default: ``rows``) first
    launched them (a sweep's model list keeps its order), numeric keys ascending, earlier
    keys first."""
    runs = rows if runs is None else runs
    launched = runs.sort_values("start_time", kind="stable") if "start_time" in runs.columns else runs
    ranks = {}
    for key in keys:
        column = rows[key]
        if pd.api.types.is_numeric_dtype(column):
            ranks[key] = column.fillna(math.inf).to_numpy()
        else:
            first = {v: i for i, v in enumerate(dict.fromkeys(as_text(launched[[key]])[key]))}
            ranks[key] = as_text(rows[[key]])[key].map(first).to_numpy()
    order = pd.DataFrame(ranks).reset_index(drop=True)
    return [int(i) for i in order.sort_values(list(keys), kind="stable").index]


def summary_table(frame: pd.DataFrame, keys: Sequence[str], extra: Sequence[str] = ()) -> pd.DataFrame:
    """Numbers for the CSV: the keys (and ``extra`` configuration columns), run count and id,
    n, each main metric with its CI bounds, AUC(score)'s permutation p-value, the humans' bounds and
    the proxy's differences to them the runs logged (:mod:`mcu_exp.report.ceiling`), every baseline, τ, coverage,
    prevalence and any ``vs_reference.*`` metric the runs logged; then the undefined metrics and the row notes."""
    rows = latest_per_config(frame, keys)
    columns: list[str] = [*keys, *extra, "runs", "n", "labelled_high"]
    for name in main_metrics():
        columns += with_ci(name)
    columns.append(AUC_PERMUTATION_P)
    columns += ceiling.columns(rows)
    columns += sorted(c for c in rows.columns if c.startswith(BASELINE_PREFIX))
    columns += ["tau", "coverage", "prevalence"]
    for name in vs_reference_metrics(rows):
        columns += with_ci(name)
    columns += [UNDEFINED_COLUMN, *NOTE_COLUMNS]
    table = rows.reindex(columns=columns)
    table[UNDEFINED_COLUMN] = [v if isinstance(v, frozenset) else frozenset() for v in table[UNDEFINED_COLUMN]]
    table[list(NOTE_COLUMNS)] = table[list(NOTE_COLUMNS)].fillna("")
    table.insert(len(keys) + len(extra) + 1, "run_id", rows.index)
    table.insert(len(keys) + len(extra) + 2, "run_name", rows["run_name"])
    headline = ranked_columns(table)  # rank, ΔF1 vs always-1 with bounds, the verdict as booleans
    at = table.columns.get_loc("tau")
    for offset, column in enumerate(headline.columns):
        table.insert(at + offset, column, headline[column])
    return table.reset_index(drop=True)


def subgroup_table(frame: pd.DataFrame, keys: Sequence[str], groups: Sequence[str] | None = None) -> pd.DataFrame:
    """Per human reader group, the run count, n and the headline metrics (F1 and binary AUC)
    with CIs: one row per configuration and group. A run's unprefixed metrics are against its own ``labels.group``
    (all readers, or e.g. professional readers alone), so that is the group they are shown
    under; then each ``group.<name>.*`` the runs logged (a subgroup equal to the run's own
    group is the same labels, shown once). When a run logged the humans' ceiling, each row also
    holds its group's bounds on AUC (score), the run's differences to them and its disattenuated
    ρ, with intervals (an old run's share of ceiling instead, where it logged one)."""
    rows = latest_per_config(frame, keys)
    found = groups or subgroups(rows)
    ceiling_columns = ceiling.group_columns(rows)
    out = []
    for run_id, row in rows.iterrows():
        own = str(row.get("labels_group") or ALL_READERS)
        undefined = row.get(UNDEFINED_COLUMN) or frozenset()
        for group, prefix in [(own, ""), *((g, group_prefix(g)) for g in found if g != own)]:
            first = f"{prefix}{PRIMARY}"
            if first not in row or (pd.isna(row.get(first)) and first not in undefined):
                continue
            item: dict[str, Any] = {k: row[k] for k in keys}
            item.update({"group": group, "runs": row.get("runs"), "n": row.get(f"{prefix}n"), "run_id": run_id})
            for name in HEADLINE:
                for column in with_ci(name):
                    item[column] = row.get(f"{prefix}{column}")
            for column in ceiling_columns:
                item[column] = row.get(f"{prefix}{column}")
            item[UNDEFINED_COLUMN] = frozenset(n[len(prefix) :] for n in undefined if n.startswith(prefix))
            warning = row.get("class_warning") if group == own else row.get(f"{GROUP_WARNING}{group}")
            item["class_warning"] = warning if isinstance(warning, str) else ""
            out.append(item)
    return pd.DataFrame(out)


def subgroups(frame: pd.DataFrame) -> list[str]:
    """Reader subgroups with metrics in the runs (``group.<name>.f1``), in first-seen order; a
    group's other F1-named keys (``group.<name>.ceiling.f1``) name no group of their own."""
    tail = f"{_GROUP_TAIL}{PRIMARY}"
    names = [c[len(_GROUP_HEAD) : -len(tail)] for c in frame.columns if c.startswith(_GROUP_HEAD) and c.endswith(tail)]
    names = [n for n in names if "." not in n]
    return list(dict.fromkeys(names))


def csv_table(table: pd.DataFrame) -> pd.DataFrame:
    """A numeric table ready for ``to_csv``: an undefined metric as ``NaN`` (read back as NaN
    by pandas, NumPy and R), a metric the run never logged as an empty cell, the undefined
    metrics' names "; "-joined."""
    if UNDEFINED_COLUMN not in table.columns:
        return table
    out = table.astype(object)
    for i, undefined in enumerate(table[UNDEFINED_COLUMN]):
        for name in undefined:
            if name in out.columns and pd.isna(table[name].iloc[i]):
                out.iloc[i, out.columns.get_loc(name)] = "NaN"
    out[UNDEFINED_COLUMN] = ["; ".join(sorted(u)) for u in table[UNDEFINED_COLUMN]]
    return out
