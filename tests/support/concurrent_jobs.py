"""Jobs that open their MLflow runs at the same instant on one store, as a sweep's jobs do.

Each job is a thread running the project's own tracking path (:func:`mcu_exp.tracking.mlflow_run`,
then :meth:`RunLogger.log_inputs` with :func:`mcu_exp.tracking.conventions.dataset_input`), held
at two barriers: before it opens the experiment and before it logs the dataset, so all of them
find the experiment and the dataset row missing at once and all try to write them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from mlflow.tracking import MlflowClient

from mcu_exp.config import TrackingConfig
from mcu_exp.data.types import Dataset, Program
from mcu_exp.tracking import mlflow_run
from mcu_exp.tracking.conventions import dataset_digest, dataset_input

BARRIER_TIMEOUT_S = 120.0  # a job that failed before a barrier breaks it for the others


def tiny_dataset() -> Dataset:
    """Two programs, four evaluations: enough for a dataset input with a digest."""
    evaluations = pd.DataFrame(
        {
            "program_id": ["p1", "p1", "p2", "p2"],
            "participant_id": ["a", "b", "a", "b"],
            "correct": [1, 2, 0, 2],
            "total": [2, 2, 2, 2],
            "perceived": [True, True, False, True],
            "group": ["master"] * 4,
        }
    )
    programs = [Program("p1", "java", "int one() { return 1; }"), Program("p2", "java", "int two() { return 2; }")]
    return Dataset(
        name="concurrent",
        programs=programs,
        evaluations=evaluations,
        questions=[],
        source="tests/support/concurrent_jobs.py",
    )


@dataclass(frozen=True)
class Round:
    """What one round of jobs left: their errors, the experiment's runs and its dataset rows."""

    errors: list[str]
    statuses: list[str]
    inputs: list[set[tuple[str, str]]]
    dataset_rows: int


def start_together(uri: str, outputs: Path, experiment: str, jobs: int, dataset_rows: Callable[[str], int]) -> Round:
    """Run ``jobs`` jobs at once in the new ``experiment`` of the store ``uri``;
    ``dataset_rows(experiment_id)`` counts the dataset rows the store holds for it."""
    dataset = tiny_dataset()
    tracking = TrackingConfig(uri=uri, experiment=experiment)
    barrier = threading.Barrier(jobs, timeout=BARRIER_TIMEOUT_S)
    errors: list[str] = []

    def job(number: int) -> None:
        try:
            barrier.wait()
            with mlflow_run(tracking, str(outputs), f"job {number}", {"mcu.job_num": str(number)}) as run:
                barrier.wait()
                run.log_inputs([dataset_input(dataset)])
        except Exception as exc:  # noqa: BLE001 (the test reports every job's error)
            errors.append(f"job {number}: {type(exc).__name__}: {str(exc)[:300]}")
            barrier.abort()

    threads = [threading.Thread(target=job, args=(n,)) for n in range(jobs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=BARRIER_TIMEOUT_S * 3)
    client = MlflowClient(tracking_uri=uri)
    found = client.get_experiment_by_name(experiment)
    if found is None:
        return Round(errors, [], [], 0)
    runs = client.search_runs([found.experiment_id])
    inputs = [{(d.dataset.name, d.dataset.digest) for d in r.inputs.dataset_inputs} for r in runs]
    return Round(errors, [r.info.status for r in runs], inputs, dataset_rows(found.experiment_id))


def expected_input() -> set[tuple[str, str]]:
    """The (name, digest) every job's run should have as its one input."""
    dataset = tiny_dataset()
    return {(dataset.name, dataset_digest(dataset))}
