"""Writes to tracking state that several jobs share, made safe when jobs start together.

Some of what a job writes to the tracking store is not its own: the experiment, and the
dataset row its run's input points at (one per experiment, name and digest). Every job of a
sweep writes the same value, so whoever writes first is right, and a job that finds it written
has nothing left to do. MLflow's stores check, then insert: jobs that start at the same
instant all find nothing, all insert, and all but one fail on the table's unique key
(``UniqueViolation … "dataset_pk"`` on PostgreSQL behind ``mlflow server``, ``UNIQUE
constraint failed: datasets…`` on SQLite; a locked SQLite file says "database is locked").
:func:`write_shared` runs such a write, and when it fails first asks the store whether the
state is now there (a peer wrote it) before it writes again.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")

ATTEMPTS = 5
PAUSE_S = 0.1  # the first retry waits up to this long; each later one twice as long (with jitter)
# MLflow error codes that no retry can change: the write itself is wrong, or not allowed.
PERMANENT = frozenset(
    {
        "INVALID_PARAMETER_VALUE",
        "RESOURCE_DOES_NOT_EXIST",
        "PERMISSION_DENIED",
        "UNAUTHENTICATED",
        "INVALID_STATE",
        "ENDPOINT_NOT_FOUND",
    }
)


def _permanent(exc: Exception) -> bool:
    return str(getattr(exc, "error_code", "")) in PERMANENT


def write_shared(write: Callable[[], T], written: Callable[[], T | None], what: str, attempts: int = ATTEMPTS) -> T:
    """``write()``'s result; when it fails with an MLflow error, ``written()``'s result if that
    finds the state stored (a peer's write won), else ``write()`` again after a short random
    pause, at most ``attempts`` times in all; the last error is raised. ``what`` names the
    state in the log."""
    from mlflow.exceptions import MlflowException

    for attempt in range(1, attempts + 1):
        try:
            return write()
        except MlflowException as exc:
            try:
                found = written()
            except MlflowException:
                found = None
            if found is not None:
                log.debug("%s: written by another job at the same time (%s)", what, exc.error_code)
                return found
            if attempt == attempts or _permanent(exc):
                raise
            log.info(
                "%s: the store refused the write (%s), retrying (%d of %d)",
                what,
                str(exc).splitlines()[0][:200],
                attempt,
                attempts - 1,
            )
            time.sleep(random.uniform(0.5, 1.0) * PAUSE_S * 2 ** (attempt - 1))
    raise AssertionError("unreachable")  # the loop returns or raises


def create_experiment(client: Any, name: str, artifact_location: str | None) -> str:
    """The id of experiment ``name``, created when missing (a peer may create it at once)."""

    def found() -> str | None:
        experiment = client.get_experiment_by_name(name)
        return None if experiment is None else str(experiment.experiment_id)

    existing = found()
    if existing is not None:
        return existing
    return write_shared(
        lambda: str(client.create_experiment(name, artifact_location=artifact_location)), found, f"experiment {name!r}"
    )


def log_inputs(client: Any, run_id: str, datasets: Sequence[Any]) -> None:
    """Log ``datasets`` (``DatasetInput``) as run ``run_id``'s inputs. The dataset rows are
    shared by every run of the experiment that read the same data, and peers insert them too."""
    wanted = {(d.dataset.name, d.dataset.digest) for d in datasets}

    def logged() -> bool | None:
        inputs = client.get_run(run_id).inputs.dataset_inputs
        return True if wanted <= {(d.dataset.name, d.dataset.digest) for d in inputs} else None

    def write() -> bool:
        client.log_inputs(run_id, datasets=list(datasets))
        return True

    write_shared(write, logged, f"dataset input of run {run_id}")
