"""Helpers of the batch-backend tests: a model config pointed at the fake batch server, requests,
and a generator whose batch backend records its batches beside its cache."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

from batch_server import BatchServer

from mcu_exp.config import ModelConfig
from mcu_exp.llm import CachedGenerator, GenerationRequest, Message

PRICES = {"price_input_per_mtok": 2.0, "price_output_per_mtok": 10.0}


def batch_cfg(provider: str, server: BatchServer, **fields: Any) -> ModelConfig:
    """A batch-mode ModelConfig for ``provider`` against ``server``, polling every 0.05 s."""
    values: dict[str, Any] = {
        "name": f"fake-{provider}",
        "backend": provider,
        "model_id": "fake-model",
        "base_url": server.url + "/v1" if provider == "openai" else server.url,
        "timeout_s": 5.0,
        "max_retries": 1,
        "backoff_initial_s": 0.01,
        "backoff_max_s": 0.02,
        "max_new_tokens": 16,
        "stop": [],
        "batch": True,
        "batch_poll_s": 0.05,
        "batch_poll_max_s": 0.1,
        "n_per_request": 2,
        **PRICES,
    }
    values.update(fields)
    return ModelConfig(**values)


def requests(*prompts: str, n: int = 2) -> list[GenerationRequest]:
    return [
        GenerationRequest(messages=(Message("system", "Be brief."), Message("user", p)), n=n, max_new_tokens=16, seed=5)
        for p in prompts
    ]


def generator(cfg: ModelConfig, cache_dir: Path) -> CachedGenerator:
    """A generator whose batch backend records its batches beside its cache in ``cache_dir``."""
    return CachedGenerator(cfg, cache_dir, progress=False)


def batch_states(cache_dir: Path) -> list[str]:
    """The state of every recorded batch, in id order."""
    with closing(sqlite3.connect(cache_dir / "batches.sqlite")) as conn:
        return [row[0] for row in conn.execute("SELECT state FROM batches ORDER BY created")]


def cached_rows(cache_dir: Path) -> int:
    with closing(sqlite3.connect(cache_dir / "generations.sqlite")) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM samples").fetchone()[0])
