"""Fixtures for the scorer tests: the embedded MiniLM encoder, loaded once per session."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

from mcu_exp.config import ScorerConfig
from mcu_exp.scoring import BertScorer

os.environ["HF_HUB_OFFLINE"] = "1"
REPO = Path(__file__).resolve().parents[2]

# Summaries of the kind the proxies compare, plus the edge cases bert-score treats specially.
SUMMARIES = [
    "Returns the sum of all positive elements in the given list.",
    "Computes the total of the list's values that are greater than zero.",
    "This method parses the configuration file and returns a map of settings.",
    "Reads the config file and builds a dictionary from its key-value pairs.",
    "Checks whether the user has permission to access the requested resource.",
    "Sorts the array in place using quicksort.",
    "Closes the stream.",
]
EMPTY = ""
LONG = " ".join(f"The method updates field{i} of the record and logs it." for i in range(60))


def scorer_config(name: str = "minilm", **overrides: Any) -> Any:
    """A scorer config from conf/scorer, merged onto the schema, with overrides."""
    cfg = OmegaConf.merge(OmegaConf.structured(ScorerConfig),
                          OmegaConf.load(REPO / "conf" / "scorer" / f"{name}.yaml"))
    for key, value in overrides.items():
        OmegaConf.update(cfg, key, value)
    return cfg


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
