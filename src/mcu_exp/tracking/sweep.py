"""A multirun as one MLflow parent run whose children are its jobs.

:class:`SweepCallback` (a Hydra callback) opens the parent run when the sweep starts, named
after the swept overrides (``sweep · decision.epsilon=0.05,0.1 · labels.group=all,professional``),
and writes its id to ``<sweep dir>/mlflow_parent.json``. Each job, in whatever process or node a
launcher (joblib, SLURM) runs it, reads that file and opens its own run with the parent's id
(:func:`job_parent`) and a name that carries the overrides that vary (:func:`varying_suffix`).
When the sweep ends the parent is closed; it gets its best job's headline and its own view of
the runs table (:mod:`mcu_exp.tracking.ui_view`: this sweep's jobs alone, linked by the tag
``mcu.view_url``), and :meth:`SweepCallback.summarise` is the hook that fills it first.
``conf/config.yaml`` installs :class:`mcu_exp.report.sweep_report.SweepReport`, which fills it
with the sweep's summary table and report: reporting builds on tracking, never the reverse. A
sweep that stops on a failed job still closes its parent (FAILED).
"""

from __future__ import annotations

import atexit
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from mcu_exp import names
from mcu_exp.redact import redact_text

log = logging.getLogger(__name__)

PARENT_FILE = "mlflow_parent.json"
TAG_KIND, KIND_SWEEP = names.TAG_KIND, names.KIND_SWEEP
PARENT_TAG = "mlflow.parentRunId"  # MLflow's own nesting tag
FAILED_MARKER = "FAILED"  # left in a job's folder by a job that stopped on a user error
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


def failed_jobs(folder: Path) -> dict[str, str]:
    """Job number → error message of the sweep's jobs that stopped on a user error."""
    out = {}
    for marker in sorted(folder.glob(f"*/{FAILED_MARKER}")):
        out[marker.parent.name] = marker.read_text(encoding="utf-8").strip()
    return out


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
        self.experiment_id = ""
        self.debug = False
        self.offline = False
        self.view_url: str | None = None  # the sweep's own view in the MLflow UI, once stored

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        from mcu_exp.tracking.mlflow_run import open_experiment, owner_tags

        self.folder = Path(str(config.hydra.sweep.dir))
        overrides = list(config.hydra.overrides.task)
        if not bool(config.tracking.enabled):  # no parent run: the summary comes from the job folders
            self.offline = True
            self.title = ("[debug] " if config.dataset.get("limit") is not None else "") + sweep_title(overrides)
            self.varying = [k for k, _ in swept(overrides)]
            return
        self.report = bool(config.tracking.get("sweep_report", True))
        self.folder.mkdir(parents=True, exist_ok=True)
        debug = self.debug = config.dataset.get("limit") is not None
        self.client, self.uri, exp_id, self.experiment = open_experiment(
            config.tracking, str(config.paths.outputs), debug
        )
        self.experiment_id = str(exp_id)
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
        """Close the parent run (or, with tracking off, summarise the job folders); exit non-zero
        when a job stopped on an error."""
        self._close("FINISHED")
        if self.offline and self.folder is not None and self.folder.is_dir():
            try:
                self.summarise_folders(self.folder)
            except Exception as exc:  # noqa: BLE001 (the jobs' results are safe; say what went wrong)
                log.warning("could not summarise the sweep's job folders: %s", exc)
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
        """Summarise (:meth:`summarise`) and end the parent run; once. A parent no job reached
        (a bad override stopped every job before it started) is deleted."""
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
            from mcu_exp.tracking.artifacts import ui_address
            from mcu_exp.tracking.ui_view import log_best_child, set_sweep_view

            log_best_child(self.client, run_id, children)  # the parent row shows the best job's headline
            # the runs table on this sweep's jobs alone, linked from the parent (mcu.view_url)
            self.view_url = set_sweep_view(self.client, self.experiment_id, run_id, ui_address(self.uri))
            status = self.summarise(run_id, children, failed_early, status)
        except Exception as exc:  # noqa: BLE001 (the jobs' results are safe; say what went wrong)
            log.warning("could not summarise the sweep in MLflow run %s: %s", run_id, exc)
            status = "FAILED"
        self.client.set_terminated(run_id, status=status)

    def summarise_folders(self, folder: Path) -> None:
        """With tracking off: summarise the sweep from its job folders. Here: nothing; a subclass
        prints the summary."""

    def summarise(self, run_id: str, children: list[Any], failed: dict[str, str], status: str) -> str:
        """Fill the parent run ``run_id`` from its job runs ``children`` and the jobs that
        stopped before opening one (``failed``: job number → error); return its final status
        (FAILED when a job did not finish). Here: nothing to fill; a subclass adds the summary."""
        unfinished = len(failed) + sum(r.info.status != "FINISHED" for r in children)
        return "FAILED" if unfinished else status
