"""The end of a sweep: its summary and report in the parent run, and on the terminal the table,
the answer and the next steps.

:class:`SweepReport` is the sweep callback ``conf/config.yaml`` installs: the tracking side
(:class:`mcu_exp.tracking.sweep.SweepCallback`) opens and closes the parent run; this class fills
it before it closes with the summary (:mod:`mcu_exp.report.sweep_summary`: ``sweep_summary.csv``,
an MLflow table, the run description), a probe sweep's paired analysis
(:mod:`mcu_exp.report.probe_sweep`) and ``mcu-exp report`` over the finished jobs, then prints
the summary and, as commands that work for this sweep's store and experiment, where the report
is, how to make it again and how to open the sweep in the MLflow UI.
"""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

from mcu_exp import names
from mcu_exp.report import sweep_summary
from mcu_exp.tracking.artifacts import run_address, ui_address
from mcu_exp.tracking.conventions import NOTE_TAG
from mcu_exp.tracking.sweep import SweepCallback, failed_jobs

log = logging.getLogger(__name__)

DEFAULT_EXPERIMENT = "mcu_exp"  # what `mcu-exp report` reads without --experiment


def report_command(sweep: str, experiment: str, debug: bool, uri: str) -> str:
    """The ``mcu-exp report`` command that selects this sweep's runs: ``--experiment`` when it is
    not the default one, ``--debug`` for debug runs (which a report skips otherwise),
    ``--tracking-uri`` when the store is not the one the command finds by itself."""
    from mcu_exp.report.build import default_tracking_uri

    parts = ["mcu-exp report", f"--sweep {sweep}"]
    if experiment != DEFAULT_EXPERIMENT:
        parts.append(f"--experiment {experiment}")
    if debug:
        parts.append("--debug")
    if uri != default_tracking_uri():
        parts.append(f"--tracking-uri {uri}")
    return " ".join(parts)


class SweepReport(SweepCallback):
    """The sweep's parent run filled with the summary and the report (see the module docstring)."""

    def summarise(self, run_id: str, children: list[Any], failed: dict[str, str], status: str) -> str:
        """Log and print the sweep's summary (and report); return the parent's final status."""
        metrics = {r.info.run_id: sweep_summary.job_metrics(self.client, r) for r in children}
        frame = sweep_summary.summary_frame(children, metrics, failed, self.folder, self.varying)
        unfinished = int((frame["status"] != "FINISHED").sum())
        self._log_summary(run_id, frame)
        report = self._log_report(run_id) if len(frame) > unfinished and self.report else None
        title = f"{self.title}\n{len(frame)} jobs" + (f", {unfinished} not finished" if unfinished else "")
        confidence = _confidence(children)
        print(sweep_summary.render(frame, title, _width(), confidence), end="")
        print(self._probe_analysis(run_id, children), end="")
        print(self._pooled_analysis(run_id, children, metrics), end="")
        steps = self._next_steps(run_id, report, finished=len(frame) > unfinished)
        print("\n".join(steps))
        self.client.set_tag(run_id, NOTE_TAG, self._description(frame, unfinished, confidence, report))
        if unfinished:
            self.client.set_tag(run_id, "mcu.error", f"{unfinished} of {len(frame)} jobs did not finish")
            return "FAILED"
        return status

    def summarise_folders(self, folder: Path) -> None:
        """``tracking=none``: the same summary table from the job folders' ``metrics.json``,
        printed and written to ``sweep_summary.csv`` in the sweep folder."""
        children, metrics = sweep_summary.folder_jobs(folder, self.varying)
        failed = {job: error for job, error in failed_jobs(folder).items() if f"job-{job}" not in metrics}
        frame = sweep_summary.summary_frame(children, metrics, failed, folder, self.varying)
        frame.to_csv(folder / sweep_summary.SUMMARY_FILE, index=False)
        unfinished = int((frame["status"] != "FINISHED").sum())
        title = f"{self.title}\n{len(frame)} jobs" + (f", {unfinished} not finished" if unfinished else "")
        confidence = float(next(iter(metrics.values()), {}).get("confidence", 0.95))
        print(sweep_summary.render(frame, title, _width(), confidence), end="")
        print(f"Summary: {folder / sweep_summary.SUMMARY_FILE} (tracking=none: no MLflow run, no report)")
        if _figures_left_out(folder):
            print(f"Each job's own figures: mcu-exp figures {folder}")

    def _probe_analysis(self, run_id: str, children: list[Any]) -> str:
        """A probe sweep's paired analysis (:mod:`mcu_exp.report.probe_sweep`), logged on the
        parent run; "" when none applies or it fails (a warning: the sweep's results stand)."""
        from mcu_exp.report.probe_sweep import analyse_probe_sweep

        try:
            return analyse_probe_sweep(self.client, run_id, children)
        except (OSError, ValueError, KeyError) as exc:
            log.warning("no paired analysis of the probe sweep: %s", exc)
            return ""

    def _pooled_analysis(self, run_id: str, children: list[Any], metrics: dict[str, dict[str, float]]) -> str:
        """A sweep over datasets' pooled estimate (:mod:`mcu_exp.report.pooled_sweep`), logged on
        the parent run; "" when none applies or it fails (a warning: the sweep's results stand)."""
        from mcu_exp.report.pooled_sweep import analyse_pooled_sweep

        try:
            return analyse_pooled_sweep(self.client, run_id, children, metrics)
        except (OSError, ValueError, KeyError) as exc:
            log.warning("no pooled estimate of the sweep's datasets: %s", exc)
            return ""

    def _next_steps(self, run_id: str, report: Path | None, finished: bool) -> list[str]:
        """Where the report is, the command that makes it again, the experiment and the UI."""
        from mcu_exp.tracking import ui_command
        from mcu_exp.tracking.ui_view import view_url

        lines = []
        command = report_command(self.sweep, self.experiment, self.debug, self.uri)
        if report is not None:
            lines.append(f"Report written: {report / 'report.html'} (also in the sweep run's artifacts, report/)")
            lines.append(f"  make it again: {command}")
        elif finished:
            lines.append(f"Report: {command}")
        if self.folder is not None and _figures_left_out(self.folder):
            lines.append(f"Each job's own figures (left out of a sweep's jobs): mcu-exp figures {self.folder}")
        lines.append(f"MLflow experiment {self.experiment!r}, sweep run {run_id} in {self.uri}")
        lines.append(f"  open the UI: {ui_command(self.uri)}")
        lines.append(f"  then: {run_address(self.uri, self.experiment_id, run_id)}")
        if self.view_url:
            lines.append(f"  this sweep's jobs by their headline: {self.view_url}")
        lines.append(f"  every run by its headline: {view_url(ui_address(self.uri), self.experiment_id)}")
        return lines

    def _description(self, frame: pd.DataFrame, unfinished: int, confidence: float, report: Path | None) -> str:
        """The parent's description in the UI: what was swept, how many jobs finished (and a link to
        the sweep's own view of the runs table, relative: it opens on whatever address the UI has),
        the answer, the summary (Markdown) and the command that makes the report."""
        from mcu_exp.markdown import md_text
        from mcu_exp.report.display import to_markdown

        done = f"{len(frame)} jobs" + (f", {unfinished} did not finish" if unfinished else ", all finished")
        where = "; the report is in this run's artifacts (`report/report.html`)" if report is not None else ""
        command = report_command(self.sweep, self.experiment, self.debug, self.uri)
        if self.view_url and "/#/" in self.view_url:
            done += f"; [its jobs by their headline](#/{self.view_url.split('/#/', 1)[1]})"
        return (
            f"**{md_text(self.title)}** ({done})\n\n**{md_text(sweep_summary.conclusion(frame))}**\n\n"
            f"{to_markdown(sweep_summary.display_frame(frame))}\n"
            f"value [{100 * confidence:g} % CI], sorted by MCC's lower bound (★ best)\n\n"
            f"Compare the runs: `{command}`{where}."
        )

    def _log_summary(self, run_id: str, frame: pd.DataFrame) -> None:
        """``sweep_summary.csv`` (numbers, in the sweep folder and the parent's artifacts) and
        the same rows as an MLflow table."""
        from mcu_exp.tracking.artifacts import RunArtifacts

        artifacts = RunArtifacts(self.client, run_id, self.client.get_run(run_id).info.artifact_uri)
        assert self.folder is not None
        frame.to_csv(self.folder / sweep_summary.SUMMARY_FILE, index=False)
        with tempfile.TemporaryDirectory() as tmp:
            frame.to_csv(Path(tmp) / sweep_summary.SUMMARY_FILE, index=False)
            artifacts.put_folder(Path(tmp))
        artifacts.put_table(frame, f"{names.TABLES_DIR}/sweep_summary.json")

    def _log_report(self, run_id: str) -> Path | None:
        """``mcu-exp report`` over this sweep's finished jobs, into ``<sweep dir>/report`` and
        the parent's artifacts (``report/``); its folder, or None when none could be made."""
        from mcu_exp.report.build import ReportError, make_report
        from mcu_exp.tracking.artifacts import RunArtifacts

        assert self.folder is not None
        try:
            out = make_report(
                self.uri, [self.experiment], sweep=self.sweep, out=self.folder / "report", log=False, include_debug=True
            )
        except ReportError as exc:
            log.warning("no report for the sweep: %s", exc)
            return None
        artifacts = RunArtifacts(self.client, run_id, self.client.get_run(run_id).info.artifact_uri)
        artifacts.put_folder(out, "report")
        return Path(out)


def _confidence(children: list[Any]) -> float:
    """The jobs' ``evaluation.confidence`` (0.95 when no job logged it)."""
    for run in children:
        value = run.data.params.get("evaluation.confidence")
        if value:
            return float(value)
    return 0.95


def _width() -> int:
    """The terminal's width, within 100–200 columns; 160 when not a terminal."""
    return max(100, min(200, os.get_terminal_size().columns if os.isatty(1) else 160))


def _figures_left_out(folder: Path) -> bool:
    """Whether some job of the sweep folder has results but not its figures (a sweep's jobs skip
    them unless ``evaluation.plots=true``; ``mcu-exp figures`` draws them)."""
    results = [path.parent for path in folder.glob("*/results/metrics.json")]
    return any(not (path / "sensitivity_threshold.png").exists() for path in results)
