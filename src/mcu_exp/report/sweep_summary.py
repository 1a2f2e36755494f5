"""A sweep's summary: one row per job, ranked, and the sentences that answer "which configuration
aligns best, and does any beat the always-understandable baseline?".

Each row carries its short run id, one column per swept parameter, MCC [CI], the share of
programs labelled High (flagged when nearly constant), F1, ΔF1 against the always-1 baseline
with its paired interval (``f1_minus_always``, :mod:`mcu_exp.evaluation.versus_always`), AUC
(score) [CI], its AUC (score) minus the humans' upper bound on the same programs
(``vs_ceiling.upper``, its interval in the CSV; a job logged before the bounds shows its share
of ceiling there, labelled) and whether ΔF1's interval lies above 0 (✓) or not (✗); what every
row shares (the always-1 F1, n) is said once under the table. Rows are ranked by MCC's lower
bound, then AUC (score)'s (:mod:`mcu_exp.report.ranking`), best first; an undefined headline
and jobs that did not finish come last. The frame holds numbers
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
    ranking.MCC,
    f"{ranking.MCC}_ci_low",
    f"{ranking.MCC}_ci_high",
    ranking.HIGH,
    "n",
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
COLUMNS = ("best", "job", "run", "run_id", "status", *NUMBERS, BEATS, "verdict")
PARAM = "param:"  # a swept parameter's column in the frame: param:<key>
SHORT_ID = 8  # characters of a run id printed (``mcu-exp compare`` accepts the prefix)
BEATS_MARK = {True: "✓", False: "✗"}
BEST_MARK = "★"
NEAR_CONSTANT_MARK = "!"
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
    MCC's lower bound, then the AUC's, an undefined bound after every defined one), then the
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
        row: dict[str, Any] = {
            "job": tags.get("mcu.job_num", ""),
            "run": run.info.run_name,
            "run_id": run.info.run_id,
            "status": run.info.status,
        }
        row.update({f"{PARAM}{key}": _param(run.data.params, key) for key in varying})
        row.update({key: m.get(key, math.nan) for key in NUMBERS})
        row.update({key: m[key] for key in OLD_NUMBERS if key in m})
        row["verdict"] = tags.get(names.TAG_VERDICT, tags.get("mcu.error", ""))
        rows.append(row)
    for row in rows:
        low = row.get(LOW, math.nan)
        row[BEATS] = None if row["status"] != "FINISHED" or math.isnan(low) else bool(low > 0)
        row["best"] = False
    rows.sort(key=_sort_key)
    if (
        rows
        and rows[0]["status"] == "FINISHED"
        and any(math.isfinite(x) for x in ranking.sort_key(ranking.headline(rows[0]))[1:])
    ):
        rows[0]["best"] = True
    old = [key for key in OLD_NUMBERS if any(key in row for row in rows)]
    params = [f"{PARAM}{key}" for key in varying]
    return pd.DataFrame(rows, columns=[*COLUMNS[:4], *params, *COLUMNS[4:-2], *old, *COLUMNS[-2:]])


def folder_jobs(folder: Path, varying: Sequence[str]) -> tuple[list[Any], dict[str, dict[str, float]]]:
    """A sweep's jobs read from its folder, as :func:`summary_frame` reads MLflow runs (for
    ``tracking=none``): one per numbered job folder that wrote ``results/metrics.json``, named by
    its swept overrides, its params the swept values; with the metrics by (pseudo) run id."""
    from types import SimpleNamespace

    from omegaconf import OmegaConf

    children, metrics = [], {}
    for job in sorted((p for p in folder.iterdir() if p.name.isdigit()), key=lambda p: int(p.name)):
        path = job / names.RESULTS_DIR / names.METRICS_FILE
        if not path.is_file():
            continue
        found = json.loads(path.read_text(encoding="utf-8"))
        values = {k: math.nan if v is None else float(v) for k, v in found.items()}
        if KEY not in values:
            values.update(f1_minus_always(values))
        try:
            overrides = [str(o) for o in OmegaConf.load(job / ".hydra" / "overrides.yaml")]
        except (OSError, ValueError):
            overrides = []
        params = {o.partition("=")[0].lstrip("+~"): o.partition("=")[2] for o in overrides}
        info = SimpleNamespace(run_id=f"job-{job.name}", run_name=_job_label(job, varying), status="FINISHED")
        data = SimpleNamespace(tags={"mcu.job_num": job.name}, params=params, metrics=values)
        children.append(SimpleNamespace(info=info, data=data))
        metrics[info.run_id] = values
    return children, metrics


def _param(params: Mapping[str, str], key: str) -> str:
    """A job's value of swept key ``key`` from its MLflow params (a config group: its ``name``)."""
    bare = key.lstrip("+~")
    return str(params.get(bare, params.get(f"{bare}.name", "")))


def _pct(value: float) -> str:
    return names.UNDEFINED if math.isnan(value) else f"{value:.1%}"


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


def _delta(value: float) -> str:
    return names.UNDEFINED if math.isnan(value) else f"{100 * value:+.1f}"


def _short(value: float) -> str:
    return names.UNDEFINED if math.isnan(value) else f"{value:.2f}"


def _high(row: Mapping[str, Any]) -> str:
    """The share of programs labelled High, ``!`` when nearly every program is labelled alike."""
    if row["status"] != "FINISHED":
        return "—"
    item = ranking.headline(row)
    if not math.isfinite(item.labelled_high):
        return names.UNDEFINED
    return f"{item.labelled_high:.0%}" + (NEAR_CONSTANT_MARK if item.near_constant else "")


def _delta_mark(row: Mapping[str, Any]) -> str:
    """ΔF1 vs always-1 in percentage points and ✓ when its paired interval lies above 0, else ✗."""
    if row["status"] != "FINISHED":
        return "—"
    value = row.get(KEY, math.nan)
    mark = "" if row[BEATS] is None or pd.isna(row[BEATS]) else " " + BEATS_MARK[bool(row[BEATS])]
    return _delta(float(value)) + mark


DISPLAY: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "MCC": lambda r: _interval(r, ranking.MCC, _short),
    "High": _high,
    "F1": lambda r: "—" if r["status"] != "FINISHED" else _pct(r[F1]),
    "ΔF1 pp": _delta_mark,
    "AUC (score)": lambda r: _interval(r, "auc_score", _short),
}
"""The headline columns, compact: a 6-job sweep's table fits 100 columns (every interval, and
AUC (score) − the humans' upper bound, is in ``sweep_summary.csv``)."""


def display_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """The summary as text cells, in its order: the best mark, job, short run id, each swept
    parameter, status and the formatted headline columns (:data:`DISPLAY`)."""
    params = [c for c in frame.columns if str(c).startswith(PARAM)]
    rows = []
    for _, row in frame.iterrows():
        run_id = str(row.get("run_id") or "")
        if run_id in ("", "nan") or run_id.startswith("job-"):  # tracking=none: no MLflow run
            run_id = ""
        job = f"{BEST_MARK}{row['job']}" if row["best"] else str(row["job"])
        cells = {"job": job, "run": run_id[:SHORT_ID] or "—"}
        cells.update({_param_header(str(c)): "" if pd.isna(row[c]) else str(row[c]) for c in params})
        cells["status"] = row["status"]
        cells.update({name: cell(row) for name, cell in DISPLAY.items()})
        rows.append(cells)
    return pd.DataFrame(rows, columns=["job", "run", *(_param_header(str(c)) for c in params), "status", *DISPLAY])


def _param_header(column: str) -> str:
    """A swept parameter's column header: its key's last part (``decision.epsilon`` → ``epsilon``)."""
    return column[len(PARAM) :].lstrip("+~").rsplit(".", 1)[-1]


def constants(frame: pd.DataFrame) -> dict[str, str]:
    """Cells every finished job shares (the always-1 F1, the number of programs): said once in
    the caption instead of a column of repeats."""
    done = frame[frame["status"] == "FINISHED"]
    out: dict[str, str] = {}
    for key, name, fmt in ((BASELINE, "always-1 F1", _pct), ("n", "programs", lambda v: f"{v:.0f}")):
        values = {round(float(v), 12) for v in done.get(key, pd.Series(dtype=float)) if pd.notna(v)}
        if len(values) == 1:
            out[name] = fmt(values.pop())
    return out


def conclusion(frame: pd.DataFrame) -> str:
    """The sentence that answers the sweep's question (:func:`mcu_exp.report.ranking.answer`,
    the report's own): which configuration beats the always-understandable baseline and by how
    much, or that none does and how close the best came."""
    done = frame[frame["status"] == "FINISHED"]
    if done.empty:
        return f"No configuration finished, so none can be compared with {BASELINE_NAME}."
    rows = done.to_dict("records")
    return ranking.answer([str(r["run"]) for r in rows], [ranking.headline(r) for r in rows])


def render(frame: pd.DataFrame, title: str, width: int = 100, confidence: float = 0.95) -> str:
    """The summary as the terminal shows it: the table (best first, marked ★; 100 columns for a
    6-job sweep), a caption with what every row shares and what the columns mean, and the
    closing sentences."""
    import io

    from rich import box
    from rich.console import Console
    from rich.table import Table

    shown = display_frame(frame)
    if (frame["status"] == "FINISHED").all():
        shown = shown.drop(columns=["status"])
    table = Table(
        title=title, box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1), collapse_padding=True, show_edge=False
    )
    left = {"run", "status", *(_param_header(str(c)) for c in frame.columns if str(c).startswith(PARAM))}
    for column in shown.columns:
        table.add_column(column, justify="left" if column in left else "right", no_wrap=True)
    for _, row in shown.iterrows():
        table.add_row(*(str(row[c]) for c in shown.columns))
    out = io.StringIO()
    console = Console(file=out, width=max(width, 100), force_terminal=False, color_system=None)
    console.print(table)
    shared = constants(frame)
    lines = []
    if shared:
        lines.append("Every row: " + "; ".join(f"{k} {v}" for k, v in shared.items()) + ".")
    lines.append(
        f"value [{100 * confidence:g} % CI]; ranked by MCC's lower bound (Matthews' correlation with the human "
        "labels: 0 for a labeller that ignores the programs), then AUC (score)'s; ★ best. High: share of programs "
        f"labelled High ({NEAR_CONSTANT_MARK}: all but ≤{ranking.NEAR_CONSTANT} alike, nearly constant). ΔF1 pp: "
        "F1 − always-1's F1, paired; ✓ when its interval lies above 0. run: the run id's first "
        f"{SHORT_ID} characters (mcu-exp compare takes them). Every interval, and AUC (score) − the humans' "
        f"upper bound, is in {SUMMARY_FILE}."
    )
    if SHARE in frame.columns and frame[SHARE].notna().any():
        lines.append(
            "A job logged before the bounds keeps its share of ceiling, (AUC − 0.5)/(humans' split-half AUC − 0.5), "
            f"in {SUMMARY_FILE}."
        )
    import textwrap

    caption = "\n".join(textwrap.fill(line, 100) for line in lines)
    return out.getvalue() + caption + "\n" + textwrap.fill(conclusion(frame), 100) + "\n"
