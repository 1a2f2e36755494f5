"""``vllm serve`` on 127.0.0.1 and the ``openai_compatible`` backend through the real OpenAI
client: a P1 job whose server is stopped mid-run (one error line, the samples kept), then the
rerun against the restarted server, which asks only for the missing samples and ends the job.
One test, so that the server starts twice in all (each start costs a minute or two on 2 cores)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from support.vllm import (  # type: ignore[import-not-found]
    MODEL,
    QUICK,
    REPO,
    SERVED_NAME,
    Server,
    cache_identities,
    finished_runs,
    timed,
)


def job_args(server: Server, *overrides: str) -> list[str]:
    """``mcu-exp`` on the served model through the OpenAI client (fast retries: a stopped
    server fails the job in a second, not after minutes of back-off)."""
    return [
        sys.executable,
        "-m",
        "mcu_exp",
        f"model={MODEL}",
        "model.backend=openai_compatible",
        f"model.base_url={server.url}",
        "model.max_retries=2",
        "model.backoff_initial_s=0.05",
        "model.backoff_max_s=0.1",
        "model.requests_per_minute=null",
        "model.tokens_per_minute=null",
        *QUICK,
        *overrides,
    ]


def job_env(outputs: Path) -> dict[str, str]:
    env = {**os.environ, "MCU_EXP_OUTPUTS": str(outputs)}
    env.pop("MLFLOW_TRACKING_URI", None)
    return env


def rows(outputs: Path) -> int:
    db = outputs / "cache" / "generations.sqlite"
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db, timeout=5) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM samples").fetchone()[0])
    except sqlite3.OperationalError:  # the job is creating its tables
        return 0


def test_p1_job_through_vllm_serve_stopped_mid_run_and_resumed(server: Server, outputs: Path) -> None:
    # P1 on 4 programs x 4 summaries: 8 requests of n=2, one at a time.
    args = job_args(server, "model.n_per_request=2", "model.max_concurrency=1")
    total = 16
    start = time.monotonic()
    job = subprocess.Popen(
        args, cwd=REPO, env=job_env(outputs), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 300
    while rows(outputs) < 4 and job.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    server.stop()
    out, err = job.communicate(timeout=300)
    timed("P1 job until the server stopped", start)
    kept = rows(outputs)
    both = out + err
    assert job.returncode == 1, both[-4000:]
    assert "Traceback" not in both, both[-4000:]
    errors = [line for line in err.splitlines() if "error" in line.lower()]
    assert len(errors) == 1 and errors[0].startswith("mcu-exp: error: "), err[-4000:]
    assert "openai_compatible" in errors[0] and "rerun to resume" in errors[0], errors[0]
    print(errors[0])
    assert 4 <= kept < total and kept % 2 == 0, kept  # whole responses of n=2 are kept
    answered = server.completions()
    assert answered >= kept // 2

    server.start()
    start = time.monotonic()
    res = subprocess.run(args, cwd=REPO, env=job_env(outputs), capture_output=True, text=True, timeout=900)
    timed("P1 rerun against the restarted server", start)
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    assert server.completions() == (total - kept) // 2  # only the missing samples were asked for
    idents = cache_identities(outputs / "cache")
    assert len(idents) == total
    assert {(i["backend"], i["model_id"], i["base_url"]) for i in idents} == {
        ("openai_compatible", SERVED_NAME, server.url)
    }
    runs = sorted(finished_runs(outputs), key=lambda r: r.info.start_time)
    assert [r.info.status for r in runs][-1] == "FINISHED" and len(runs) == 2, [r.info.status for r in runs]
    assert runs[-1].data.params["model.backend"] == "openai_compatible"
