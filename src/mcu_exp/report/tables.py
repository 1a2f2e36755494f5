"""Paper-style comparison tables from MLflow runs: one row per model × proxy (× ε, θ, … when
those vary), alignment metrics with 95 % CIs and the trivial baselines beside them.

Everything here works on plain pandas frames (see :func:`runs_frame`), so the tables can be
rebuilt from any list of runs, from MLflow or not.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from mcu_exp.calibration import RULES
from mcu_exp.evaluation.registry import HEADLINE, INTERVAL_KINDS, PRIMARY, header, metric, metric_names
from mcu_exp.evaluation.report import (
    ALWAYS,
    CI_HIGH,
    CI_LOW,
    RANDOM,
    baseline_key,
    format_interval,
    format_value,
)
from mcu_exp.names import ALL_READERS, VS_P0_PREFIX, group_prefix

# Identity of a configuration, in table order. model and proxy always show; the others only
# when they differ between the runs of a report.
IDENTITY = ("model", "proxy", "dataset", "scorer", "labels_group", "rule", "quantile", "epsilon", "theta")
ALWAYS_SHOWN = ("model", "proxy")
HEADERS = {"model": "model", "proxy": "proxy", "dataset": "dataset", "scorer": "scorer",
           "labels_group": "readers", "rule": "rule", "quantile": "quantile", "epsilon": "ε", "theta": "θ"}
RUN_COLUMNS = ("run_id", "run_name", "experiment_id", "status", "start_time", "sweep")
BASELINE_PREFIX = "baseline_"
BASELINE_HEADERS = {ALWAYS: "always-1", RANDOM: "random"}  # after the metric's header
_GROUP_HEAD, _GROUP_TAIL = group_prefix("\0").split("\0")  # "group.", "." around a group name


def main_metrics() -> list[str]:
    """Every registered rate and AUC, in table order: the summary's metric columns."""
    return metric_names(INTERVAL_KINDS)


def _with_ci(name: str) -> list[str]:
    return [name, f"{name}{CI_LOW}", f"{name}{CI_HIGH}"]


def _param(params: Mapping[str, str], key: str) -> str | None:
    value = params.get(key)
    return None if value in (None, "null", "None") else str(value)


def _number(text: str | None) -> float:
    try:
        return float(text) if text is not None else math.nan
    except ValueError:
        return math.nan


def run_record(run_id: str, run_name: str, experiment_id: str, status: str, start_time: int,
               tags: Mapping[str, str], params: Mapping[str, str],
               metrics: Mapping[str, float]) -> dict[str, Any]:
    """One run as a flat dict: run columns, identity columns, then every metric by name.

    θ is set only when the run's decision rule uses it (else it would be a meaningless
    default); tags win over params where both say the same thing.
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
        "labels_group": tags.get("mcu.labels.group") or _param(params, "labels.group") or "all",
        "rule": rule or "?",
        "quantile": _param(params, "decision.quantile") or "?",
        "epsilon": _number(_param(params, "decision.epsilon")),
        "theta": _number(_param(params, "decision.theta")) if rule in RULES and RULES[rule].uses_theta else math.nan,
    }
    for name, value in metrics.items():
        if name not in record:
            record[name] = float(value)
    return record


def runs_frame(records: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """The records of :func:`run_record` as a frame indexed by run id (newest first)."""
    frame = pd.DataFrame(list(records))
    if frame.empty:
        return pd.DataFrame(columns=[*RUN_COLUMNS, *IDENTITY]).set_index("run_id")
    frame = frame.sort_values("start_time", ascending=False, kind="stable")
    return frame.set_index("run_id")


def varying_keys(frame: pd.DataFrame) -> list[str]:
    """model and proxy, plus every other identity column with more than one value."""
    keys = list(ALWAYS_SHOWN)
    for key in IDENTITY:
        if key in ALWAYS_SHOWN or key not in frame.columns:
            continue
        if frame[key].astype(str).nunique(dropna=False) > 1:
            keys.append(key)
    return keys


def latest_per_config(frame: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """The newest run of each configuration (reruns of the same configuration collapse),
    sorted by the keys, with a ``runs`` column counting how many runs shared it."""
    if frame.empty:
        return frame.assign(runs=pd.Series(dtype=int))
    group_keys = list(keys)
    ident = frame[group_keys].astype(str)
    counts = ident.groupby(group_keys, sort=False)[group_keys[0]].transform("size")
    latest = frame.assign(runs=counts.to_numpy())[~ident.duplicated(keep="first").to_numpy()]
    return latest.iloc[config_order(latest, group_keys, frame)]


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
            first = {v: i for i, v in enumerate(dict.fromkeys(launched[key].astype(str)))}
            ranks[key] = column.astype(str).map(first).to_numpy()
    order = pd.DataFrame(ranks).reset_index(drop=True)
    return order.sort_values(list(keys), kind="stable").index.tolist()


def vs_p0_metrics(frame: pd.DataFrame) -> list[str]:
    """The "against P0" metrics the runs logged (``vs_p0.f1`` …), CI bounds left out."""
    names = [c for c in frame.columns if c.startswith(VS_P0_PREFIX) and not c.endswith((CI_LOW, CI_HIGH))]
    order = {m: i for i, m in enumerate(main_metrics())}
    return sorted(names, key=lambda c: (order.get(c[len(VS_P0_PREFIX):], len(order)), c))


def summary_table(frame: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """Numbers for the CSV: identity keys, run count and id, each main metric with its CI
    bounds, every baseline, τ, coverage, n and any ``vs_p0.*`` metric the runs logged."""
    rows = latest_per_config(frame, keys)
    columns: list[str] = [*keys, "runs"]
    for name in main_metrics():
        columns += _with_ci(name)
    columns += sorted(c for c in rows.columns if c.startswith(BASELINE_PREFIX))
    columns += ["tau", "coverage", "n", "prevalence"]
    for name in vs_p0_metrics(rows):
        columns += _with_ci(name)
    table = rows.reindex(columns=columns)
    table.insert(len(keys) + 1, "run_id", rows.index)
    table.insert(len(keys) + 2, "run_name", rows["run_name"])
    return table.reset_index(drop=True)


def subgroup_table(frame: pd.DataFrame, keys: Sequence[str], groups: Sequence[str] | None = None) -> pd.DataFrame:
    """Per human reader subgroup, the headline metrics (F1 and binary AUC) with CIs: one row
    per configuration and group ("all" plus each ``group.<name>.*`` the runs logged)."""
    rows = latest_per_config(frame, keys)
    found = groups or subgroups(rows)
    out = []
    for run_id, row in rows.iterrows():
        for group in [ALL_READERS, *found]:
            prefix = group_prefix(group)
            if f"{prefix}{PRIMARY}" not in row or pd.isna(row.get(f"{prefix}{PRIMARY}")):
                continue
            item: dict[str, Any] = {k: row[k] for k in keys}
            item.update({"group": group, "n": row.get(f"{prefix}n"), "run_id": run_id})
            for name in HEADLINE:
                for column in _with_ci(name):
                    item[column] = row.get(f"{prefix}{column}")
            out.append(item)
    return pd.DataFrame(out)


def subgroups(frame: pd.DataFrame) -> list[str]:
    """Reader subgroups with metrics in the runs (``group.<name>.f1``), in first-seen order."""
    tail = f"{_GROUP_TAIL}{PRIMARY}"
    names = [c[len(_GROUP_HEAD):-len(tail)] for c in frame.columns
             if c.startswith(_GROUP_HEAD) and c.endswith(tail)]
    return list(dict.fromkeys(names))


def _cell(name: str, value: Any, low: Any = None, high: Any = None) -> str:
    def clean(v: Any) -> float | None:
        return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)

    text = format_value(name, clean(value))
    lo, hi = clean(low), clean(high)
    if text != "—" and lo is not None and hi is not None:
        text += " " + format_interval(name, (lo, hi))
    return text


def key_text(key: str, value: Any) -> str:
    """An identity value for display (ε and θ as short numbers, "—" when missing)."""
    if isinstance(value, float):
        return "—" if math.isnan(value) else f"{value:g}"
    return str(value)


def display_table(summary: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """:func:`summary_table` as text cells: "67.7% [58.1%, 77.4%]", AUCs with 3 decimals,
    the baselines of the headline metric (F1), and "F1 vs P0" (…) columns when the runs
    logged them; headers and formats come from the metric registry."""
    table = pd.DataFrame({HEADERS.get(k, k): [key_text(k, v) for v in summary[k]] for k in keys})
    for name in main_metrics():
        if name in summary.columns and summary[name].notna().any():
            table[header(name)] = _cells(summary, name)
    for baseline, suffix in BASELINE_HEADERS.items():
        column = baseline_key(baseline, PRIMARY)
        if column in summary.columns:
            table[f"{header(PRIMARY)} {suffix}"] = [_cell(PRIMARY, v) for v in summary[column]]
    for column in vs_p0_metrics(summary):
        short = column[len(VS_P0_PREFIX):]
        table[f"{header(short)} vs P0"] = _cells(summary, column, short)
    return table


def _cells(summary: pd.DataFrame, column: str, name: str | None = None) -> list[str]:
    """Text cells of ``column`` with its CI columns, formatted as metric ``name``."""
    low, high = (summary[c] for c in _with_ci(column)[1:])
    return [_cell(name or column, v, lo, hi) for v, lo, hi in zip(summary[column], low, high, strict=True)]


def display_subgroups(table: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """:func:`subgroup_table` as text: one row per configuration, the headline metrics (F1
    and AUC) per group."""
    if table.empty:
        return table
    out: dict[tuple[str, ...], dict[str, str]] = {}
    for _, row in table.iterrows():
        ident = tuple(key_text(k, row[k]) for k in keys)
        cells = out.setdefault(ident, {})
        for name in HEADLINE:
            cells[f"{metric(name).short} {row['group']}"] = _cell(name, *(row[c] for c in _with_ci(name)))
    rows = [{**{HEADERS.get(k, k): v for k, v in zip(keys, ident, strict=True)}, **cells}
            for ident, cells in out.items()]
    return pd.DataFrame(rows).fillna("—")


def group_sizes(table: pd.DataFrame) -> str:
    """"all 50, bachelor 50, …": programs per reader group (the largest n seen per group)."""
    if table.empty:
        return ""
    sizes = table.groupby("group", sort=False)["n"].max()
    return ", ".join(f"{g} {int(n)}" for g, n in sizes.items() if pd.notna(n))


def to_markdown(table: pd.DataFrame) -> str:
    """A GitHub-flavoured Markdown table (pipes in cells escaped); text left, numbers right."""
    def esc(value: Any) -> str:
        return str(value).replace("|", "\\|").replace("\n", " ")

    header = "| " + " | ".join(esc(c) for c in table.columns) + " |"
    align = ["---" if i < 1 or not _numeric_column(table.iloc[:, i]) else "---:" for i in range(table.shape[1])]
    lines = [header, "| " + " | ".join(align) + " |"]
    for row in table.itertuples(index=False):
        lines.append("| " + " | ".join(esc(v) for v in row) + " |")
    return "\n".join(lines) + "\n"


def _numeric_column(column: pd.Series) -> bool:
    text = column.astype(str)
    return bool(len(text)) and bool(text.str.match(r"^[\d.\-—]").all())
