"""Jobs of one sweep that open their runs at the same instant on one SQLite store all finish.

Every job logs the same dataset input, and MLflow's store inserts the shared dataset row
after looking for it: jobs that start together all found it missing, one inserted it and the
others failed on the table's unique key (``UNIQUE constraint failed: datasets…``), their runs
FAILED. The same jobs on ``mlflow server`` with PostgreSQL: ``tests/services/test_concurrent_tracking.py``.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from support.concurrent_jobs import expected_input, start_together

JOBS, ROUNDS = 4, 3  # without the fix 8 rounds in 10 failed (4 jobs, load 5 on 2 cores)


def test_jobs_started_together_all_finish_with_one_dataset_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    db = tmp_path / "mlflow.db"

    def dataset_rows(experiment_id: str) -> int:
        with sqlite3.connect(db) as conn:
            return int(
                conn.execute("SELECT COUNT(*) FROM datasets WHERE experiment_id = ?", (int(experiment_id),)).fetchone()[
                    0
                ]
            )

    for number in range(ROUNDS):  # a new experiment each round: its creation races as well
        result = start_together(f"sqlite:///{db}", tmp_path, f"together-{number}", JOBS, dataset_rows)
        assert result.errors == [], f"round {number}: " + "\n".join(result.errors)
        assert result.statuses == ["FINISHED"] * JOBS, f"round {number}"
        assert result.inputs == [expected_input()] * JOBS, f"round {number}"
        assert result.dataset_rows == 1, f"round {number}"
