"""Artifacts that travel with a local MLflow store.

A local store (SQLite under ``outputs/``) keeps its runs' files in ``mlartifacts/`` beside
the database. MLflow would record each run's artifact folder as an absolute ``file://``
path, so a copied or moved ``outputs/`` would point back at the old place. Experiments this
project creates in a local store record ``mlflow-artifacts:/<experiment>`` instead: MLflow's
own notation for "under the artifact root the server serves", which
``mlflow ui --artifacts-destination <store dir>/mlartifacts`` (:func:`ui_command`) resolves
wherever the folder now lives. This project's own processes (jobs, ``mcu-exp report``) have
no server in between and use the folder directly (:class:`RunArtifacts`).
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from mcu_exp import names

PROXIED = "mlflow-artifacts:"
ARTIFACTS_DIR = "mlartifacts"  # beside the SQLite store
LOGGED_ARTIFACTS = "mlflow.loggedArtifacts"  # the run tag listing its tables


def is_local_store(uri: str) -> bool:
    """Whether ``uri`` is a SQLite store (or a local folder), whose artifacts live beside it."""
    return uri.startswith("sqlite:") or uri.startswith("file:") or "://" not in uri


def store_folder(uri: str) -> Path:
    """The folder holding a local store: the SQLite file's folder, or the ``file:`` folder."""
    if uri.startswith("sqlite:///"):
        return Path(uri[len("sqlite:///") :]).resolve().parent
    if uri.startswith("file:"):
        return Path(urlparse(uri).path).resolve()
    return Path(uri).resolve()


def artifact_root(uri: str) -> Path:
    """Where a local store's artifacts live: ``<store folder>/mlartifacts``."""
    return store_folder(uri) / ARTIFACTS_DIR


def experiment_location(name: str) -> str:
    """The artifact location recorded for a new experiment in a local store: relative to the
    store's artifact root, named after the experiment (characters outside ``[A-Za-z0-9._-]``
    replaced)."""
    return f"{PROXIED}/{re.sub(r'[^A-Za-z0-9._-]', '_', name)}"


def local_path(uri: str, artifact_uri: str) -> Path | None:
    """The folder on disk of a run's artifacts recorded as ``mlflow-artifacts:/…`` in the
    local store ``uri`` (None for any other kind of location, which MLflow resolves itself)."""
    if not (is_local_store(uri) and artifact_uri.startswith(PROXIED)):
        return None
    relative = urlparse(artifact_uri).path.lstrip("/")
    return artifact_root(uri) / relative


def table_json(frame: Any) -> str:
    """The text of ``frame`` as an MLflow table: JSON, "split" orientation, no index."""
    return str(frame.to_json(None, orient="split", index=False, date_format="iso"))


class JsonTable:
    """A table with its MLflow JSON text already made (:func:`table_json`): a sweep's jobs log
    some of the same tables (the proxy's records), and :meth:`RunArtifacts.put_tables` writes
    the text as it is instead of converting the frame again."""

    def __init__(self, frame: Any, text: str | None = None) -> None:
        self.frame = frame
        self.text = table_json(frame) if text is None else text


class RunArtifacts:
    """Write and read one run's artifacts: straight into the local folder when the run's
    location is relative to a local store, through MLflow's client otherwise."""

    def __init__(self, client: Any, run_id: str, artifact_uri: str) -> None:
        self.client = client
        self.run_id = run_id
        self.local = local_path(str(client.tracking_uri), artifact_uri)
        # The run's table list (its LOGGED_ARTIFACTS tag) when this object is the run's only
        # writer of it (a run it saw created); None: read from the run before each update.
        self.tables_listed: list[dict[str, str]] | None = None

    def put_folder(self, folder: Path, artifact_path: str | None = None) -> None:
        """Every file under ``folder``, under ``artifact_path`` (the root when None)."""
        if self.local is None:
            self.client.log_artifacts(self.run_id, str(folder), artifact_path)
            return
        shutil.copytree(folder, self.local / (artifact_path or ""), dirs_exist_ok=True)

    def put_table(self, frame: Any, artifact_file: str) -> None:
        """``frame`` as an MLflow table (JSON, "split" orientation, listed in the run's
        ``mlflow.loggedArtifacts`` tag), which the UI's artifact and evaluation views show."""
        self.put_tables([(frame, artifact_file)])

    def put_tables(self, tables: list[tuple[Any, str]], set_tag: Callable[[str, str], None] | None = None) -> None:
        """Several ``(frame, artifact_file)`` tables as :meth:`put_table` writes each (a
        :class:`JsonTable` in place of a frame: its text as it is); in a local store with one
        read and one write of the run's tag for all of them, no read when
        :attr:`tables_listed` is known. ``set_tag(key, value)`` writes the tag (default: the
        client's ``set_tag``; a job passes its batched writer)."""
        if self.local is None:
            for item, artifact_file in tables:
                frame = item.frame if isinstance(item, JsonTable) else item
                self.client.log_table(self.run_id, data=frame, artifact_file=artifact_file)
            return
        for item, artifact_file in tables:
            target = self.local / artifact_file
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(item.text if isinstance(item, JsonTable) else table_json(item), encoding="utf-8")
        logged = self.tables_listed
        if logged is None:
            logged = json.loads(self.client.get_run(self.run_id).data.tags.get(LOGGED_ARTIFACTS, "[]"))
        added = [entry for _, path in tables if (entry := {"path": path, "type": "table"}) not in logged]
        added = [entry for i, entry in enumerate(added) if entry not in added[:i]]
        if added:
            text = json.dumps([*logged, *added])
            if set_tag is None:
                self.client.set_tag(self.run_id, LOGGED_ARTIFACTS, text)
            else:
                set_tag(LOGGED_ARTIFACTS, text)
            if self.tables_listed is not None:
                self.tables_listed = [*logged, *added]

    def list(self, artifact_path: str = "") -> set[str]:
        """The artifact paths directly under ``artifact_path`` (the root by default)."""
        if self.local is None:
            return {f.path for f in self.client.list_artifacts(self.run_id, artifact_path or None)}
        folder = self.local / artifact_path
        if not folder.is_dir():
            return set()
        return {str(p.relative_to(self.local)) for p in folder.iterdir()}

    def get(self, artifact_file: str, dst: Path) -> Path | None:
        """The local path of one artifact file (downloaded into ``dst`` from a remote store);
        None when the run has no such file."""
        if self.local is not None:
            path = self.local / artifact_file
            return path if path.is_file() else None
        try:
            return Path(self.client.download_artifacts(self.run_id, artifact_file, str(dst)))
        except Exception:  # noqa: BLE001 (MLflow raises several types for a missing file)
            return None


class RunLookupError(LookupError):
    """A run that cannot be fetched: ``missing_store`` when the local SQLite store file does not
    exist, else the store's own one-line reason (unknown run id, unreachable server)."""

    def __init__(self, reason: str, missing_store: bool) -> None:
        super().__init__(reason)
        self.missing_store = missing_store


def fetch_run(uri: str, run_id: str) -> tuple[Any, Any]:
    """``(MlflowClient, Run)`` of ``run_id`` in the store at ``uri``; :class:`RunLookupError`
    otherwise (without creating an empty SQLite store where none is)."""
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    if uri.startswith("sqlite:///") and not Path(uri[len("sqlite:///") :]).is_file():
        raise RunLookupError(f"no MLflow store at {uri[len('sqlite:///') :]}", missing_store=True)
    client = MlflowClient(tracking_uri=uri)
    try:
        return client, client.get_run(run_id)
    except MlflowException as exc:
        raise RunLookupError(exc.message.splitlines()[0], missing_store=False) from None


RUN_ID_LENGTH = 32  # hex characters of an MLflow run id
MIN_PREFIX = 6  # the shortest run id prefix looked up (a sweep summary prints 8)


def resolve_run_id(uri: str, ref: str, sweep: str | None = None) -> str:
    """The full run id ``ref`` names in the store at ``uri``: a full id as is; a prefix of at
    least :data:`MIN_PREFIX` hex characters, the one run whose id starts with it; with ``sweep``
    (a sweep's name, its tag ``mcu.sweep``), ``ref`` is a job number of that sweep.
    :class:`RunLookupError` naming what was not found, or the candidates when several match."""
    from mlflow.tracking import MlflowClient

    if sweep is None and len(ref) == RUN_ID_LENGTH:
        return ref
    is_prefix = MIN_PREFIX <= len(ref) < RUN_ID_LENGTH and all(c in "0123456789abcdef" for c in ref)
    if sweep is None and not is_prefix:
        return ref  # let the lookup say what it is not
    if uri.startswith("sqlite:///") and not Path(uri[len("sqlite:///") :]).is_file():
        raise RunLookupError(f"no MLflow store at {uri[len('sqlite:///') :]}", missing_store=True)
    client = MlflowClient(tracking_uri=uri)
    experiments = [e.experiment_id for e in client.search_experiments()]
    if sweep is not None:
        found = client.search_runs(
            experiments, filter_string=f"tags.`mcu.sweep` = '{sweep}' and tags.`mcu.job_num` = '{ref}'"
        )
        runs = [r for r in found if r.data.tags.get(names.TAG_KIND, names.KIND_JOB) == names.KIND_JOB]
        what = f"job {ref} in sweep {sweep!r}"
    else:
        runs = [r for r in client.search_runs(experiments, max_results=50_000) if r.info.run_id.startswith(ref)]
        what = f"run id starting with {ref!r}"
    if not runs:
        raise RunLookupError(f"no {what} in {uri}", missing_store=False)
    if len(runs) > 1:
        listed = ", ".join(f"{r.info.run_id[:12]}… ({r.info.run_name})" for r in runs[:5])
        raise RunLookupError(f"{len(runs)} runs match {what}: {listed}; give more of the id", missing_store=False)
    return str(runs[0].info.run_id)


def mlflow_executable() -> str:
    """The ``mlflow`` command of this environment: the one beside this Python when it is
    there (a virtual environment that is not activated), else ``mlflow`` on the PATH."""
    beside = Path(sys.executable).parent / "mlflow"
    if beside.is_file():
        here = Path.cwd()
        try:
            return str(beside.relative_to(here))
        except ValueError:
            return str(beside)
    return shutil.which("mlflow") or "mlflow"


UI_ADDRESS = "http://127.0.0.1:5000"  # where `mlflow ui` serves by default


def ui_address(uri: str) -> str:
    """Where the MLflow UI of the store ``uri`` is: the tracking server for an HTTP store, else
    where ``mlflow ui`` serves by default."""
    return uri.rstrip("/") if uri.startswith(("http://", "https://")) else UI_ADDRESS


def run_address(uri: str, experiment_id: str, run_id: str) -> str:
    """The run's page in the MLflow UI (:func:`ui_address`)."""
    return f"{ui_address(uri)}/#/experiments/{experiment_id}/runs/{run_id}"


def ui_command(uri: str) -> str:
    """The shell command that opens the MLflow UI on this store (with its artifacts)."""
    if uri.startswith("http://") or uri.startswith("https://"):
        return f"open {uri}"
    if is_local_store(uri):
        return f"{mlflow_executable()} ui --backend-store-uri {uri} --artifacts-destination {artifact_root(uri)}"
    return f"{mlflow_executable()} ui --backend-store-uri {uri}"
