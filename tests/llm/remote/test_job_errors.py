"""Whole jobs against the fake server that stop on a user error: one line, once, no traceback,
and no MLflow run for a configuration problem (it is found before the run starts)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from support.fake_api import PLANTED_KEY, Action, FakeServer, error_body
from support.mlflow_store import seed_store

pytestmark = pytest.mark.slow  # jobs in subprocesses

REPO = Path(__file__).resolve().parents[3]
# ROUGE-L scores the summaries: which scorer runs does not matter here, and it loads no encoder.
QUICK = [
    "debug=quick",
    "scorer=rougel",
    "dataset.limit=4",
    "proxy.k=4",
    "proxy.k_cal=2",
    "quiet=true",
    "evaluation.plots=false",
    "model.requests_per_minute=null",
    "model.tokens_per_minute=null",
    "model.backoff_initial_s=0.01",
    "model.backoff_max_s=0.02",
]


def job(server: FakeServer, outputs: Path, *overrides: str, key: bool = True) -> subprocess.CompletedProcess[str]:
    """``mcu-exp model=gpt-4o`` pointed at the fake server, with ``overrides`` last."""
    env = {**os.environ, "MCU_EXP_OUTPUTS": str(outputs)}
    env.pop("MLFLOW_TRACKING_URI", None)
    env.pop("OPENAI_API_KEY", None)
    if key:
        env["OPENAI_API_KEY"] = PLANTED_KEY
    args = ["model=gpt-4o", f"model.base_url={server.url}/v1", *QUICK, *overrides]
    return subprocess.run(
        [sys.executable, "-m", "mcu_exp", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=600
    )


def runs(outputs: Path) -> list[object]:
    """Every MLflow run under ``outputs`` (none when no store was created)."""
    db = outputs / "mlflow.db"
    if not db.exists():
        return []
    client = MlflowClient(tracking_uri=f"sqlite:///{db}")
    ids = [e.experiment_id for e in client.search_experiments()]
    return list(client.search_runs(ids)) if ids else []


def assert_one_line(res: subprocess.CompletedProcess[str], needle: str) -> None:
    """Exit 1; the error once, on one line that names the problem; no traceback anywhere."""
    both = res.stdout + res.stderr
    assert res.returncode == 1, both[-3000:]
    assert "Traceback" not in both, both[-3000:]
    errors = [line for line in both.splitlines() if "error" in line.lower() and needle in line]
    assert len(errors) == 1, both[-3000:]
    assert errors[0].startswith("mcu-exp: error: ") and errors[0] in res.stderr.splitlines()
    print(errors[0])  # shown by `pytest -rP`


@pytest.mark.parametrize(
    ("overrides", "key", "needle"),
    [
        ((), False, "set the environment variable OPENAI_API_KEY"),
        (("model.backend=nonsense",), True, "model.backend 'nonsense' is unknown"),
        (("model.base_url=htp:/127.0.0.1:port",), True, "is not a URL"),
        (("model.base_url=http://reader:pw-SECRET-2718@127.0.0.1:9/v1",), True, "carries a login (user:pass@)"),
    ],
    ids=["missing-key", "unknown-backend", "malformed-base-url", "login-beside-key"],
)
def test_config_problem_is_one_line_before_any_run(
    fake_server: FakeServer, tmp_path: Path, overrides: tuple[str, ...], key: bool, needle: str
) -> None:
    outputs = tmp_path / "outputs"
    res = job(fake_server, outputs, *overrides, key=key)
    assert_one_line(res, needle)
    assert "SECRET" not in res.stdout + res.stderr  # neither the URL's password nor the key
    assert runs(outputs) == []
    assert fake_server.log == []


@pytest.mark.parametrize(
    ("actions", "overrides", "needle"),
    [
        ([Action(401, error_body(401, "invalid key {KEY}"))] * 8, (), "OPENAI_API_KEY"),
        ([Action(503, error_body(503, "overloaded"))] * 40, ("model.max_retries=1",), "gave up after max_retries=1"),
        ([], ("model.max_requests=1",), "budget cap max_requests=1 reached"),
    ],
    ids=["rejected-key", "retries-exhausted", "budget"],
)
def test_remote_failure_is_one_line(
    fake_server: FakeServer, tmp_path: Path, actions: list[Action], overrides: tuple[str, ...], needle: str
) -> None:
    fake_server.push(*actions)
    outputs = seed_store(tmp_path / "outputs")
    res = job(fake_server, outputs, *overrides)
    assert_one_line(res, needle)
    assert PLANTED_KEY not in res.stdout + res.stderr
    (run,) = runs(outputs)
    assert run.info.status == "FAILED"  # type: ignore[attr-defined]
