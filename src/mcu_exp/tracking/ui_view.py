"""What the MLflow UI opens on: the headline columns, the runs sorted by the headline, and
a sweep's parent run carrying its best job's headline.

MLflow (3.x) has no per-experiment default for the runs table's columns or sort: a new
browser opens every experiment on the same few attribute columns, sorted by start time, and
remembers a user's choices in that browser only. What it does offer is a *shared view*: an
experiment tag ``mlflow.sharedViewState.<key>`` holding the table's state (columns, sort,
filter), opened by the URL ``#/experiments/<id>?viewStateShareKey=<key>``. Every experiment
this project writes to gets the view :data:`VIEW_KEY` (:func:`headline_view`), and
:func:`view_url` builds its link. The share cannot expand a parent run's children (MLflow
leaves that out of shared state), so a sweep's parent row carries its best job's headline
metrics (:func:`log_best_child`) and the job runs show when it is expanded.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Sequence
from typing import Any

from mcu_exp.evaluation.versus_always import rank_key
from mcu_exp.names import JOBS_FILTER
from mcu_exp.tracking.headline import SORT_BY, SORT_KEYS

log = logging.getLogger(__name__)

VIEW_KEY = "headline"
VIEW_TAG = "mlflow.sharedViewState."  # MLflow's prefix of a shared view's experiment tag
BEST_RUN_TAG, BEST_NAME_TAG = "mcu.best_run", "mcu.best_run_name"
COLUMNS = (  # in this order, left to right
    ("metrics", "mcc_ci_low"),
    ("metrics", "auc_score_ci_low"),
    ("metrics", "labelled_high"),
    ("tags", "mcu.beats_always"),
    ("metrics", "f1_minus_always"),
    ("metrics", "f1_minus_always_ci_low"),
    ("tags", "mcu.beats_chance"),
    ("metrics", "f1"),
    ("metrics", "baseline_always_f1"),
    ("metrics", "auc_score"),
    ("metrics", "vs_ceiling.upper"),
)
WIDTHS = {"metrics": 170, "tags": 140}  # px: a metric's full digits, as MLflow prints them, fit
THEN_BY = "auc_score_ci_low"  # ties of the headline's lower bound


def column(kind: str, key: str) -> str:
    """A runs-table column id as MLflow's UI writes it: ``metrics.`f1```."""
    return f"{kind}.`{key}`"


def headline_view() -> dict[str, Any]:
    """The shared view's state: the job runs alone (:data:`mcu_exp.names.JOBS_FILTER`: no sweep
    parent, whether it holds jobs or failed before any, and no report run), the headline columns
    in :data:`COLUMNS`'s order (MLflow would sort them by name) and wide enough for their values,
    runs sorted by MCC's lower bound, best first (:mod:`mcu_exp.report.ranking`)."""
    columns = [column(kind, key) for kind, key in COLUMNS]
    return {
        "searchFilter": JOBS_FILTER,
        "orderByKey": column("metrics", SORT_BY),
        "orderByAsc": False,
        "selectedColumns": columns,
        "columnOrder": columns,
        "columnWidths": {column(kind, key): WIDTHS[kind] for kind, key in COLUMNS},
    }


def set_headline_view(client: Any, experiment_id: str) -> None:
    """Give the experiment the shared view :data:`VIEW_KEY` (once; an unchanged tag is not rewritten)."""
    value = json.dumps(headline_view())
    tag = VIEW_TAG + VIEW_KEY
    if client.get_experiment(experiment_id).tags.get(tag) == value:
        return
    try:
        client.set_experiment_tag(experiment_id, tag, value)
    except Exception as exc:  # noqa: BLE001 (jobs starting together on one server: another stored it first, a unique key)
        if client.get_experiment(experiment_id).tags.get(tag) != value:
            log.warning("the experiment's headline view was not stored: %s", str(exc).splitlines()[0][:200])


def view_url(ui: str, experiment_id: str) -> str:
    """The link that opens the experiment on the headline view (``ui``: the UI's base URL)."""
    return f"{ui.rstrip('/')}/#/experiments/{experiment_id}/runs?viewStateShareKey={VIEW_KEY}"


OLD_SORT_BY = "f1_minus_always_ci_low"  # runs logged before MCC ranked by ΔF1's lower bound


def _rank(metrics: dict[str, float], key: str = SORT_BY) -> tuple[float, float]:
    """A run's place in the headline order (ascending, best first; undefined last)."""
    return rank_key(metrics.get(key, math.nan), metrics.get(THEN_BY, math.nan))


def best_child(children: Sequence[Any]) -> Any | None:
    """The finished job run first in the headline order (None when none finished with one):
    by MCC's lower bound, or by ΔF1's when no job logged MCC (runs logged before it)."""
    finished = [r for r in children if r.info.status == "FINISHED"]
    key = SORT_BY if any(SORT_BY in r.data.metrics for r in finished) else OLD_SORT_BY
    done = [r for r in finished if key in r.data.metrics]
    return min(done, key=lambda r: _rank(r.data.metrics, key), default=None)


def log_best_child(client: Any, parent_id: str, children: Sequence[Any]) -> Any | None:
    """Give a sweep's parent run its best job's headline metrics (:data:`SORT_KEYS`, F1, the
    always-1 baseline, AUC (score)) and tags naming that job (``mcu.best_run``,
    ``mcu.best_run_name``) and its ✓/✗; return the best run (None: no job finished)."""
    from mlflow.entities import Metric, RunTag

    best = best_child(children)
    if best is None:
        return None
    keys = dict.fromkeys([*SORT_KEYS, *(key for kind, key in COLUMNS if kind == "metrics")])
    found = best.data.metrics
    metrics = [Metric(k, float(found[k]), 0, 0) for k in keys if k in found]
    tags = {BEST_RUN_TAG: best.info.run_id, BEST_NAME_TAG: str(best.info.run_name)}
    tags.update({key: best.data.tags[key] for kind, key in COLUMNS if kind == "tags" and key in best.data.tags})
    client.log_batch(parent_id, metrics=metrics, tags=[RunTag(k, v) for k, v in tags.items()])
    return best
