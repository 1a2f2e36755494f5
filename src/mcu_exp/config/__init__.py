"""The job's configuration: the typed schema (:mod:`.schema`), the checks Hydra cannot make
(:mod:`.checks`) and "did you mean" for misspelled keys and names (:mod:`.suggest`).

The schema's dataclasses are re-exported here, so ``from mcu_exp.config import ModelConfig``
reads as the configuration's public face; the checks import the registries and are imported
from :mod:`mcu_exp.config.checks` where needed.
"""

from mcu_exp.config.schema import (
    CacheConfig,
    Config,
    DatasetConfig,
    DecisionConfig,
    EvaluationConfig,
    ExpertMember,
    ExpertsConfig,
    GenerationConfig,
    LabelsConfig,
    ModelConfig,
    PathsConfig,
    PluginsConfig,
    ScorerConfig,
    TrackingConfig,
    register_configs,
)

__all__ = [
    "CacheConfig",
    "Config",
    "DatasetConfig",
    "DecisionConfig",
    "EvaluationConfig",
    "ExpertMember",
    "ExpertsConfig",
    "GenerationConfig",
    "PluginsConfig",
    "LabelsConfig",
    "ModelConfig",
    "PathsConfig",
    "ScorerConfig",
    "TrackingConfig",
    "register_configs",
]
