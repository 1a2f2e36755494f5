"""A new SQLite MLflow store is created whole or not at all: a Ctrl-C during MLflow's schema
migrations leaves no half-built store that every later command would fail to open."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from mlflow.tracking import MlflowClient

from mcu_exp.tracking.sqlite_store import ensure_created

BUILD = """
import sys
import time

from sqlalchemy import event
from sqlalchemy.engine import Engine


@event.listens_for(Engine, "before_cursor_execute")
def slow(*args):  # each statement of MLflow's migrations waits: the test's Ctrl-C lands inside them, never after
    time.sleep(0.02)


from mlflow.tracking import MlflowClient
from mcu_exp.tracking.sqlite_store import ensure_created
ensure_created("sqlite:///" + sys.argv[1], lambda at: MlflowClient(tracking_uri=at))
"""


def schema(path: Path) -> tuple[list[str], str]:
    with sqlite3.connect(path) as db:
        tables = sorted(row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'"))
        (version,) = db.execute("SELECT version_num FROM alembic_version").fetchone()
    return tables, version


def test_the_store_has_the_schema_mlflow_itself_builds(tmp_path: Path) -> None:
    ours, theirs = tmp_path / "ours" / "mlflow.db", tmp_path / "theirs.db"
    ensure_created(f"sqlite:///{ours}", lambda at: MlflowClient(tracking_uri=at))
    MlflowClient(tracking_uri=f"sqlite:///{theirs}").search_experiments()
    assert schema(ours) == schema(theirs)
    assert [e.name for e in MlflowClient(tracking_uri=f"sqlite:///{ours}").search_experiments()] == ["Default"]
    assert sorted(p.name for p in ours.parent.iterdir()) == ["mlflow.db"]  # no temporary file left


def test_an_existing_store_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "mlflow.db"
    path.write_bytes(b"not touched")
    ensure_created(f"sqlite:///{path}", lambda at: MlflowClient(tracking_uri=at))
    assert path.read_bytes() == b"not touched"


def test_a_ctrl_c_during_the_migrations_leaves_no_store_and_the_next_open_builds_it(tmp_path: Path) -> None:
    path = tmp_path / "mlflow.db"
    building = subprocess.Popen(
        [sys.executable, "-c", BUILD, str(path)],
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # a pytest worker may ignore SIGINT
    )
    try:
        deadline = time.monotonic() + 60
        while not any(f.stat().st_size for f in tmp_path.glob("mlflow.db*")):  # SQLite wrote the first tables
            assert building.poll() is None and time.monotonic() < deadline, "the store was never being built"
            time.sleep(0.002)
        building.send_signal(signal.SIGINT)  # the migrations take a second or more from here
        _, err = building.communicate(timeout=60)
    finally:
        if building.poll() is None:
            building.kill()
    assert building.returncode != 0 and "KeyboardInterrupt" in err, err[-2000:]
    assert not path.exists()  # before: a half-migrated mlflow.db here
    ensure_created(f"sqlite:///{path}", lambda at: MlflowClient(tracking_uri=at))
    assert [e.name for e in MlflowClient(tracking_uri=f"sqlite:///{path}").search_experiments()] == ["Default"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mlflow.db"]
