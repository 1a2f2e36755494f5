"""A multirun as one MLflow parent run whose children are its jobs.

:class:`SweepCallback` (a Hydra callback, enabled in ``conf/config.yaml``) opens the parent
run when the sweep starts, named after the swept overrides (``sweep · decision.epsilon=0.05,0.1
· labels.group=all,professional``), and writes its id to ``<sweep dir>/mlflow_parent.json``.
Each job, in whatever process or node a launcher (joblib, SLURM) runs it, reads that file and
opens its own run with the parent's id (:func:`job_parent`) and a name that carries the
overrides that vary (:func:`varying_suffix`). When the sweep ends, the parent gets the sweep's
summary table (one row per job, an MLflow table and a CSV) and the report, and the terminal
the same table with the command that compares the runs. A sweep that stops on a failed job
still closes its parent (FAILED), with the table of the jobs that ran.
"""

from __future__ import annotations

import atexit
import json
import logging
import math
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from mcu_exp import names
from mcu_exp.redact import redact_text
from mcu_exp.tracking.conventions import NOTE_TAG

log = logging.getLogger(__name__)

PARENT_FILE = "mlflow_parent.json"
TAG_KIND = "mcu.kind"
KIND_SWEEP = "sweep"
PARENT_TAG = "mlflow.parentRunId"  # MLflow's own nesting tag
SUMMARY_FILE = "sweep_summary.csv"
FAILED_MARKER = "FAILED"  # left in a job's folder by a job that stopped on a user error
SUMMARY_METRICS = ("f1", "auc_score", "auc_binary", "tau", "coverage")
NAMED_IN_TITLE = {"model", "proxy", "decision.epsilon", "decision.theta", "decision.quantile"}


def swept(overrides: Sequence[str]) -> list[tuple[str, str]]:
    """The sweep overrides among ``overrides`` as ``(key, values as written)``: those that
    list or range several values (``decision.epsilon=0.05,0.1``), in order."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    out = []
    for override in OverridesParser.create().parse_overrides(list(overrides)):
        if override.is_sweep_override():
            out.append((override.get_key_element().lstrip("+~"), str(override.input_line).split("=", 1)[1]))
    return out


def sweep_title(overrides: Sequence[str]) -> str:
    """``sweep · key=v1,v2 · …`` from the swept overrides (just ``sweep`` when none vary)."""
    return " · ".join(["sweep", *(f"{k}={v}" for k, v in swept(overrides))])


def short_keys(keys: Sequence[str]) -> dict[str, str]:
    """Each key by its last component (``labels.group`` → ``group``), or in full where two
    keys share one."""
    last = [k.rsplit(".", 1)[-1] for k in keys]
    return {k: (s if last.count(s) == 1 else k) for k, s in zip(keys, last)}


def varying_suffix(varying: Sequence[str], job_overrides: Sequence[str]) -> list[str]:
    """``key=value`` name parts of a job for each swept key the base run name does not
    already show (model, proxy, ε, θ, quantile), keys shortened (:func:`short_keys`)."""
    values = {}
    for override in job_overrides:
        key, _, value = override.partition("=")
        values[key.lstrip("+~")] = value
    shown = [k for k in varying if k not in NAMED_IN_TITLE and k in values]
    short = short_keys(shown)
    return [f"{short[k]}={values[k]}" for k in shown]


def _hydra_sweep() -> tuple[Path, list[str]] | None:
    """The sweep folder and this job's overrides, inside a multirun job; else None."""
    try:
        from hydra.core.hydra_config import HydraConfig
        from hydra.types import RunMode

        hc = HydraConfig.get()
    except (ImportError, ValueError):
        return None
    if hc.mode != RunMode.MULTIRUN:
        return None
    return Path(str(hc.sweep.dir)), list(hc.overrides.task)


def job_parent() -> dict[str, Any] | None:
    """The parent run record of the sweep this job belongs to (run id, tracking URI,
    experiment, swept keys), or None outside a multirun or when the sweep has none."""
    sweep = _hydra_sweep()
    if sweep is None:
        return None
    path = sweep[0] / PARENT_FILE
    try:
        return dict(json.loads(path.read_text()))
    except (OSError, ValueError):
        return None


def job_name_suffix() -> list[str]:
    """The name parts of this job's swept overrides (empty outside a sweep)."""
    sweep, parent = _hydra_sweep(), job_parent()
    if sweep is None:
        return []
    varying = parent["varying"] if parent else [k for k, _ in swept(_sweep_overrides(sweep[0]))]
    return varying_suffix(varying, sweep[1])


def _sweep_overrides(folder: Path) -> list[str]:
    """The sweep's overrides as Hydra recorded them in ``multirun.yaml`` (empty if absent)."""
    from omegaconf import OmegaConf

    try:
        return list(OmegaConf.load(folder / "multirun.yaml").hydra.overrides.task)
    except (OSError, AttributeError, ValueError):
        return []


def _cell(name: str, metrics: dict[str, float], ci: bool = True) -> str:
    """``value [low, high]`` in the metric's format; ``undefined`` for NaN, "—" when absent."""
    from mcu_exp.evaluation import metric

    if name not in metrics:
        return "—"
    value = metrics[name]

    def text(number: float) -> str:
        if math.isnan(number):
            return names.UNDEFINED
        try:
            return metric(name).format(number)
        except KeyError:
            return f"{number:.4f}"

    if math.isnan(value) or not ci or f"{name}_ci_low" not in metrics:
        return text(value)
    return f"{text(value)} [{text(metrics[f'{name}_ci_low'])}, {text(metrics[f'{name}_ci_high'])}]"


def failed_jobs(folder: Path) -> dict[str, str]:
    """Job number → error message of the sweep's jobs that stopped on a user error."""
    out = {}
    for marker in sorted(folder.glob(f"*/{FAILED_MARKER}")):
        out[marker.parent.name] = marker.read_text(encoding="utf-8").strip()
    return out


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


def summary_frame(
    children: Sequence[Any],
    failed: dict[str, str] | None = None,
    folder: Path | None = None,
    varying: Sequence[str] = (),
) -> pd.DataFrame:
    """One row per job: number, name, status, headline metrics with CIs, verdict. A job in
    ``failed`` that opened no run gets a FAILED row with its swept values and error."""
    rows = []
    seen = {r.data.tags.get("mcu.job_num", "") for r in children}
    for job, message in (failed or {}).items():
        if job not in seen:
            overrides = _job_label(folder / job, varying) if folder is not None else ""
            rows.append(
                {
                    "job": job,
                    "run": overrides or "(no run)",
                    "status": "FAILED",
                    **{m: "—" for m in SUMMARY_METRICS},
                    "verdict": message,
                }
            )
    for run in sorted(children, key=lambda r: int(r.data.tags.get("mcu.job_num", "0") or 0)):
        m, tags = run.data.metrics, run.data.tags
        row = {"job": tags.get("mcu.job_num", ""), "run": run.info.run_name, "status": run.info.status}
        for name in SUMMARY_METRICS:
            row[name] = _cell(name, m, ci=name in ("f1", "auc_score"))
        row["verdict"] = tags.get(names.TAG_VERDICT, tags.get("mcu.error", ""))
        rows.append(row)
    rows.sort(key=lambda r: int(r["job"]) if str(r["job"]).isdigit() else 0)
    return pd.DataFrame(rows, columns=["job", "run", "status", *SUMMARY_METRICS, "verdict"])


def print_summary(frame: pd.DataFrame, title: str) -> None:
    """The sweep's table on the terminal (without the verdict sentences, which are long)."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    shown = [c for c in frame.columns if c != "verdict"]
    for column in shown:
        table.add_column(column, justify="left" if column in ("run", "status") else "right")
    for _, row in frame.iterrows():
        table.add_row(*(str(row[c]) for c in shown))
    Console(width=max(100, min(200, os.get_terminal_size().columns if os.isatty(1) else 160))).print(table)


class SweepCallback(Callback):
    """Open the sweep's parent run at the start, fill and close it at the end."""

    def __init__(self) -> None:
        self.client: Any = None
        self.run_id: str | None = None
        self.folder: Path | None = None
        self.title = ""
        self.experiment = ""
        self.uri = ""
        self.sweep = ""
        self.varying: list[str] = []
        self.report = True

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        from mcu_exp.tracking.mlflow_run import open_experiment, owner_tags

        self.folder = Path(str(config.hydra.sweep.dir))
        if not bool(config.tracking.enabled):
            return
        overrides = list(config.hydra.overrides.task)
        self.report = bool(config.tracking.get("sweep_report", True))
        self.folder.mkdir(parents=True, exist_ok=True)
        debug = config.dataset.get("limit") is not None
        self.client, self.uri, exp_id, self.experiment = open_experiment(
            config.tracking, str(config.paths.outputs), debug
        )
        self.title = ("[debug] " if debug else "") + sweep_title(overrides)
        self.sweep = self.folder.name
        tags = {
            TAG_KIND: KIND_SWEEP,
            "mcu.sweep": self.sweep,
            "mcu.sweep_dir": str(self.folder.resolve()),
            "mcu.overrides": redact_text(" ".join(overrides))[:4000],
            names.TAG_DEBUG: str(debug).lower(),
            **owner_tags(),
        }
        run = self.client.create_run(exp_id, run_name=self.title, tags=tags)
        self.run_id = run.info.run_id
        self.varying = [k for k, _ in swept(overrides)]
        record = {"run_id": self.run_id, "uri": self.uri, "experiment": self.experiment, "varying": self.varying}
        (self.folder / PARENT_FILE).write_text(json.dumps(record, indent=2))
        atexit.register(self._close, "FAILED")  # a failed job stops Hydra before on_multirun_end

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        """Close the parent run; exit non-zero when a job stopped on an error."""
        self._close("FINISHED")
        failed = failed_jobs(self.folder) if self.folder is not None else {}
        if failed:
            print(
                f"mcu-exp: error: {len(failed)} job{'s' if len(failed) > 1 else ''} of the sweep failed "
                f"(job {', '.join(failed)}: {next(iter(failed.values()))})",
                file=sys.stderr,
            )
            raise SystemExit(1)

    def children(self, run_id: str) -> list[Any]:
        """The job runs of the sweep whose parent is ``run_id``, whatever their status."""
        exp = self.client.get_experiment_by_name(self.experiment)
        return list(
            self.client.search_runs(
                [exp.experiment_id], filter_string=f"tags.`{PARENT_TAG}` = '{run_id}'", max_results=5000
            )
        )

    def _close(self, status: str) -> None:
        """Log the summary (and the report), print it, end the parent run; once. A parent no
        job reached (a bad override stopped every job before it started) is deleted."""
        if self.run_id is None:
            return
        run_id, self.run_id = self.run_id, None
        atexit.unregister(self._close)
        assert self.folder is not None
        try:
            children = self.children(run_id)
            failed_early = failed_jobs(self.folder)
            if not children and not failed_early:
                self.client.set_terminated(run_id, status="FAILED")
                self.client.delete_run(run_id)
                (self.folder / PARENT_FILE).unlink(missing_ok=True)
                return
            frame = summary_frame(children, failed_early, self.folder, self.varying)
            status = self._summarise(run_id, frame, status)
        except Exception as exc:  # noqa: BLE001 (the jobs' results are safe; say what went wrong)
            log.warning("could not summarise the sweep in MLflow run %s: %s", run_id, exc)
            status = "FAILED"
        self.client.set_terminated(run_id, status=status)

    def _summarise(self, run_id: str, frame: pd.DataFrame, status: str) -> str:
        """Log and print the sweep's table (and report); return the parent's final status."""
        failed = int((frame["status"] != "FINISHED").sum())
        self._log_summary(run_id, frame)
        finished = len(frame) - failed
        if finished and self.report:
            self._log_report(run_id)
        print_summary(frame, f"{self.title}\n{len(frame)} jobs" + (f", {failed} not finished" if failed else ""))
        if finished:
            print(
                f"Compare them: mcu-exp report --sweep {self.sweep}"
                + (f" --tracking-uri {self.uri}" if self._custom_uri() else "")
            )
        self.client.set_tag(run_id, NOTE_TAG, self._description(frame, failed))
        if failed:
            self.client.set_tag(run_id, "mcu.error", f"{failed} of {len(frame)} jobs did not finish")
            return "FAILED"
        return status

    def _description(self, frame: pd.DataFrame, failed: int) -> str:
        """The parent's description in the UI: what was swept, how many jobs finished, the
        table (Markdown) and the command that compares the runs."""
        from mcu_exp.report.display import to_markdown

        done = f"{len(frame)} jobs" + (f", {failed} did not finish" if failed else ", all finished")
        shown = frame.drop(columns=["verdict"])
        where = "; the report is in this run's artifacts (`report/report.html`)" if self.report else ""
        return (
            f"**{self.title}** ({done})\n\n{to_markdown(shown)}\n\n"
            f"Compare the runs: `mcu-exp report --sweep {self.sweep}`{where}."
        )

    def _custom_uri(self) -> bool:
        return bool(os.environ.get("MLFLOW_TRACKING_URI")) or not self.uri.startswith("sqlite:")

    def _log_summary(self, run_id: str, frame: pd.DataFrame) -> None:
        from mcu_exp.tracking.artifacts import RunArtifacts

        artifacts = RunArtifacts(self.client, run_id, self.client.get_run(run_id).info.artifact_uri)
        assert self.folder is not None
        frame.to_csv(self.folder / SUMMARY_FILE, index=False)
        with tempfile.TemporaryDirectory() as tmp:
            frame.to_csv(Path(tmp) / SUMMARY_FILE, index=False)
            artifacts.put_folder(Path(tmp))
        artifacts.put_table(frame, f"{names.TABLES_DIR}/sweep_summary.json")

    def _log_report(self, run_id: str) -> None:
        """``mcu-exp report`` over this sweep's finished jobs, into ``<sweep dir>/report`` and
        the parent's artifacts (``report/``)."""
        from mcu_exp.report.cli import ReportError, make_report
        from mcu_exp.tracking.artifacts import RunArtifacts

        assert self.folder is not None
        try:
            out = make_report(
                self.uri, [self.experiment], sweep=self.sweep, out=self.folder / "report", log=False, include_debug=True
            )
        except ReportError as exc:
            log.warning("no report for the sweep: %s", exc)
            return
        artifacts = RunArtifacts(self.client, run_id, self.client.get_run(run_id).info.artifact_uri)
        artifacts.put_folder(out, "report")
