"""A job's MLflow tables are written together: every file, each listed once in the run's
``mlflow.loggedArtifacts`` tag, with one read and one write of that tag."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from mcu_exp.tracking.artifacts import LOGGED_ARTIFACTS
from support.mlflow_store import table_run


def test_tables_written_at_once_are_listed_in_order_and_once(tmp_path: Path) -> None:
    client, run_id, art = table_run(tmp_path)
    art.put_table(pd.DataFrame({"a": [1]}), "tables/first.json")
    frames = [(pd.DataFrame({"x": [i, i + 1], "t": ["u", "v"]}), f"tables/t{i}.json") for i in range(3)]
    art.put_tables([*frames, (frames[0][0], "tables/first.json"), frames[1]])
    listed = json.loads(client.get_run(run_id).data.tags[LOGGED_ARTIFACTS])
    assert [e["path"] for e in listed] == ["tables/first.json", "tables/t0.json", "tables/t1.json", "tables/t2.json"]
    assert {e["type"] for e in listed} == {"table"}
    stored = json.loads(art.get("tables/t2.json", tmp_path).read_text())
    assert stored == {"columns": ["x", "t"], "data": [[2, "u"], [3, "v"]]}
    assert json.loads(art.get("tables/first.json", tmp_path).read_text())["columns"] == ["x", "t"]  # rewritten
