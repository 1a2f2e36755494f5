"""The ``model`` sections' values checked before a job runs: a ``model.name``/``model.model_id``
(of the target or an expert) that does not name what would run, since the run would be logged
under another model's name (:mod:`mcu_exp.llm.labels`)."""

from __future__ import annotations

from collections.abc import Iterator

from mcu_exp.config import ExpertsConfig, ModelConfig
from mcu_exp.llm.labels import label_problem


def model_problems(model: ModelConfig, experts: ExpertsConfig) -> Iterator[str]:
    """The target's and every expert's label problem, one message each."""
    found = label_problem(model)
    if found:
        yield found
    for key, member in experts.members.items():
        found = label_problem(member.model, key=f"experts.members.{key}.model")
        if found:
            yield found
