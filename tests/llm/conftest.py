"""Local models for the backend tests, each loaded once per session on one torch thread.

``tiny``: a randomly initialised 2-layer Llama with SmolLM2's tokenizer, built here, for the
decoding mechanics (seeding, batching, shared prefix, stops, cache, crashes), where the text
itself does not matter. ``smollm``: the shipped SmolLM2, for the few tests that need real text.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # imported in the fixtures, so collecting tests/llm/remote needs none of this
    from mcu_exp.config import ModelConfig
    from mcu_exp.llm import LocalBackend

os.environ["HF_HUB_OFFLINE"] = "1"


@pytest.fixture(scope="session")
def tiny_folder(tiny_llama: Path) -> Path:
    """The tiny Llama's model folder (weights, config, SmolLM2's tokenizer): the session's one."""
    return tiny_llama


@pytest.fixture(scope="session")
def tiny_cfg(tiny_folder: Path) -> ModelConfig:
    """ModelConfig of the tiny Llama: short generations, ``num_threads=1``."""
    from support.local_llm import tiny_config

    return tiny_config(tiny_folder)


@pytest.fixture(scope="session")
def tiny(tiny_cfg: ModelConfig) -> LocalBackend:
    """A loaded :class:`LocalBackend` on the tiny Llama, shared by the mechanics tests."""
    from mcu_exp.llm import LocalBackend

    backend = LocalBackend(tiny_cfg)
    backend.load()
    return backend


@pytest.fixture(scope="session")
def smollm_cfg() -> ModelConfig:
    """The shipped SmolLM2 ModelConfig with short generations, ``num_threads=1``."""
    from support.local_llm import smollm_config

    return smollm_config()


@pytest.fixture(scope="session")
def smollm(smollm_cfg: ModelConfig) -> LocalBackend:
    """A loaded :class:`LocalBackend` on SmolLM2, for the tests that need real text."""
    from mcu_exp.llm import LocalBackend

    backend = LocalBackend(smollm_cfg)
    backend.load()
    return backend
