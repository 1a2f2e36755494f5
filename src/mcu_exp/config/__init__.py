"""The job's configuration: the typed schema (:mod:`.schema`) and "did you mean" for misspelled
keys and names (:mod:`.suggest`), nothing else.

The schema's dataclasses are re-exported here, so ``from mcu_exp.config import ModelConfig``
reads as the configuration's public face. The values are checked by the folder that owns each
section (``calibration``, ``data``, ``evaluation``, ``llm``, ``scoring``, ``store``, the proxies),
all run by :mod:`mcu_exp.job.validate`.
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
    ProbeConfig,
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
    "ProbeConfig",
    "LabelsConfig",
    "ModelConfig",
    "PathsConfig",
    "ScorerConfig",
    "TrackingConfig",
    "register_configs",
]
