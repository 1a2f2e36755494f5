"""Importing the job's modules loads neither pandas nor MLflow: the app, a launcher's worker and
every test file that imports them pay for those libraries only when a step needs them (pandas
alone took 2.7 s of the 4–5 s ``import mcu_exp.pipeline`` cost). A fresh interpreter, since
this test process has long imported both."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("pandas", "mlflow")


@pytest.mark.parametrize("module", ["mcu_exp.pipeline", "mcu_exp.app"])
def test_importing_the_job_loads_neither_pandas_nor_mlflow(module: str) -> None:
    probe = f"import json, sys; import {module}; print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    res = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    assert json.loads(res.stdout.splitlines()[-1]) == [], f"importing {module} loaded {res.stdout.strip()}"
