"""MLflow tracking: one run per Hydra job, readable names, tags, params, metrics, artifacts."""

from mcu_exp.redact import is_secret_key
from mcu_exp.tracking.artifacts import ui_command
from mcu_exp.tracking.mlflow_run import (
    RunLogger,
    experiment_name,
    flatten_config,
    mlflow_run,
    tracking_uri,
)
from mcu_exp.tracking.naming import is_debug, run_name, run_tags

__all__ = [
    "RunLogger",
    "experiment_name",
    "flatten_config",
    "is_debug",
    "is_secret_key",
    "mlflow_run",
    "run_name",
    "run_tags",
    "tracking_uri",
    "ui_command",
]
