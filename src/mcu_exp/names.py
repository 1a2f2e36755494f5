"""Every name a job writes and a reader looks up: result files, table columns, MLflow keys.

Writers (the pipeline, :mod:`mcu_exp.outputs`, the tracker) and readers (``mcu-exp report``,
``mcu-exp tune``, tests) import these instead of spelling strings, so a rename is one edit
and a reader can never look for a column that no writer produces.
"""

from __future__ import annotations

# Files under <run dir>/results/ (logged as the MLflow run's artifacts).
RESULTS_DIR = "results"
PER_PROGRAM_FILE = "per_program.csv"
ALIGNMENT_FILE = "alignment.csv"
SPECS_FILE = "specs.json"
SCORES_FILE = "scores.csv"  # the arrays a calibrated proxy's decision rule used, per program
CONFIG_FILE = "config.yaml"
METRICS_FILE = "metrics.json"  # every metric of the job (null: undefined), in results/
TABLES_DIR = "tables"  # MLflow tables (JSON) among the artifacts
MEASURES_FILE = "measures.csv"  # AUC(score) and Spearman of every measure and code metric
REJECTION_FILE = "rejection.csv"  # prediction-rejection curves of the proxy's score
RELIABILITY_FILE = "reliability.csv"  # the humans' split-half ceiling, one row per label set

# Per-program score columns a measure table scores: uncertainty measures (−uncertainty, higher =
# more understandable), code metrics computed here, the dataset's own metrics (raw values).
MEASURE_PREFIX = "measure."
CODE_PREFIX = "code."
DATASET_METRIC_PREFIX = "dataset."


def records_file(name: str) -> str:
    """The CSV holding a proxy's record table ``name`` (summaries, judgments, answers…)."""
    return f"{name}.csv"


def sensitivity_file(grid: str) -> str:
    """The CSV of one sensitivity grid (threshold, epsilon, theta)."""
    return f"sensitivity_{grid}.csv"


# Per-program table: the human side, then the proxy's decision, then the proxy's own columns.
PROGRAM_ID = "program_id"
HUMAN_LABEL = "human_label"
HUMAN_FRACTION = "human_fraction"
N_EVALUATORS = "n_evaluators"
SCORE = "score"  # continuous, higher = more understandable (the threshold-free AUC's input)
LABEL = "label"  # the proxy's High (1) / Low (0)
PER_PROGRAM_FRONT = (HUMAN_LABEL, HUMAN_FRACTION, N_EVALUATORS, SCORE, LABEL)

# Sensitivity grids: the grid's x column in its CSV, and its MLflow series.
THRESHOLD_GRID = "threshold"
EPSILON_GRID = "epsilon"
THETA_GRID = "theta"
ALL_READERS = "all"  # the label set of every reader; the others are reader subgroups
SERIES_SCALE = 1000  # an MLflow series' step is its grid value × this, rounded


def mlflow_series(grid: str, column: str) -> str:
    """The MLflow series ``sens.<grid>_x1000.<column>``: ``column`` against the grid value in
    thousandths (MLflow's steps are integers)."""
    return f"sens.{grid}_x{SERIES_SCALE}.{column}"


# MLflow metric prefixes of the alignment reports beside the main one (all readers).
VS_REFERENCE_PREFIX = "vs_reference."  # the proxy's decisions scored against the reference proxy's
HUMAN_PREFIX = "human."
# Prefixes older runs logged, and what they are called now: readers of old runs rename them.
LEGACY_PREFIXES = {"vs_p0.": VS_REFERENCE_PREFIX}


def current_metric_key(key: str) -> str:
    """``key`` under today's name: an older run's ``vs_p0.f1`` reads as ``vs_reference.f1``."""
    for old, new in LEGACY_PREFIXES.items():
        if key.startswith(old):
            return new + key[len(old) :]
    return key


def group_prefix(group: str) -> str:
    """Prefix of a reader subgroup's alignment metrics (none for all readers)."""
    return "" if group == ALL_READERS else f"group.{group}."


# Run tags a reader (report, UI filter) looks up besides the identity tags.
TAG_DEBUG = "mcu.debug"  # "true" on smoke runs (debug=quick, any dataset.limit)
TAG_UNDEFINED = "mcu.undefined"  # comma-separated metrics that are undefined (NaN) on all readers
TAG_CLASS_WARNING = "mcu.warning.class_size"  # set when a human class has too few programs
TAG_VERDICT = "mcu.verdict"  # the plain-sentence verdict printed under the results table
TAG_HEADLINE = "mcu.headline"  # the rounded headline, "MCC 0.16 [-0.24, 0.35] · AUC (score) 0.61 · High 46/50"
TAG_VIEW_URL = "mcu.view_url"  # on a sweep's parent: the link to its runs-table view of its jobs
TAG_PLUGINS = "mcu.plugins"  # "dist==version, ..." of the plugin packages loaded (absent: none)
TAG_PLUGINS_REPLACED = "mcu.plugins.replaced"  # "registry:name (dist==version), ..." they replaced
TAG_KIND = "mcu.kind"  # what a run is: KIND_JOB, KIND_SWEEP (a multirun's parent) or KIND_REPORT
KIND_JOB, KIND_SWEEP, KIND_REPORT = "job", "sweep", "report"
JOBS_FILTER = f"tags.`{TAG_KIND}` = '{KIND_JOB}'"  # MLflow's filter string for the job runs alone
UNDEFINED = "undefined"  # how tables and reports show a metric that has no value (NaN)
