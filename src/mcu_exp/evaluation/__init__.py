"""Alignment of proxy labels with human labels: the metric registry, metrics, bootstrap CIs,
baselines, sensitivity grids and the results table."""

from mcu_exp.evaluation import definitions  # noqa: F401  (registers the built-in metrics first)
from mcu_exp.evaluation.alignment_report import AlignmentReport, evaluate, metrics_for_mlflow, render_table
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
    label_metric,
)
from mcu_exp.evaluation.registry import (
    HEADLINE,
    PRIMARY,
    Counts,
    Metric,
    RandomLabeller,
    Ranking,
    metric,
    metric_names,
    register,
    registered,
    unregister,
)
from mcu_exp.evaluation.sensitivity import (
    by_subgroup,
    epsilon_sweep,
    series_columns,
    similarity_sweep,
    sweep_metrics,
    threshold_sweep,
)

__all__ = [
    "HEADLINE",
    "PRIMARY",
    "AlignmentReport",
    "ConstantPredictionWarning",
    "Counts",
    "DegenerateMetricWarning",
    "Metric",
    "RandomLabeller",
    "Ranking",
    "SingleClassWarning",
    "alignment_metrics",
    "always_positive",
    "batch_metrics",
    "bootstrap_ci",
    "bootstrap_distribution",
    "by_subgroup",
    "epsilon_sweep",
    "evaluate",
    "label_metric",
    "metric",
    "metric_names",
    "metrics_for_mlflow",
    "percentile_interval",
    "random_expected",
    "register",
    "registered",
    "render_table",
    "resample_metrics",
    "series_columns",
    "similarity_sweep",
    "stratified_indices",
    "sweep_metrics",
    "threshold_sweep",
    "unregister",
]
