"""Shared by the local-backend tests and their worker script: the model config, the requests,
and helpers to watch a cache file from outside."""

from __future__ import annotations

import dataclasses
import os
import sqlite3
from pathlib import Path

from omegaconf import OmegaConf

from mcu_exp.config import ModelConfig
from mcu_exp.llm import GenerationRequest, request_for
from mcu_exp.proxies.prompts import summary_messages

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
K = 4
MAX_NEW_TOKENS = 10


def model_config() -> ModelConfig:
    """The shipped SmolLM2 config with short generations."""
    raw = OmegaConf.to_container(OmegaConf.load(REPO / "conf" / "model" / "smollm2-135m.yaml"))
    return dataclasses.replace(ModelConfig(**raw), max_new_tokens=MAX_NEW_TOKENS)


def requests(first: int, last: int) -> list[GenerationRequest]:
    """Requests ``first..last-1``: one small Java method each, ``K`` samples."""
    cfg = model_config()
    return [request_for(cfg, summary_messages(f"int add{j}(int x) {{\n    return x + {j};\n}}", "Java"), n=K, seed=7)
            for j in range(first, last)]


def row_count(db: Path) -> int:
    """Rows in the samples table, 0 while the file or table does not exist yet."""
    if not db.is_file():
        return 0
    conn = sqlite3.connect(db, timeout=30)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM samples").fetchone()[0])
    except sqlite3.OperationalError:
        return 0
    finally:
        conn.close()


def worker_env() -> dict[str, str]:
    """Environment of a worker subprocess: offline, one thread, this checkout's sources first."""
    path = os.pathsep.join(p for p in (str(REPO / "src"), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", "PYTHONPATH": path}
