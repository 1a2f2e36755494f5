"""Two PID namespaces on one host name (containers started with ``--network host``): a peer's
pid is absent there, so it must never be read as "that process died".

The peer runs in ``unshare --pid --fork`` (root only) with its pid set far above any pid of this
namespace (``ns_last_pid``), so that before PID spaces were recorded the test process took it for
dead: it took over the peer's leases (paying for every sample twice) and marked its live MLflow
run KILLED.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from mcu_exp.pid_space import pid_alive, pid_space
from support.fake_api import FAST, PLANTED_KEY, Action, FakeServer

pytestmark = [
    pytest.mark.slow,  # a peer process in its own PID namespace
    pytest.mark.skipif(
        os.geteuid() != 0 or shutil.which("unshare") is None,
        reason="needs root and unshare(1) for a second PID namespace",
    ),
]

WORKER = Path(__file__).with_name("pid_space_worker.py")


def peer_pid() -> int:
    """A pid the peer gets in its namespace and that no process of this one has."""
    pid = int(Path("/proc/sys/kernel/pid_max").read_text()) - 1000
    while pid_alive(pid):
        pid -= 1
    return pid


def start_peer(*args: str, env: dict[str, str] | None = None) -> tuple[subprocess.Popen[str], int]:
    """The worker with ``args`` in a new PID namespace, as process ``pid`` there; (process, pid)."""
    pid = peer_pid()
    script = f'echo {pid - 1} > /proc/sys/kernel/ns_last_pid && "$@"; exit $?'
    proc = subprocess.Popen(
        ["unshare", "--pid", "--fork", "sh", "-c", script, "sh", sys.executable, str(WORKER), *args],
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return proc, pid


def wait_for(check: Any, proc: subprocess.Popen[str], what: str) -> Any:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"the peer ended before {what}: {proc.communicate()[1][-3000:]}"
        if found := check():
            return found
        time.sleep(0.05)
    raise AssertionError(f"the peer never {what}")


def test_the_pid_space_names_the_namespace() -> None:
    out = subprocess.run(
        [
            "unshare",
            "--pid",
            "--fork",
            sys.executable,
            "-c",
            "from mcu_exp.pid_space import pid_space; print(pid_space())",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    host, boot, namespace = out.split("/")
    assert pid_space().split("/")[:2] == [host, boot]
    assert namespace != pid_space().split("/")[2]


def test_a_live_peer_in_another_namespace_keeps_its_leases(
    fake_server: FakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcu_exp.config import ModelConfig
    from mcu_exp.llm import CachedGenerator, GenerationRequest, Message

    monkeypatch.setenv("OPENAI_API_KEY", PLANTED_KEY)
    fields = {
        "name": "fake-openai",
        "backend": "openai",
        "model_id": "fake-model",
        "base_url": fake_server.url + "/v1",
        "timeout_s": 30.0,
        "max_concurrency": 2,
        "n_per_request": 1,
        "max_new_tokens": 16,
        **FAST,
    }
    fake_server.push(*[Action(delay_s=0.4)] * 32)  # the peer's 16 samples take ~3 s
    cache = tmp_path / "cache"
    peer, pid = start_peer("generate", json.dumps(fields), str(cache), "P", "16")

    def peer_claimed() -> bool:
        try:
            with sqlite3.connect(f"file:{cache / 'generations.sqlite'}?mode=ro", uri=True) as conn:
                return bool(conn.execute("SELECT COUNT(*) FROM claims WHERE pid = ?", (pid,)).fetchone()[0])
        except sqlite3.Error:  # no file or no tables yet
            return False

    wait_for(peer_claimed, peer, "leased its samples")
    request = GenerationRequest(messages=(Message("user", "P"),), n=16, max_new_tokens=16)
    mine = CachedGenerator(ModelConfig(**fields), cache, progress=False, poll_s=0.05).generate([request])
    out, err = peer.communicate(timeout=120)
    assert peer.returncode == 0, err[-3000:]
    assert len(fake_server.log) == 16  # the samples were paid for once, by the peer
    assert mine[0].texts == json.loads(out)


def test_a_live_run_in_another_namespace_is_not_marked_killed(tmp_path: Path) -> None:
    from mlflow.tracking import MlflowClient

    from mcu_exp.tracking.mlflow_run import TAG_PID, mark_stale_runs, owner_tags
    from support.mlflow_store import seed_store

    outputs = seed_store(tmp_path / "outputs")
    go = tmp_path / "go"
    peer, pid = start_peer("owner", str(go))
    line = peer.stdout.readline() if peer.stdout else ""
    assert line, peer.communicate()[1][-3000:]
    tags = json.loads(line)  # what a job in the peer's namespace tags its run with
    assert tags[TAG_PID] == str(pid) and not pid_alive(pid)
    client = MlflowClient(tracking_uri=f"sqlite:///{outputs / 'mlflow.db'}")
    experiment = client.create_experiment("pid-spaces")
    theirs = client.create_run(experiment, tags=tags).info.run_id
    try:
        assert mark_stale_runs(client, experiment) == []
        assert client.get_run(theirs).info.status == "RUNNING"
    finally:
        go.touch()
        peer.communicate(timeout=120)
    dead = client.create_run(experiment, tags={**owner_tags(), TAG_PID: str(pid)}).info.run_id
    assert mark_stale_runs(client, experiment) == [dead]  # a dead pid of this namespace: KILLED
    assert client.get_run(theirs).info.status == "RUNNING"
