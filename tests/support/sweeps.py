"""Helpers of the report and launcher tests: run ``mcu-exp`` and stand-in sweeps in a
subprocess with their own outputs folder."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
STANDIN = "proxy._target_=support.standin_proxy.StandInProxy"


def app_env(outputs: Path, **extra: str) -> dict[str, str]:
    """The environment of an ``mcu-exp`` subprocess writing under ``outputs``."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "tests"), "MCU_EXP_OUTPUTS": str(outputs), **extra}
    if "MLFLOW_TRACKING_URI" not in extra:
        env.pop("MLFLOW_TRACKING_URI", None)
    return env


def mcu_exp(*args: str, outputs: Path, timeout: int = 600, **env: str) -> subprocess.CompletedProcess[str]:
    """``python -m mcu_exp ARGS`` in the repository with outputs under ``outputs``."""
    return subprocess.run(
        [sys.executable, "-m", "mcu_exp", *args],
        cwd=REPO,
        env=app_env(outputs, **env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def standin_sweep(outputs: Path, *overrides: str, **env: str) -> subprocess.CompletedProcess[str]:
    """A multirun of the stand-in proxy (decision-only jobs, no model)."""
    return mcu_exp(
        "-m",
        STANDIN,
        "quiet=true",
        "evaluation.bootstrap_resamples=1000",
        "tracking.sweep_report=false",
        *overrides,
        outputs=outputs,
        **env,
    )


@dataclass(frozen=True)
class Sweep:
    """Where a finished stand-in sweep lives."""

    outputs: Path
    uri: str
    tag: str


def sweep_in_process(outputs: Path, *overrides: str, **env: str) -> subprocess.CompletedProcess[str]:
    """:func:`standin_sweep` in this process (:func:`multirun_in_process`)."""
    return multirun_in_process(
        outputs,
        STANDIN,
        "quiet=true",
        "evaluation.bootstrap_resamples=1000",
        "tracking.sweep_report=false",
        *overrides,
        **env,
    )


def multirun_in_process(outputs: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``mcu-exp -m ARGS`` in this process: Hydra's own multirun (its config, the project's
    sweeper, the basic launcher, the sweep callbacks with their MLflow parent run and summary)
    calling :func:`~mcu_exp.pipeline.run_job` for each job, as the app's job function does, for
    tests that read a sweep's runs and not the app's process (its exit status, plugins, signals:
    tests of those run the command). ``outputs`` is ``$MCU_EXP_OUTPUTS`` and ``env`` set
    meanwhile, ``MLFLOW_TRACKING_URI`` unset unless given. Returns what the sweep printed as a
    finished command's result (exit status 0); a job's exception is raised. Hydra sets up no logging (the jobs write no log files: tests
    of those run the command); the loggers' settings the jobs' console changes, Hydra's global
    state, the environment and the working directory are put back after."""
    from contextlib import redirect_stderr, redirect_stdout
    from io import StringIO

    import pytest
    from hydra._internal.hydra import Hydra
    from hydra._internal.utils import create_config_search_path
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.hydra_config import HydraConfig

    from mcu_exp import console
    from mcu_exp.app import _hydra_verbose, _quiet_job, config_dir
    from mcu_exp.pipeline import run_job
    from support.compose import shared_loader

    def job(cfg: Any) -> float:
        """The app's job function (``mcu_exp.app._job``) without what belongs to its process:
        plugins, signal handlers and the Ctrl-C count, the exit status of a failed job."""
        with console.job_console(
            progress=not bool(cfg.get("quiet", False)), verbose=_hydra_verbose(), quiet_job=_quiet_job(cfg)
        ):
            return run_job(cfg)

    # What Hydra's command line adds for -m; no logging set-up: Hydra's (logging.config.dictConfig)
    # would close every handler of this process, pytest's capture among them.
    overrides = [*args, "hydra.mode=MULTIRUN", "hydra/job_logging=none", "hydra/hydra_logging=none"]
    printed, errors = StringIO(), StringIO()
    logging_state = _logging_state()
    before, cwd, environ = HydraConfig.instance().cfg, Path.cwd(), dict(os.environ)
    with pytest.MonkeyPatch.context() as patch, redirect_stdout(printed), redirect_stderr(errors):
        patch.setenv("MCU_EXP_OUTPUTS", str(outputs))
        if "MLFLOW_TRACKING_URI" not in env:
            patch.delenv("MLFLOW_TRACKING_URI", raising=False)
        for name, value in env.items():
            patch.setenv(name, value)
        GlobalHydra.instance().clear()
        try:
            hydra = Hydra.create_main_hydra2(
                task_name="app", config_search_path=create_config_search_path(config_dir())
            )
            hydra.config_loader = shared_loader(config_dir(), hydra.config_loader)  # files read once a process
            returns = hydra.multirun(config_name="config", task_function=job, overrides=overrides)
        finally:
            GlobalHydra.instance().clear()
            HydraConfig.instance().cfg = before
            os.chdir(cwd)
            _restore_logging(logging_state)
            os.environ.clear()  # what the jobs' console set (MLFLOW_LOGGING_LEVEL) too
            os.environ.update(environ)
    for ret in (r for batch in returns for r in batch):
        ret.return_value  # noqa: B018 (a job's exception is raised here, as the launcher's caller would see it)
    return subprocess.CompletedProcess(["mcu-exp", "-m", *args], 0, printed.getvalue(), errors.getvalue())


def _logging_state() -> dict[str, Any]:
    """What a job's console and logging set-up change: every logger's level, handlers,
    propagation and whether it is disabled."""
    import logging

    loggers = [
        logging.getLogger(),
        *(lg for lg in logging.Logger.manager.loggerDict.values() if isinstance(lg, logging.Logger)),
    ]
    return {"loggers": {lg: (lg.level, list(lg.handlers), lg.propagate, lg.disabled) for lg in loggers}}


def _restore_logging(state: dict[str, Any]) -> None:
    """Put back :func:`_logging_state`; handlers added meanwhile closed."""
    import logging

    kept = {h for (_, handlers, _, _) in state["loggers"].values() for h in handlers}
    loggers = [
        logging.getLogger(),
        *(lg for lg in logging.Logger.manager.loggerDict.values() if isinstance(lg, logging.Logger)),
    ]
    for logger in loggers:
        for handler in list(logger.handlers):
            if handler not in kept:
                logger.removeHandler(handler)
                handler.close()
        if logger in state["loggers"]:
            level, handlers, propagate, disabled = state["loggers"][logger]
            logger.setLevel(level)
            logger.handlers[:] = handlers
            logger.propagate, logger.disabled = propagate, disabled
