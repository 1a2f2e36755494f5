"""``mlflow server`` on 127.0.0.1 at a free port, for tests that track through HTTP: any
backend store URI (SQLite, PostgreSQL), artifacts proxied to a local folder, stopped after."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from support.postgres import free_port


@contextmanager
def mlflow_server(backend_store_uri: str, folder: Path, timeout_s: float = 180) -> Iterator[str]:
    """Run ``mlflow server`` with ``backend_store_uri`` and artifacts under ``folder/artifacts``
    (its log in ``folder/server.log``); yield its URL once ``/health`` answers. The server's
    job runner (GenAI jobs, unused by tracking) is off: its worker processes only slow the start."""
    folder.mkdir(parents=True, exist_ok=True)
    url = f"http://127.0.0.1:{free_port()}"
    log_path = folder / "server.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "mlflow",
                "server",
                "--backend-store-uri",
                backend_store_uri,
                "--artifacts-destination",
                (folder / "artifacts").as_uri(),
                "--host",
                "127.0.0.1",
                "--port",
                url.rsplit(":", 1)[1],
                "--workers",
                "1",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=folder,
            env={**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"},
        )
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=5) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"mlflow server did not come up:\n{log_path.read_text()[-3000:]}")
            time.sleep(0.25)
        yield url
    finally:
        stop(proc)


def stop(proc: subprocess.Popen[bytes]) -> None:
    """End the server's process group: SIGTERM, then SIGKILL after 2 s."""
    for sig, wait_s in ((signal.SIGTERM, 2), (signal.SIGKILL, 30)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:  # uvicorn's graceful shutdown can wait on idle connections
            continue
