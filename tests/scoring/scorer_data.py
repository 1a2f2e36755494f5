"""Texts and config helpers the scorer tests share (a uniquely named module, not conftest)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from mcu_exp.config import ScorerConfig

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
