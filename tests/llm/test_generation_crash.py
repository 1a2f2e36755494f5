"""A generation killed with SIGKILL resumes exactly; two processes can fill one cache at once.

Both sides run the tiny random Llama (the text does not matter here, only which samples land
in the cache); the worker loads it from the same folder, so both compute the same keys.
"""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mcu_exp.config import ModelConfig
from mcu_exp.llm import CachedGenerator, GenerationRequest, LocalBackend
from mcu_exp.llm.cache import sample_key
from mcu_exp.llm.generator import CACHE_FILE
from support.local_llm import HERE, K, requests, row_count, worker_env

pytestmark = pytest.mark.slow  # jobs in subprocesses: tens of seconds on 2 cores

WORKER = str(HERE / "local_gen_worker.py")
KILL_REQUESTS = 16  # 64 samples over a second or more: the poll below sees the worker midway


def _start(model: ModelConfig, cache_dir: Path, first: int, last: int) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, WORKER, model.model_id, str(cache_dir), str(first), str(last)],
        env=worker_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _check_file(db: Path, expected_keys: set[str]) -> None:
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    keys = [k for (k,) in conn.execute("SELECT key FROM samples")]
    assert len(keys) == len(set(keys)) == len(expected_keys)
    assert set(keys) == expected_keys


def _expected_keys(backend: LocalBackend, wanted: list[GenerationRequest]) -> set[str]:
    return {sample_key(backend.identity(), r, i) for r in wanted for i in range(r.n)}


def test_sigkill_midway_then_rerun_gives_exactly_k_samples(tmp_path: Path, tiny: LocalBackend, tiny_cfg: ModelConfig):
    wanted = requests(0, KILL_REQUESTS)
    total, db = sum(r.n for r in wanted), tmp_path / CACHE_FILE
    proc = _start(tiny_cfg, tmp_path, 0, KILL_REQUESTS)
    killed_at, deadline = None, time.monotonic() + 600
    while time.monotonic() < deadline and proc.poll() is None:
        if 0 < row_count(db) < total:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            killed_at = row_count(db)
            break
        time.sleep(0.005)
    if killed_at is None:
        proc.kill()
        pytest.fail(f"worker ended (rc {proc.returncode}) before it could be killed: {proc.communicate()[1][-2000:]}")
    assert proc.returncode == -signal.SIGKILL
    assert 0 < killed_at < total

    gen = CachedGenerator(tiny_cfg, tmp_path, progress=False, backend=tiny)
    results = gen.generate(wanted)
    assert gen.stats == {
        "hits": killed_at,
        "misses": total - killed_at,
        "generated": total - killed_at,
        "errors": 0,
        "filtered": 0,
        "empty": 0,
        "from_peers": 0,
    }  # the dead worker's leases were taken over
    assert [len(r.samples) for r in results] == [K] * len(wanted)
    _check_file(db, _expected_keys(tiny, wanted))
    # Resumed in another process, the samples are those of one uninterrupted run.
    uninterrupted = CachedGenerator(tiny_cfg, tmp_path / "uninterrupted", progress=False, backend=tiny)
    assert [r.texts for r in uninterrupted.generate(wanted)] == [r.texts for r in results]


def test_two_processes_filling_one_cache_leave_it_consistent(tmp_path: Path, tiny: LocalBackend, tiny_cfg: ModelConfig):
    proc = _start(tiny_cfg, tmp_path, 0, 12)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready", proc.communicate()[1][-2000:]
    mine = requests(6, 18)  # overlaps the worker's 6..11
    results = CachedGenerator(tiny_cfg, tmp_path, progress=False, backend=tiny).generate(mine)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0 and out.strip() == "done", err[-2000:]
    assert "Traceback" not in err
    assert [len(r.samples) for r in results] == [K] * len(mine)
    _check_file(tmp_path / CACHE_FILE, _expected_keys(tiny, requests(0, 18)))
