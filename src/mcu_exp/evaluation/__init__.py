"""Alignment of proxy labels with human labels: metrics, bootstrap CIs, baselines,
sensitivity grids and the results table."""

from mcu_exp.evaluation.baselines import always_positive, random_expected
from mcu_exp.evaluation.bootstrap import (
    bootstrap_ci,
    bootstrap_distribution,
    percentile_interval,
    resample_metrics,
    stratified_indices,
)
from mcu_exp.evaluation.metrics import (
    ConstantPredictionWarning,
    DegenerateMetricWarning,
    SingleClassWarning,
    alignment_metrics,
    batch_metrics,
)
from mcu_exp.evaluation.report import AlignmentReport, evaluate, metrics_for_mlflow, render_table
from mcu_exp.evaluation.sensitivity import (
    by_subgroup,
    epsilon_sweep,
    similarity_sweep,
    threshold_sweep,
)

__all__ = [
    "AlignmentReport",
    "ConstantPredictionWarning",
    "DegenerateMetricWarning",
    "SingleClassWarning",
    "alignment_metrics",
    "always_positive",
    "batch_metrics",
    "bootstrap_ci",
    "bootstrap_distribution",
    "by_subgroup",
    "epsilon_sweep",
    "evaluate",
    "metrics_for_mlflow",
    "percentile_interval",
    "random_expected",
    "render_table",
    "resample_metrics",
    "similarity_sweep",
    "stratified_indices",
    "threshold_sweep",
]
