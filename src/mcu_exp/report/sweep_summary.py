"""A sweep's summary: one row per job, sorted by the headline, and the sentence that answers
"does any configuration beat the always-understandable baseline?".

Each row carries F1 [CI], the always-1 baseline's F1, ΔF1 against it with its paired interval
(``f1_minus_always``, :mod:`mcu_exp.evaluation.versus_always`), AUC (score) [CI], its AUC (score)
minus the humans' upper bound on the same programs with the paired interval over programs
(``vs_ceiling.upper``; a job logged before the bounds shows its share of ceiling there, labelled
"old run", and keeps ``share.auc_score`` in the CSV) and whether ΔF1's interval lies above 0
(✓) or not (✗). Rows are sorted by ΔF1's lower bound, then AUC (score)'s lower bound, best
first; an undefined headline and jobs that did not finish come last. The frame holds numbers
(``value``, ``_ci_low``, ``_ci_high`` columns, named as in ``metrics.json``), which
``sweep_summary.csv`` keeps; :func:`display_frame` formats them for the terminal and the parent
run's description.
"""

from __future__ import annotations

import json
import math
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from mcu_exp import names
from mcu_exp.evaluation.versus_always import F1, HIGH, KEY, LOW, f1_minus_always
from mcu_exp.redact import redact_text
from mcu_exp.report import ranking

SUMMARY_FILE = "sweep_summary.csv"
BASELINE = "baseline_always_f1"
VS_UPPER = "vs_ceiling.upper"  # AUC (score) − the humans' upper bound, paired over programs
UPPER = "ceiling.upper_auc_score"
SHARE = "share.auc_score"  # a job logged before the bounds: its share of ceiling (read, never written)
BEATS = "beats_always"
NUMBERS = (
    F1,
    f"{F1}_ci_low",
    f"{F1}_ci_high",
    BASELINE,
    KEY,
    LOW,
    HIGH,
    "auc_score",
    "auc_score_ci_low",
    "auc_score_ci_high",
    UPPER,
    VS_UPPER,
    f"{VS_UPPER}_ci_low",
    f"{VS_UPPER}_ci_high",
    f"{VS_UPPER}_p_below",
    "tau",
    "coverage",
)
OLD_NUMBERS = (SHARE, f"{SHARE}_ci_low", f"{SHARE}_ci_high")  # kept only where a job logged them
COLUMNS = ("best", "job", "run", "status", *NUMBERS, BEATS, "verdict")
BEATS_MARK = {True: "✓", False: "✗"}
UPPER_HEADER = "AUC − upper bound"
BEST_MARK = "★"
BASELINE_NAME = "the always-understandable baseline"


def job_metrics(client: Any, run: Any) -> dict[str, float]:
    """Every metric a job computed: its ``metrics.json`` (in its output folder when this
    machine sees it, else from its artifacts), falling back to the run's MLflow metrics (the
    headline set); ΔF1 against always-1 derived when the job predates it; undefined as NaN."""
    from mcu_exp.tracking.artifacts import RunArtifacts

    found: Mapping[str, Any] = run.data.metrics
    local = Path(run.data.tags.get("mcu.output_dir", "")) / names.RESULTS_DIR / names.METRICS_FILE
    with tempfile.TemporaryDirectory() as tmp:
        path: Path | None = local if local.is_file() else None
        if path is None:
            path = RunArtifacts(client, run.info.run_id, run.info.artifact_uri).get(names.METRICS_FILE, Path(tmp))
        if path is not None:
            found = json.loads(path.read_text(encoding="utf-8"))
    metrics = {k: math.nan if v is None else float(v) for k, v in found.items()}
    if KEY not in metrics:
        metrics.update(f1_minus_always(metrics))
    return metrics


def _job_label(folder: Path, varying: Sequence[str]) -> str:
    """What tells a job apart, from the overrides Hydra recorded (``.hydra/overrides.yaml``):
    its swept values (``bootstrap_resamples=200``), or all its overrides."""
    from omegaconf import OmegaConf

    try:
        overrides = [str(o) for o in OmegaConf.load(folder / ".hydra" / "overrides.yaml")]
    except (OSError, ValueError):
        return "(no run)"
    values = {o.partition("=")[0].lstrip("+~"): o for o in overrides}
    shown = [values[k] for k in varying if k in values]
    return redact_text(" · ".join(shown or overrides))


def _sort_key(row: Mapping[str, Any]) -> tuple[Any, ...]:
    """Finished jobs first, then the headline's rank (:func:`mcu_exp.report.ranking.sort_key`:
    ΔF1's lower bound, then the AUC's, an undefined bound after every defined one), then the
    job number."""
    job = str(row["job"])
    headline = ranking.sort_key(ranking.headline(row))
    return (row["status"] != "FINISHED", *headline, int(job) if job.isdigit() else 0)


def summary_frame(
    children: Sequence[Any],
    metrics: Mapping[str, Mapping[str, float]],
    failed: Mapping[str, str] | None = None,
    folder: Path | None = None,
    varying: Sequence[str] = (),
) -> pd.DataFrame:
    """One row per job (:data:`COLUMNS`), sorted by the headline, the best one marked;
    ``metrics`` maps a run id to its job's metrics (:func:`job_metrics`). A job in ``failed``
    that opened no run gets a FAILED row with its swept values and error."""
    rows: list[dict[str, Any]] = []
    seen = {r.data.tags.get("mcu.job_num", "") for r in children}
    for job, message in (failed or {}).items():
        if job not in seen:
            label = _job_label(folder / job, varying) if folder is not None else ""
            rows.append({"job": job, "run": label or "(no run)", "status": "FAILED", "verdict": message})
    for run in children:
        m, tags = metrics.get(run.info.run_id, run.data.metrics), run.data.tags
        row: dict[str, Any] = {"job": tags.get("mcu.job_num", ""), "run": run.info.run_name, "status": run.info.status}
        row.update({key: m.get(key, math.nan) for key in NUMBERS})
        row.update({key: m[key] for key in OLD_NUMBERS if key in m})
        row["verdict"] = tags.get(names.TAG_VERDICT, tags.get("mcu.error", ""))
        rows.append(row)
    for row in rows:
        low = row.get(LOW, math.nan)
        row[BEATS] = None if row["status"] != "FINISHED" or math.isnan(low) else bool(low > 0)
        row["best"] = False
    rows.sort(key=_sort_key)
    if rows and rows[0]["status"] == "FINISHED" and not math.isnan(rows[0].get(LOW, math.nan)):
        rows[0]["best"] = True
    old = [key for key in OLD_NUMBERS if any(key in row for row in rows)]
    return pd.DataFrame(rows, columns=[*COLUMNS[:-2], *old, *COLUMNS[-2:]])


def _pct(value: float) -> str:
    return names.UNDEFINED if math.isnan(value) else f"{value:.1%}"


def _pp(value: float) -> str:
    """A difference of two rates in percentage points, signed."""
    return names.UNDEFINED if math.isnan(value) else f"{100 * value:+.1f} pp"


def _interval(row: Mapping[str, Any], key: str, fmt: Callable[[float], str]) -> str:
    """``value [low, high]``, ``undefined`` for an undefined value, "—" for a job without one."""
    value = row.get(key)
    if value is None or (row["status"] != "FINISHED" and (not isinstance(value, float) or math.isnan(value))):
        return "—"
    if math.isnan(value):
        return names.UNDEFINED
    low, high = row.get(f"{key}_ci_low", math.nan), row.get(f"{key}_ci_high", math.nan)
    if math.isnan(low) or math.isnan(high):
        return fmt(value)
    return f"{fmt(value)} [{fmt(low)}, {fmt(high)}]"


def _auc(value: float) -> str:
    return names.UNDEFINED if math.isnan(value) else f"{value:.3f}"


def _signed(value: float) -> str:
    return names.UNDEFINED if math.isnan(value) else f"{value:+.3f}"


def _share(value: float) -> str:
    return names.UNDEFINED if math.isnan(value) else f"{value:.0%}"


def _versus_upper(row: Mapping[str, Any]) -> str:
    """AUC (score) − the upper bound [CI]; an old job's share of ceiling, labelled; "—" for neither."""
    found = row.get(VS_UPPER)
    share = row.get(SHARE)
    if (found is None or pd.isna(found)) and isinstance(share, float) and not math.isnan(share):
        return f"share {_interval(row, SHARE, _share)} (old run)"
    return _interval(row, VS_UPPER, _signed)


def _delta(value: float) -> str:
    return names.UNDEFINED if math.isnan(value) else f"{100 * value:+.1f}"


DISPLAY: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "F1": lambda r: _interval(r, F1, _pct),
    "always-1 F1": lambda r: "—" if r["status"] != "FINISHED" else _pct(r[BASELINE]),
    "ΔF1 vs always-1 (pp)": lambda r: _interval(r, KEY, _delta),
    "AUC (score)": lambda r: _interval(r, "auc_score", _auc),
    UPPER_HEADER: _versus_upper,
    "beats always-1": lambda r: "—" if r[BEATS] is None or pd.isna(r[BEATS]) else BEATS_MARK[bool(r[BEATS])],
}


def display_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """The summary as text cells, in its order: the best mark, job, run, status and the
    formatted headline columns (:data:`DISPLAY`)."""
    rows = []
    for _, row in frame.iterrows():
        cells = {"": BEST_MARK if row["best"] else "", "job": row["job"], "run": row["run"], "status": row["status"]}
        cells.update({name: cell(row) for name, cell in DISPLAY.items()})
        rows.append(cells)
    return pd.DataFrame(rows, columns=["", "job", "run", "status", *DISPLAY])


def conclusion(frame: pd.DataFrame) -> str:
    """The sentence that answers the sweep's question (:func:`mcu_exp.report.ranking.answer`,
    the report's own): which configuration beats the always-understandable baseline and by how
    much, or that none does and how close the best came."""
    done = frame[frame["status"] == "FINISHED"]
    if done.empty:
        return f"No configuration finished, so none can be compared with {BASELINE_NAME}."
    rows = done.to_dict("records")
    return ranking.answer([str(r["run"]) for r in rows], [ranking.headline(r) for r in rows])


def render(frame: pd.DataFrame, title: str, width: int = 160, confidence: float = 0.95) -> str:
    """The summary as the terminal shows it: the table (best first, marked ★), its legend and
    the closing sentence."""
    import io

    from rich.console import Console
    from rich.table import Table

    shown = display_frame(frame)
    if (frame["status"] == "FINISHED").all():
        shown = shown.drop(columns=["status"])
    table = Table(title=title)
    for column in shown.columns:
        table.add_column(  # the signed interval of AUC − upper bound on one line
            column, justify="left" if column in ("", "run", "status") else "right", no_wrap=column == UPPER_HEADER
        )
    for _, row in shown.iterrows():
        table.add_row(*(str(row[c]) for c in shown.columns))
    out = io.StringIO()
    console = Console(file=out, width=width, force_terminal=False, color_system=None)
    console.print(table)
    legend = (
        f"value [{100 * confidence:g} % CI]; sorted by ΔF1's lower bound, then AUC (score)'s; ★ best; ✓: ΔF1's paired "
        "bootstrap interval lies above 0; AUC − upper bound: AUC (score) on the programs with two or more readers minus "
        "the humans' upper bound (beta-binomial reader model) on the same programs, paired, [CI over programs]"
    )
    if SHARE in frame.columns and frame[SHARE].notna().any():
        legend += "; share (old run): a job logged before the bounds, its (AUC − 0.5)/(humans' split-half AUC − 0.5)"
    console.print(legend, justify="left")
    return out.getvalue() + conclusion(frame) + "\n"
