"""One MLflow run per Hydra job: where it is stored, what it is called, what it records.

The default store is a SQLite file under the outputs folder, so every job of every sweep
logs to the same place; ``MLFLOW_TRACKING_URI`` (or ``tracking.uri``) points elsewhere,
e.g. at a tracking server. Params are the flattened resolved config minus anything that
looks like a secret. A run tagged ``mcu.debug=true`` goes to ``<experiment>-debug``. A
metric that is undefined on the run's data is logged as NaN, which MLflow stores as NaN.
"""

from __future__ import annotations

import json
import logging
import math
import os
import socket
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from mcu_exp.config import TrackingConfig
from mcu_exp.names import TAG_DEBUG
from mcu_exp.pid_space import pid_space
from mcu_exp.redact import is_secret_key, redact_text
from mcu_exp.tracking import headline, shared
from mcu_exp.tracking.artifacts import LOGGED_ARTIFACTS, RunArtifacts, experiment_location, is_local_store
from mcu_exp.tracking.batch import DeferredClient
from mcu_exp.tracking.naming import unique_name
from mcu_exp.tracking.reserve import Reserve, release_stale
from mcu_exp.tracking.sqlite_store import ensure_created
from mcu_exp.tracking.sweep import PARENT_TAG, job_parent
from mcu_exp.tracking.ui_view import set_headline_view

log = logging.getLogger(__name__)

MAX_PARAM_CHARS = 500
TAG_HOST, TAG_PID = "mcu.host", "mcu.pid"  # who runs the job: a later job can tell it died
TAG_PID_SPACE = "mcu.pid_space"  # where that pid means something (mcu_exp.pid_space)
TAG_KILLED_REASON = "mcu.killed_reason"
DEBUG_SUFFIX = "-debug"  # debug and smoke runs' experiment: <tracking.experiment>-debug


def experiment_name(tracking: TrackingConfig, debug: bool = False) -> str:
    """The MLflow experiment of a run: ``tracking.experiment``, or its ``-debug`` twin for a
    debug run, so ``mcu-exp report`` and the UI never show smoke runs beside real ones."""
    return f"{tracking.experiment}{DEBUG_SUFFIX}" if debug else str(tracking.experiment)


def tracking_uri(tracking: TrackingConfig, outputs: str) -> str:
    """``MLFLOW_TRACKING_URI`` if set, else ``tracking.uri``, else SQLite under ``outputs``."""
    env = os.environ.get("MLFLOW_TRACKING_URI")
    if env:
        return env
    if tracking.uri:
        return str(tracking.uri)
    db = Path(outputs).resolve() / "mlflow.db"
    db.parent.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{db}"


def artifact_location(name: str, uri: str) -> str | None:
    """A new experiment's artifact location: relative to a local store's artifact root (see
    :mod:`mcu_exp.tracking.artifacts`); None lets a tracking server choose."""
    return experiment_location(name) if is_local_store(uri) else None


def store_lock(uri: str) -> AbstractContextManager[object]:
    """A file lock beside a SQLite store, held while a job opens it and finds its experiment.

    MLflow creates (and migrates) a SQLite store's schema when a client first opens it; two
    jobs of a parallel sweep doing that at once fail ("table _alembic_tmp_experiments already
    exists", "Online migration expected to match one row"). Servers need no lock.
    """
    if uri.startswith("sqlite:///"):
        from filelock import FileLock

        return FileLock(uri[len("sqlite:///") :] + ".lock", timeout=600)
    return nullcontext()


def _param_text(node: Any) -> str:
    """A config value as a param: a list as its items joined by ", " (an item quoted only when
    blank, padded or holding a comma), anything else as ``str``."""
    if isinstance(node, (list, tuple)):

        def item(x: Any) -> str:
            text = str(x)
            return (
                json.dumps(text)
                if isinstance(x, str) and (not text.strip() or text != text.strip() or "," in text)
                else text
            )

        return ", ".join(item(x) for x in node)
    return str(node)


def flatten_config(cfg: DictConfig | Mapping[str, Any], leave_out: tuple[str, ...] = ()) -> dict[str, str]:
    """The resolved config as dotted keys → short strings: ``hydra``, secret-looking keys,
    unset (``null``) values, a model's batch settings when it uses no batch API and the
    top-level sections in ``leave_out`` left out, lists
    flattened readably, URL user-info and remembered secrets masked in the values."""
    container = OmegaConf.to_container(cfg, resolve=True) if isinstance(cfg, DictConfig) else dict(cfg)
    out: dict[str, str] = {}

    def walk(prefix: str, node: Any) -> None:
        if isinstance(node, Mapping):
            unused = _unused_settings(node)
            for k, v in node.items():
                if k not in unused:
                    walk(f"{prefix}.{k}" if prefix else str(k), v)
            return
        if node is None or prefix.startswith("hydra") or is_secret_key(prefix):
            return
        if prefix.split(".", 1)[0] in leave_out:
            return
        text = redact_text(_param_text(node))
        out[prefix] = text if len(text) <= MAX_PARAM_CHARS else text[: MAX_PARAM_CHARS - 3] + "..."

    walk("", container)
    return out


def _unused_settings(node: Mapping[str, Any]) -> set[str]:
    """A model config's batch settings when it does not use a batch API (``batch: false``):
    they cannot matter to the run, so they are not logged."""
    if node.get("batch") is False:
        return {k for k in node if isinstance(k, str) and k.startswith("batch")}
    return set()


def loggable(value: Any) -> float | None:
    """A metric value as MLflow can store it: a float, NaN included (an undefined metric,
    which MLflow's stores keep as NaN); None for a non-number or ±inf (SQL stores would
    replace it with ±1.8e308, which reads as a number)."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isinf(number) else number


def loggable_metrics(metrics: Mapping[str, Any]) -> dict[str, float]:
    """The numeric metrics, NaN kept (undefined on the run's data), ±inf left out with a warning."""
    out: dict[str, float] = {}
    for k, v in metrics.items():
        number = loggable(v)
        if number is not None:
            out[k] = number
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            log.warning("metric %s is %s: not logged to MLflow", k, v)
    return out


def _process_start(pid: int) -> tuple[float | None, bool]:
    """Linux: when process ``pid`` started (seconds since the epoch) and whether it is a zombie
    (dead, not yet reaped); ``(None, False)`` where ``/proc`` cannot tell."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        boot = next(
            int(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines() if line.startswith("btime ")
        )
        return boot + int(fields[19]) / os.sysconf("SC_CLK_TCK"), fields[0] == "Z"
    except (OSError, ValueError, IndexError, StopIteration):
        return None, False


def process_alive(pid: int, started_ms: int | None = None) -> bool:
    """Whether process ``pid`` still runs and can be the one that started a run at
    ``started_ms`` (a pid reused by a process started later is not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        pass
    start, zombie = _process_start(pid)
    if zombie:
        return False
    return start is None or started_ms is None or start <= started_ms / 1000 + 1.0


def owner_tags() -> dict[str, str]:
    """The tags naming the process that runs a job (or a sweep): host, pid and PID space."""
    return {TAG_HOST: socket.gethostname(), TAG_PID: str(os.getpid()), TAG_PID_SPACE: pid_space()}


def mark_stale_runs(client: Any, experiment_id: str) -> list[str]:
    """Mark KILLED (tag ``mcu.killed_reason``) every RUNNING run of the experiment that was
    started in this process's PID space (:mod:`mcu_exp.pid_space`) by a process that no longer
    exists (``kill -9``); return their ids. Runs of other hosts, and of other containers of this
    host (another PID namespace, same host name), are left alone: their processes cannot be
    seen from here. A run of an older version, tagged with no PID space, is judged by its host."""
    host = socket.gethostname()
    stale = []
    for run in client.search_runs([experiment_id], filter_string="attributes.status = 'RUNNING'", max_results=1000):
        tags = run.data.tags
        pid = tags.get(TAG_PID, "")
        if tags.get(TAG_HOST) != host or tags.get(TAG_PID_SPACE, pid_space()) != pid_space():
            continue
        if not pid.isdigit() or process_alive(int(pid), run.info.start_time):
            continue
        reason = f"process {pid} on {host} ended without closing the run (found by process {os.getpid()})"
        client.set_tag(run.info.run_id, TAG_KILLED_REASON, reason)
        client.set_terminated(run.info.run_id, status="KILLED")
        release_stale(str(client.tracking_uri), run.info.run_id)
        log.warning("MLflow run %s was left RUNNING: %s; marked KILLED", run.info.run_id, reason)
        stale.append(run.info.run_id)
    return stale


class RunLogger:
    """Thin handle on an active MLflow run (or a no-op when tracking is off)."""

    def __init__(
        self,
        client: Any | None,
        run_id: str | None,
        uri: str | None,
        artifacts: RunArtifacts | None = None,
        scorer: str | None = None,
    ) -> None:
        self.client: Any = client  # None when tracking is off (see active)
        self.run_id = run_id
        self.uri = uri
        self.artifacts = artifacts
        self.scorer = scorer  # named in the threshold charts' keys (headline.chart_key)
        self.experiment_id: str | None = None  # the run's experiment (its UI address), once created

    @contextmanager
    def batched(self) -> Iterator[None]:
        """Metrics, params and tags logged inside reach the store together at the end, in as
        few ``log_batch`` calls as MLflow allows (:class:`~mcu_exp.tracking.batch.DeferredClient`)."""
        if not self.active or isinstance(self.client, DeferredClient):
            yield
            return
        client, self.client = self.client, DeferredClient(self.client, str(self.run_id))
        try:
            yield
        finally:
            deferred, self.client = self.client, client
            deferred.flush()

    @property
    def active(self) -> bool:
        return self.client is not None and self.run_id is not None

    def log_params(self, params: Mapping[str, str]) -> None:
        if not self.active:
            return
        from mlflow.entities import Param

        items = [Param(k, v) for k, v in params.items()]
        for i in range(0, len(items), 100):
            self.client.log_batch(self.run_id, params=items[i : i + 100])

    def log_metrics_and_series(self, metrics: Mapping[str, Any], series: Mapping[str, list[tuple[int, float]]]) -> None:
        """Scalar metrics (step 0) and every metric series (``(step, value)`` points) in as
        few ``log_batch`` calls as MLflow allows (1000 entries each): each call is one store
        transaction, and their commits dominate a decision-only job's logging time."""
        if not self.active:
            return
        import time

        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        items = [Metric(k, v, now, 0) for k, v in loggable_metrics(metrics).items()]
        for name, points in series.items():
            values = ((step, loggable(v)) for step, v in points)
            items += [Metric(name, v, now, step) for step, v in values if v is not None]
        for i in range(0, len(items), 1000):
            self.client.log_batch(self.run_id, metrics=items[i : i + 1000])

    def log_headline(
        self,
        metrics: Mapping[str, Any],
        groups: list[str],
        series: Mapping[str, list[tuple[int, float]]],
        figure: Path | None = None,
    ) -> None:
        """What MLflow shows of a job's ``metrics`` (:mod:`mcu_exp.tracking.headline`): the
        headline set and the sensitivity ``series`` (keyed by :func:`~headline.chart_key`) as
        metrics, the data's descriptors as ``result.*`` params, the verdict as ✓/✗ tags and the
        headline rounded as the tag ``mcu.headline`` (:func:`~headline.headline_tags`); with
        ``figure`` (a folder), also ``headline.png`` drawn there (F1 beside its baselines on one
        axis, :mod:`mcu_exp.tracking.headline_figure`) for the caller to log with its files."""
        if figure is not None:
            from mcu_exp.tracking import headline_figure

            headline_figure.draw(metrics, figure / headline_figure.FILE)
        charts = {headline.chart_key(k, self.scorer): v for k, v in series.items()}
        self.log_metrics_and_series(headline.headline(metrics, groups, series=len(charts)), charts)
        self.log_params(headline.descriptor_params(metrics))
        self.set_tags({**headline.verdict_tags(metrics), **headline.headline_tags(metrics)})

    def log_inputs(self, datasets: list[Any]) -> None:
        """MLflow dataset inputs (``DatasetInput``), shown in the run's Datasets panel. Their
        dataset rows are shared with the experiment's other runs (:mod:`mcu_exp.tracking.shared`)."""
        if self.active:
            assert self.run_id is not None
            shared.log_inputs(self.client, self.run_id, datasets)

    def set_tags(self, tags: Mapping[str, str]) -> None:
        if not self.active:
            return
        from mlflow.entities import RunTag

        self.client.log_batch(self.run_id, tags=[RunTag(k, str(v)) for k, v in tags.items()])

    def log_artifacts(self, folder: Path, artifact_path: str | None = None) -> None:
        if self.artifacts is not None:
            self.artifacts.put_folder(folder, artifact_path)

    def log_table(self, frame: Any, artifact_file: str) -> None:
        """A table the MLflow UI shows (see :meth:`RunArtifacts.put_table`)."""
        if self.artifacts is not None:
            self.artifacts.put_table(frame, artifact_file)

    def log_tables(self, tables: list[tuple[Any, str]]) -> None:
        """Several ``(frame, artifact_file)`` tables in one update of the run's table list (a
        tag, written with the others inside :meth:`batched`)."""
        if self.artifacts is not None:
            self.artifacts.put_tables(tables, set_tag=lambda key, value: self.set_tags({key: value}))


def open_experiment(tracking: Any, outputs: str, debug: bool = False) -> tuple[Any, str, str, str]:
    """A client on the store, and the store's URI, the id and the name of the run's
    experiment (:func:`experiment_name`), created on first use with the UI's headline view
    (:func:`mcu_exp.tracking.ui_view.set_headline_view`)."""
    from mlflow.tracking import MlflowClient

    uri = tracking_uri(tracking, outputs)
    name = experiment_name(tracking, debug=debug)
    with store_lock(uri):  # MlflowClient() itself creates the schema of a new SQLite store
        ensure_created(uri, lambda at: MlflowClient(tracking_uri=at))  # whole or not at all
        client = MlflowClient(tracking_uri=uri)
        exp_id = shared.create_experiment(client, name, artifact_location(name, uri))
        set_headline_view(client, exp_id)
    return client, uri, exp_id, name


@contextmanager
def mlflow_run(tracking: TrackingConfig, outputs: str, run_name: str, tags: Mapping[str, str]) -> Iterator[RunLogger]:
    """Open one MLflow run in :func:`experiment_name`'s experiment (the debug one when ``tags``
    hold ``mcu.debug=true``, as :func:`mcu_exp.tracking.run_tags` sets for a debug job); end
    it FINISHED, or FAILED (then re-raise) if the job fails. In a sweep the run is a child of
    the sweep's parent run (:mod:`mcu_exp.tracking.sweep`). The run is tagged with this host,
    process id and PID space (:func:`owner_tags`); runs of the experiment that a killed process
    left RUNNING are first marked KILLED (:func:`mark_stale_runs`). A name the experiment
    already holds gets a `` #k`` suffix (:func:`mcu_exp.tracking.naming.unique_name`)."""
    if not tracking.enabled:
        yield RunLogger(None, None, None)
        return
    client, uri, exp_id, name = open_experiment(tracking, outputs, debug=str(tags.get(TAG_DEBUG, "")).lower() == "true")
    try:
        mark_stale_runs(client, exp_id)
    except Exception as exc:  # noqa: BLE001 (never let the clean-up stop the job)
        log.warning("could not check for runs left RUNNING: %s", exc)
    owner = owner_tags()
    parent = job_parent()
    if parent and parent.get("uri") == uri and parent.get("experiment") == name:
        owner[PARENT_TAG] = str(parent["run_id"])
    room = Reserve(uri)  # the disk may fill during the job: keep room to record how it ended
    try:
        run = client.create_run(exp_id, run_name=unique_name(client, exp_id, run_name), tags={**tags, **owner})
    except BaseException:
        room.release()
        raise
    room.name(run.info.run_id)
    artifacts = RunArtifacts(client, run.info.run_id, run.info.artifact_uri)
    artifacts.tables_listed = json.loads(run.data.tags.get(LOGGED_ARTIFACTS, "[]"))  # this job writes the list
    logger = RunLogger(client, run.info.run_id, uri, artifacts, scorer=tags.get("mcu.scorer"))
    logger.experiment_id = str(exp_id)
    monitor = system_monitor(run.info.run_id, uri) if getattr(tracking, "system_metrics", False) else None
    try:
        yield logger
    except BaseException as exc:
        if monitor is not None:
            monitor.finish()
        room.release()
        _end_failed(client, run.info.run_id, exc)
        raise
    else:
        if monitor is not None:
            monitor.finish()
        room.release()
        client.set_terminated(run.info.run_id, status="FINISHED")


def _end_failed(client: Any, run_id: str, exc: BaseException) -> None:
    """End a failed job's run (KILLED when interrupted, else FAILED) with its error as a tag.
    The tag is best effort: when the store cannot take it (a full disk), the status still goes
    in; when neither can, the job's own error is what the user sees, and the next job on this
    host marks the run KILLED (:func:`mark_stale_runs`)."""
    try:
        client.set_tag(run_id, "mcu.error", redact_text(f"{type(exc).__name__}: {exc}")[:4000])
    except Exception as tag_error:  # noqa: BLE001 (MLflow raises several types)
        log.warning("could not tag MLflow run %s with its error: %s", run_id, str(tag_error).splitlines()[0])
    try:
        client.set_terminated(run_id, status="KILLED" if isinstance(exc, KeyboardInterrupt) else "FAILED")
    except Exception as end_error:  # noqa: BLE001
        log.warning("could not mark MLflow run %s as ended: %s", run_id, str(end_error).splitlines()[0])


def system_monitor(run_id: str, uri: str) -> Any:
    """MLflow's sampler of CPU, memory, disk and GPU use, started for run ``run_id``."""
    from mlflow.system_metrics.system_metrics_monitor import SystemMetricsMonitor

    monitor = SystemMetricsMonitor(run_id, tracking_uri=uri)  # type: ignore[no-untyped-call]
    monitor.start()  # type: ignore[no-untyped-call]
    return monitor
