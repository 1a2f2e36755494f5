"""Whole jobs against the fake server that stop on a user error: one line, once, no traceback,
and no MLflow run for a configuration problem (it is found before the run starts).

One case of each kind runs ``mcu-exp`` in a subprocess (its exit status, its one stderr line,
no secret on its console); the others run the same job in this process (:func:`job_in_process`)
and assert the exception the app would turn into that line (:func:`assert_one_line_raised`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from mcu_exp.app import USER_ERRORS, one_line
from mcu_exp.pipeline import run_job
from support.compose import compose
from support.fake_api import PLANTED_KEY, Action, FakeServer, error_body
from support.mlflow_store import seed_store

pytestmark = pytest.mark.slow  # whole jobs, some in subprocesses

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


def job_in_process(
    server: FakeServer, outputs: Path, monkeypatch: pytest.MonkeyPatch, *overrides: str, key: bool = True
) -> float:
    """:func:`job` in this process: the config the app composes from the same command line, run
    by :func:`~mcu_exp.pipeline.run_job` (a user error arrives as the exception the app reports)."""
    monkeypatch.setenv("MCU_EXP_OUTPUTS", str(outputs))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    if key:
        monkeypatch.setenv("OPENAI_API_KEY", PLANTED_KEY)
    else:
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    cfg = compose("model=gpt-4o", f"model.base_url={server.url}/v1", *QUICK, *overrides)
    return run_job(cfg)


def assert_one_line_raised(exc: BaseException, printed: str, needle: str) -> str:
    """What :func:`assert_one_line` checks of the app, for an in-process job: the error is one
    the app reports in one line without a traceback (a user error), that line names the problem,
    and the job itself printed or logged neither it nor a traceback (``printed``: its stdout,
    stderr and log records). Returns the line the app would print after ``mcu-exp: error: ``."""
    assert isinstance(exc, USER_ERRORS), repr(exc)
    line = one_line(exc)
    assert needle in line, line
    assert "Traceback" not in printed, printed[-3000:]
    assert needle not in printed, printed[-3000:]
    print(line)  # shown by `pytest -rP`
    return line


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


# The process boundary: exit 1, one stderr line, the URL's password not on the console.
def test_config_problem_is_one_line_before_any_run(fake_server: FakeServer, tmp_path: Path) -> None:
    outputs = tmp_path / "outputs"
    res = job(fake_server, outputs, "model.base_url=http://reader:pw-SECRET-2718@127.0.0.1:9/v1")
    assert_one_line(res, "carries a login (user:pass@)")
    assert "SECRET" not in res.stdout + res.stderr  # neither the URL's password nor the key
    assert runs(outputs) == []
    assert fake_server.log == []


@pytest.mark.parametrize(
    ("overrides", "key", "needle"),
    [
        ((), False, "set the environment variable OPENAI_API_KEY"),
        (("model.backend=nonsense",), True, "model.backend 'nonsense' is unknown"),
        (("model.base_url=htp:/127.0.0.1:port",), True, "is not a URL"),
    ],
    ids=["missing-key", "unknown-backend", "malformed-base-url"],
)
def test_config_problem_is_one_line_before_any_run_in_process(
    fake_server: FakeServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    overrides: tuple[str, ...],
    key: bool,
    needle: str,
) -> None:
    outputs = tmp_path / "outputs"
    with pytest.raises(USER_ERRORS) as info:  # an error the app reports in one line
        job_in_process(fake_server, outputs, monkeypatch, *overrides, key=key)
    captured = capsys.readouterr()
    printed = captured.out + captured.err + caplog.text
    line = assert_one_line_raised(info.value, printed, needle)
    assert "SECRET" not in line + printed  # neither the URL's password nor the key
    assert runs(outputs) == []
    assert fake_server.log == []


# The process boundary: exit 1, one stderr line, the key the server echoed not on the console.
def test_remote_failure_is_one_line(fake_server: FakeServer, tmp_path: Path) -> None:
    fake_server.push(*[Action(401, error_body(401, "invalid key {KEY}"))] * 8)
    outputs = seed_store(tmp_path / "outputs")
    res = job(fake_server, outputs)
    assert_one_line(res, "OPENAI_API_KEY")
    assert PLANTED_KEY not in res.stdout + res.stderr
    (run,) = runs(outputs)
    assert run.info.status == "FAILED"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("actions", "overrides", "needle"),
    [
        ([Action(503, error_body(503, "overloaded"))] * 40, ("model.max_retries=1",), "gave up after max_retries=1"),
        ([], ("model.max_requests=1",), "budget cap max_requests=1 reached"),
    ],
    ids=["retries-exhausted", "budget"],
)
def test_remote_failure_is_one_line_in_process(
    fake_server: FakeServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    actions: list[Action],
    overrides: tuple[str, ...],
    needle: str,
) -> None:
    fake_server.push(*actions)
    outputs = seed_store(tmp_path / "outputs")
    with pytest.raises(USER_ERRORS) as info:  # an error the app reports in one line
        job_in_process(fake_server, outputs, monkeypatch, *overrides)
    captured = capsys.readouterr()
    printed = captured.out + captured.err + caplog.text
    line = assert_one_line_raised(info.value, printed, needle)
    assert PLANTED_KEY not in line + printed
    (run,) = runs(outputs)
    assert run.info.status == "FAILED"  # type: ignore[attr-defined]
