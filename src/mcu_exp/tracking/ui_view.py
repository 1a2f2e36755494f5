"""What the MLflow UI opens on: the headline columns, the runs sorted by the headline, one
sweep's jobs at a time, and a sweep's parent run carrying its best job's headline.

MLflow (3.x) has no per-experiment default for the runs table's columns or sort: a new
browser opens every experiment on the same few attribute columns, sorted by start time, and
remembers a user's choices in that browser only. What it does offer is a *shared view*: an
experiment tag ``mlflow.sharedViewState.<key>`` holding the table's state (columns, sort,
filter, grouping), opened by the URL ``#/experiments/<id>/runs?viewStateShareKey=<key>``. Every
experiment this project writes to gets the view :data:`VIEW_KEY` (:func:`headline_view`): every
job, grouped by the sweep it belongs to (MLflow 3.17's shared state keeps ``groupBy``; the group
is the job's tag ``mcu.sweep``, one value per sweep parent and readable where the parent's id is
not; single runs make the group "Additional runs"), and :func:`view_url` builds its link. Each
sweep gets its own view, ``sweep-<the parent run id's first 8 characters>`` (:func:`sweep_view`:
that sweep's jobs alone, the same columns and sort), stored when the parent is closed
(:func:`set_sweep_view`), its link on the parent (tag ``mcu.view_url``) and printed at the end
of the sweep. MLflow has no number format: the first column is each job's rounded headline, the
tag ``mcu.headline`` (:func:`mcu_exp.tracking.headline.headline_tags`); the metric columns
after it keep every digit and sort. The share cannot expand a parent run's children (MLflow
leaves that out of shared state), so a sweep's parent row carries its best job's headline
metrics and tags (:func:`log_best_child`) for MLflow's plain view.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Sequence
from typing import Any

from mcu_exp.evaluation.alignment_report import near_constant
from mcu_exp.evaluation.versus_always import rank_key
from mcu_exp.names import JOBS_FILTER, TAG_HEADLINE, TAG_VIEW_URL
from mcu_exp.tracking.headline import SORT_BY, SORT_KEYS

log = logging.getLogger(__name__)

VIEW_KEY = "headline"
VIEW_TAG = "mlflow.sharedViewState."  # MLflow's prefix of a shared view's experiment tag
SWEEP_VIEW_PREFIX = "sweep-"  # a sweep's view: sweep-<its parent run id's first 8 characters>
PARENT_TAG = "mlflow.parentRunId"  # MLflow's own nesting tag, on each job of a sweep
SWEEP_TAG = "mcu.sweep"  # the sweep a job belongs to (its folder's name): the headline view's groups
BEST_RUN_TAG, BEST_NAME_TAG = "mcu.best_run", "mcu.best_run_name"
COLUMNS = (  # in this order, left to right
    ("tags", TAG_HEADLINE),
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
HEADLINE_WIDTH = 390  # px: the rounded headline tag (about 55 characters) reads whole
THEN_BY = "auc_score_ci_low"  # ties of the headline's lower bound
# The headline view's groups: one per sweep, its row showing each column's largest value over the
# sweep's jobs (MLflow's aggregate; groups sort by it, so the sweep holding the best job comes
# first); single runs, without the tag, fall in MLflow's "Additional runs" group, opened too.
GROUP_BY = {"aggregateFunction": "max", "groupByKeys": [{"mode": "tag", "groupByData": SWEEP_TAG}]}
GROUPS_EXPANDED = {f"tag.{SWEEP_TAG}": True}  # MLflow's id of the "Additional runs" group (closed by default)


def column(kind: str, key: str) -> str:
    """A runs-table column id as MLflow's UI writes it: ``metrics.`f1```."""
    return f"{kind}.`{key}`"


def _table(search_filter: str) -> dict[str, Any]:
    """A view's columns (:data:`COLUMNS`, in that order: MLflow would sort them by name; wide
    enough for their values) and sort (MCC's lower bound, best first: :mod:`mcu_exp.report.ranking`)
    over the runs ``search_filter`` keeps."""
    columns = [column(kind, key) for kind, key in COLUMNS]
    widths = {column(kind, key): WIDTHS[kind] for kind, key in COLUMNS}
    widths[column("tags", TAG_HEADLINE)] = HEADLINE_WIDTH
    return {
        "searchFilter": search_filter,
        "orderByKey": column("metrics", SORT_BY),
        "orderByAsc": False,
        "selectedColumns": columns,
        "columnOrder": columns,
        "columnWidths": widths,
    }


def headline_view() -> dict[str, Any]:
    """The experiment's shared view: the job runs alone (:data:`mcu_exp.names.JOBS_FILTER`: no
    sweep parent, whether it holds jobs or failed before any, and no report run) grouped by
    sweep (:data:`GROUP_BY`), the headline columns, sorted by MCC's lower bound."""
    return {**_table(JOBS_FILTER), "groupBy": GROUP_BY, "groupsExpanded": GROUPS_EXPANDED}


def sweep_filter(parent_id: str) -> str:
    """MLflow's filter string for one sweep's jobs: its parent's children among the job runs."""
    return f"{JOBS_FILTER} and tags.`{PARENT_TAG}` = '{parent_id}'"


def sweep_view(parent_id: str) -> dict[str, Any]:
    """A sweep's shared view: its jobs alone (:func:`sweep_filter`), the headline view's columns
    and sort, no groups (one sweep)."""
    return _table(sweep_filter(parent_id))


def sweep_view_key(parent_id: str) -> str:
    """The key of a sweep's view: ``sweep-`` and its parent run id's first 8 characters, as the
    sweep's summary prints run ids."""
    return f"{SWEEP_VIEW_PREFIX}{parent_id[:8]}"


def _store_view(client: Any, experiment_id: str, key: str, value: str) -> Exception | None:
    """Set the experiment's shared view ``key`` to ``value`` unless it already holds it; the
    error when MLflow refused and the view does not hold it."""
    tag = VIEW_TAG + key
    if client.get_experiment(experiment_id).tags.get(tag) == value:
        return None
    try:
        client.set_experiment_tag(experiment_id, tag, value)
    except Exception as exc:  # noqa: BLE001 (jobs starting together on one server: another stored it first, a unique key)
        if client.get_experiment(experiment_id).tags.get(tag) != value:
            return exc
    return None


def _first_line(exc: Exception) -> str:
    return str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__


def set_headline_view(client: Any, experiment_id: str) -> None:
    """Give the experiment the shared view :data:`VIEW_KEY` (once; an unchanged tag is not rewritten)."""
    failed = _store_view(client, experiment_id, VIEW_KEY, json.dumps(headline_view()))
    if failed is not None:
        log.warning("the experiment's headline view was not stored: %s", _first_line(failed))


def set_sweep_view(client: Any, experiment_id: str, parent_id: str, ui: str) -> str | None:
    """Give the experiment a shared view of the sweep whose parent run is ``parent_id``
    (:func:`sweep_view`, key :func:`sweep_view_key`; the full id should another sweep's view hold
    the short key) and the parent the tag ``mcu.view_url``, its link in the UI at ``ui``; return
    the link (None, with a warning, when MLflow refused: the sweep's results are safe)."""
    value = json.dumps(sweep_view(parent_id))
    key = sweep_view_key(parent_id)
    try:
        held = client.get_experiment(experiment_id).tags.get(VIEW_TAG + key)
        if held is not None and held != value:  # two parents' ids start alike
            key = SWEEP_VIEW_PREFIX + parent_id
        failed = _store_view(client, experiment_id, key, value)
        if failed is not None:
            raise failed
        url = view_url(ui, experiment_id, key)
        client.set_tag(parent_id, TAG_VIEW_URL, url)
    except Exception as exc:  # noqa: BLE001 (the sweep's results are safe: the view is a convenience)
        log.warning("the sweep's view was not stored: %s", _first_line(exc))
        return None
    return url


def view_url(ui: str, experiment_id: str, key: str = VIEW_KEY) -> str:
    """The link that opens the experiment on the shared view ``key`` (the headline view by
    default; ``ui``: the UI's base URL)."""
    return f"{ui.rstrip('/')}/#/experiments/{experiment_id}/runs?viewStateShareKey={key}"


OLD_SORT_BY = "f1_minus_always_ci_low"  # runs logged before MCC ranked by ΔF1's lower bound


def _rank(metrics: dict[str, float], key: str = SORT_BY) -> tuple[float, float, float]:
    """A run's place in the headline order (ascending, best first; a nearly constant labeller
    after every other, as :func:`mcu_exp.report.ranking.sort_key` ranks; undefined last)."""
    share, n = metrics.get("labelled_high", math.nan), metrics.get("n", math.nan)
    tier = 1.0 if near_constant(share * n, n) else 0.0
    return (tier, *rank_key(metrics.get(key, math.nan), metrics.get(THEN_BY, math.nan)))


def best_child(children: Sequence[Any]) -> Any | None:
    """The finished job run first in the headline order (None when none finished with one):
    by MCC's lower bound, or by ΔF1's when no job logged MCC (runs logged before it)."""
    finished = [r for r in children if r.info.status == "FINISHED"]
    key = SORT_BY if any(SORT_BY in r.data.metrics for r in finished) else OLD_SORT_BY
    done = [r for r in finished if key in r.data.metrics]
    return min(done, key=lambda r: _rank({**r.data.metrics, "n": _programs(r)}, key), default=None)


def _programs(run: Any) -> float:
    """The run's number of programs (its param ``result.n``; NaN without one)."""
    try:
        return float(run.data.params.get("result.n", "nan"))
    except ValueError:
        return math.nan


def log_best_child(client: Any, parent_id: str, children: Sequence[Any]) -> Any | None:
    """Give a sweep's parent run its best job's headline metrics (:data:`SORT_KEYS`, F1, the
    always-1 baseline, AUC (score)) and tags naming that job (``mcu.best_run``,
    ``mcu.best_run_name``), its rounded headline (``mcu.headline``) and its ✓/✗; return the best
    run (None: no job finished)."""
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
