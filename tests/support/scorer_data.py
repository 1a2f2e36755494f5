"""Texts and config helpers the scorer tests share (a uniquely named module, not conftest)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from mcu_exp.config import ScorerConfig
from support.compose import compose

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


def _value(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def scorer_config(name: str = "minilm", **overrides: Any) -> ScorerConfig:
    """The typed scorer section a job gets from ``scorer=<name>`` plus ``scorer.<key>=<value>``
    overrides, composed by Hydra (so a scorer's composed ``fallback`` is there too)."""
    cfg = compose(f"scorer={name}", *(f"scorer.{k}={_value(v)}" for k, v in overrides.items()))
    return OmegaConf.to_object(cfg.scorer)  # type: ignore[return-value]
