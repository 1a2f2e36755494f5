"""Helpers of the report and launcher tests: run ``mcu-exp`` and stand-in sweeps in a
subprocess with their own outputs folder."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

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
