"""Shared by the local-backend tests and their worker script: the model configs (the shipped
SmolLM2, and a tiny randomly initialised Llama for the decoding mechanics), the requests, and
helpers to watch a cache file from outside."""

from __future__ import annotations

import dataclasses
import os
import sqlite3
from pathlib import Path

from omegaconf import OmegaConf

from mcu_exp.config import ModelConfig
from mcu_exp.llm import GenerationRequest, request_for
from mcu_exp.proxies.prompts import summary_messages

REPO = Path(__file__).resolve().parents[2]
HERE = REPO / "tests" / "llm"  # the local-backend tests and their worker script
K = 4
MAX_NEW_TOKENS = 10


def smollm_config() -> ModelConfig:
    """The shipped SmolLM2 config with short generations, on one torch thread."""
    raw = OmegaConf.to_container(OmegaConf.load(REPO / "conf" / "model" / "smollm2-135m.yaml"))
    return dataclasses.replace(ModelConfig(**raw), max_new_tokens=MAX_NEW_TOKENS, num_threads=1)


def tiny_config(folder: Path) -> ModelConfig:
    """The tiny Llama saved in ``folder``: a plain local model folder, SmolLM2's decoding settings,
    on the CPU with one torch thread."""
    return dataclasses.replace(
        smollm_config(), name="tiny-llama", model_id=str(folder), package=None, gguf_file=None, device="cpu"
    )


def build_tiny_llama(folder: Path) -> Path:
    """The tiny Llama of :mod:`support.tiny_llama`, saved into ``folder``."""
    from support.tiny_llama import build

    return build(folder)


def requests(first: int, last: int) -> list[GenerationRequest]:
    """Requests ``first..last-1``: one small Java method each, ``K`` samples, the shipped decoding settings."""
    cfg = smollm_config()
    return [
        request_for(cfg, summary_messages(f"int add{j}(int x) {{\n    return x + {j};\n}}", "Java"), n=K, seed=7)
        for j in range(first, last)
    ]


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
    path = os.pathsep.join(p for p in (str(REPO / "src"), str(REPO / "tests"), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", "PYTHONPATH": path}
