"""A result CSV is logged as an MLflow table from its text once per content: the jobs of a
sweep that write the same proxy records reuse the table and its JSON; a changed file is read
again; the JSON written is the one pandas writes for the table. A job's run lists its tables
without reading the run back, in the same store write as its other tags."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from mcu_exp.config import TrackingConfig
from mcu_exp.job.record import MAX_TABLES, csv_table
from mcu_exp.tracking.artifacts import LOGGED_ARTIFACTS
from mcu_exp.tracking.mlflow_run import mlflow_run
from support.mlflow_store import seed_store, table_run

RECORDS = 'program_id,summary,note\np1,adds two numbers,NA\np2,"sorts, then prints",\np3,None,ok\n'


def test_the_same_csv_content_is_read_and_converted_once(tmp_path: Path) -> None:
    first, second = tmp_path / "job0" / "summaries.csv", tmp_path / "job1" / "summaries.csv"
    for path in (first, second):
        path.parent.mkdir()
        path.write_text(RECORDS)
    table = csv_table(first)
    assert csv_table(second) is table  # another job's file, the same bytes: not parsed again
    assert table.frame["note"].tolist()[0] == "NA" and pd.isna(table.frame["note"].iloc[1])
    second.write_text(RECORDS.replace("adds two numbers", "adds three numbers"))
    changed = csv_table(second)
    assert changed is not table and changed.frame.at[0, "summary"] == "adds three numbers"
    assert '"adds three numbers"' in changed.text and '"adds two numbers"' in table.text


def test_a_reused_table_is_stored_as_pandas_writes_it(tmp_path: Path) -> None:
    client, run_id, art = table_run(tmp_path)
    path = tmp_path / "summaries.csv"
    path.write_text(RECORDS)
    art.put_tables([(csv_table(path), "tables/summaries.json"), (csv_table(path), "tables/again.json")])
    expected = tmp_path / "expected.json"
    pd.read_csv(path, keep_default_na=False, na_values=[""]).to_json(
        expected, orient="split", index=False, date_format="iso"
    )
    for name in ("summaries", "again"):
        stored = art.get(f"tables/{name}.json", tmp_path)
        assert stored is not None and stored.read_bytes() == expected.read_bytes()
    assert json.loads(expected.read_text())["columns"] == ["program_id", "summary", "note"]


def test_a_jobs_table_list_is_written_with_its_other_tags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    outputs = seed_store(tmp_path / "outputs")
    reader = MlflowClient(tracking_uri=f"sqlite:///{outputs / 'mlflow.db'}")
    frame = pd.DataFrame({"x": [1, 2]})
    with mlflow_run(TrackingConfig(), str(outputs), "job", {}) as tracker:
        assert tracker.artifacts is not None and tracker.artifacts.tables_listed == []  # a new run: no read needed
        run_id = str(tracker.run_id)
        with tracker.batched():
            tracker.set_tags({"verdict": "x"})
            tracker.log_tables([(frame, "tables/a.json"), (frame, "tables/b.json")])
            assert LOGGED_ARTIFACTS not in reader.get_run(run_id).data.tags  # waits for the batch
        tags = reader.get_run(run_id).data.tags
        assert tags["verdict"] == "x"
        assert [e["path"] for e in json.loads(tags[LOGGED_ARTIFACTS])] == ["tables/a.json", "tables/b.json"]
        tracker.log_tables([(frame, "tables/c.json"), (frame, "tables/a.json")])
    listed = json.loads(reader.get_run(run_id).data.tags[LOGGED_ARTIFACTS])
    assert [e["path"] for e in listed] == ["tables/a.json", "tables/b.json", "tables/c.json"]


def test_tables_shared_by_every_job_stay_while_each_jobs_own_ones_come_and_go(tmp_path: Path) -> None:
    shared = tmp_path / "summaries.csv"
    shared.write_text(RECORDS)
    kept = csv_table(shared)
    for job in range(3 * MAX_TABLES):  # each job: the shared records and a table of its own
        assert csv_table(shared) is kept
        own = tmp_path / f"per_program_{job}.csv"
        own.write_text(f"program_id,label\np1,{job}\n")
        assert csv_table(own).frame.at[0, "label"] == job
    assert csv_table(shared) is kept
