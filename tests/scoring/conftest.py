"""Fixtures for the scorer tests: the embedded MiniLM encoder, loaded once per session, run on
one torch thread."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from mcu_exp.scoring import BertScorer
from support.scorer_data import scorer_config

os.environ["HF_HUB_OFFLINE"] = "1"


@pytest.fixture(scope="session", autouse=True)
def one_torch_thread() -> Iterator[None]:
    """One torch thread for the encoder and bert-score: on a shared 2-core box torch's default
    (every core) made these tests twice as slow (OpenMP threads waiting for descheduled peers)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def minilm_cfg() -> Any:
    return scorer_config()


@pytest.fixture(scope="session")
def scorer(minilm_cfg: Any) -> BertScorer:
    """Our scorer on the embedded MiniLM (in-memory cache); its encoder is shared process-wide."""
    return BertScorer(minilm_cfg)


@pytest.fixture(scope="session")
def reference(scorer: BertScorer) -> Any:
    """bert-score's own BERTScorer on the same model folder and layer."""
    from bert_score import BERTScorer

    return BERTScorer(model_type=str(scorer.resolved.path), num_layers=6, device="cpu")
