"""What MLflow shows of a job by default: the sortable headline (ΔF1 vs always-1 and AUC's
lower bound) as metrics, descriptors as params and tags, the verdict as ✓/✗, the headline
rounded as a tag, sensitivity curves named for their step and scorer, a shared headline view of
the experiment grouped by sweep, each sweep's own view, and a sweep parent carrying its best
job's headline."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from mcu_exp.tracking import mlflow_run, run_tags
from mcu_exp.tracking.headline import MAX_HEADLINE, chart_key, headline_tags, headline_text
from mcu_exp.tracking.ui_view import (
    BEST_RUN_TAG,
    VIEW_KEY,
    VIEW_TAG,
    headline_view,
    log_best_child,
    set_sweep_view,
    sweep_filter,
    sweep_view,
    sweep_view_key,
    view_url,
)
from support.mlflow_runs import METRICS, Store, compose_job
from support.mlflow_store import seed_store

JOB = {
    **METRICS,
    "f1_minus_always": 0.016,
    "f1_minus_always_ci_low": -0.084,
    "f1_minus_always_ci_high": 0.116,
    "auc_score": 0.61,
    "auc_score_ci_low": 0.52,
    "auc_score_ci_high": 0.7,
    "verdict.f1_vs_always": 0.0,
    "verdict.auc_vs_chance": 1.0,
    "calibration_fraction": 0.96,
    "job_seconds": 3.5,
    "baseline_random_recall": 0.5,
}
SERIES = {"sens.threshold_x1000.f1": [(500, 0.6), (600, 0.7)], "sens.epsilon_x1000.coverage": [(100, 0.9)]}


@pytest.fixture
def store(tmp_path: Path) -> Store:
    outputs = seed_store(tmp_path / "outputs")
    return Store(outputs, f"sqlite:///{outputs / 'mlflow.db'}")


def log(store: Store, metrics: dict[str, float], *overrides: str, parent: str | None = None) -> str:
    """One job's run, logged as the pipeline logs it (headline, series, descriptors, verdict)."""
    _, cfg = compose_job("tracking.experiment=head", *overrides)
    tags = {**run_tags(cfg), **({"mlflow.parentRunId": parent} if parent else {})}
    name = " · ".join(overrides) or "default"
    with mlflow_run(dataclasses.replace(cfg.tracking, uri=store.uri), str(store.outputs), name, tags) as tracker:
        tracker.log_headline(metrics, ["all", "phd"], SERIES)
        return str(tracker.run_id)


def test_a_job_logs_the_sortable_headline_and_moves_descriptors_out_of_metrics(store: Store) -> None:
    run = MlflowClient(tracking_uri=store.uri).get_run(log(store, JOB, "scorer=rougel"))
    metrics, params, tags = run.data.metrics, run.data.params, run.data.tags
    assert {"f1_minus_always", "f1_minus_always_ci_low", "f1_minus_always_ci_high", "auc_score_ci_low"} <= set(metrics)
    assert {"f1", "f1_ci_low", "baseline_always_f1", "verdict.f1_vs_always"} <= set(metrics)
    assert len(metrics) <= MAX_HEADLINE and "baseline_random_recall" not in metrics
    assert not {"n", "prevalence", "calibration_fraction", "job_seconds"} & set(metrics)
    assert params["result.n"] == "50" and params["result.prevalence"] == "0.52"
    assert params["result.calibration_fraction"] == "0.96" and tags["mcu.job_seconds"] == "3.5"
    assert tags["mcu.beats_always"] == "✗" and tags["mcu.beats_chance"] == "✓"
    assert tags["mcu.headline"] == "AUC (score) 0.61"  # no MCC, no counts logged: left out, not 0
    # Curves keyed by what the step means, thresholds apart per scorer.
    assert "sensitivity/f1_vs_threshold_milli.rougel" in metrics and "sens.threshold_x1000.f1" not in metrics
    history = MlflowClient(tracking_uri=store.uri).get_metric_history(
        run.info.run_id, "sensitivity/f1_vs_threshold_milli.rougel"
    )
    assert [(m.step, m.value) for m in history] == [(500, 0.6), (600, 0.7)]
    assert "sensitivity/coverage_vs_epsilon_milli" in metrics


def test_chart_keys_name_the_step_and_the_scorer() -> None:
    assert chart_key("sens.threshold_x1000.auc_binary", "minilm") == "sensitivity/auc_binary_vs_threshold_milli.minilm"
    assert chart_key("sens.theta_x1000.f1", "minilm") == "sensitivity/f1_vs_theta_milli"
    assert chart_key("f1", "minilm") == "f1"


def test_the_experiment_opens_on_the_headline_view(store: Store) -> None:
    log(store, JOB)
    client = MlflowClient(tracking_uri=store.uri)
    experiment = client.get_experiment_by_name("head")
    assert experiment is not None
    view = json.loads(experiment.tags[VIEW_TAG + VIEW_KEY])
    assert view["orderByKey"] == "metrics.`mcc_ci_low`" and view["orderByAsc"] is False
    assert view["searchFilter"] == "tags.`mcu.kind` = 'job'"  # no sweep parent, failed or not, no report run
    assert (
        "metrics.`f1_minus_always`" in view["selectedColumns"] and "tags.`mcu.beats_always`" in view["selectedColumns"]
    )
    url = view_url("http://127.0.0.1:5000/", experiment.experiment_id)
    assert url == f"http://127.0.0.1:5000/#/experiments/{experiment.experiment_id}/runs?viewStateShareKey=headline"
    assert view == headline_view()


HEADLINE = {
    "mcc": 0.159,
    "mcc_ci_low": -0.242,
    "mcc_ci_high": 0.347,
    "auc_score": 0.6117,
    "labelled_high": 0.92,
    "n": 50.0,
    "tp": 25.0,
    "fp": 21.0,
}


def test_the_headline_tag_is_rounded_and_short() -> None:
    """Two decimals, as the sweep's summary prints them; the High count is TP + FP of n."""
    assert headline_text(HEADLINE) == "MCC 0.16 [-0.24, 0.35] · AUC (score) 0.61 · High 46/50"
    assert headline_tags(HEADLINE) == {"mcu.headline": "MCC 0.16 [-0.24, 0.35] · AUC (score) 0.61 · High 46/50"}
    wide = {
        **HEADLINE,
        "mcc": -0.004,
        "mcc_ci_low": -0.456,
        "mcc_ci_high": -0.0001,
        "n": 1000.0,
        "tp": 500.0,
        "fp": 499.0,
    }
    text = headline_text(wide)
    assert text == "MCC -0.00 [-0.46, -0.00] · AUC (score) 0.61 · High 999/1000" and len(text) <= 60


def test_the_headline_tag_says_undefined_and_leaves_out_what_was_not_computed() -> None:
    nan = float("nan")
    # An undefined metric says so (never 0 or 0.5); an undefined bound drops the interval.
    assert (
        headline_text({**HEADLINE, "mcc": nan, "auc_score": None})
        == "MCC undefined · AUC (score) undefined · High 46/50"
    )
    assert headline_text({**HEADLINE, "mcc_ci_low": nan}) == "MCC 0.16 · AUC (score) 0.61 · High 46/50"
    # No counts: from the share of n, or the share alone.
    shares = {k: v for k, v in HEADLINE.items() if k not in ("tp", "fp")}
    assert headline_text(shares).endswith("· High 46/50")
    assert headline_text({k: v for k, v in shares.items() if k != "n"}).endswith("· High 92%")
    assert headline_text({**shares, "labelled_high": nan}) == "MCC 0.16 [-0.24, 0.35] · AUC (score) 0.61"
    # A run that computed none of them (an old run) gets no tag.
    assert headline_text({"f1": 0.7}) is None and headline_tags({"f1": 0.7}) == {}


def test_the_views_open_on_the_rounded_headline_and_group_by_sweep() -> None:
    view = headline_view()
    assert view["selectedColumns"][0] == "tags.`mcu.headline`" == view["columnOrder"][0]
    assert view["columnWidths"]["tags.`mcu.headline`"] >= 380  # the tag reads whole
    assert "metrics.`mcc_ci_low`" in view["selectedColumns"]  # the sortable metrics stay
    # MLflow 3.17's shared state keeps groupBy: one group per sweep, single runs in "Additional runs", open.
    assert view["groupBy"] == {"aggregateFunction": "max", "groupByKeys": [{"mode": "tag", "groupByData": "mcu.sweep"}]}
    assert view["groupsExpanded"] == {"tag.mcu.sweep": True}


def test_a_sweeps_view_is_its_jobs_with_the_headline_columns_and_sort() -> None:
    parent = "0123456789abcdef0123456789abcdef"
    view, headline = sweep_view(parent), headline_view()
    assert view["searchFilter"] == f"tags.`mcu.kind` = 'job' and tags.`mlflow.parentRunId` = '{parent}'"
    assert view["searchFilter"] == sweep_filter(parent)
    assert "groupBy" not in view  # one sweep: nothing to group
    for key in ("selectedColumns", "columnOrder", "columnWidths", "orderByKey", "orderByAsc"):
        assert view[key] == headline[key]
    assert sweep_view_key(parent) == "sweep-01234567"


def test_a_sweeps_view_is_stored_and_its_link_tagged_on_the_parent(store: Store) -> None:
    client = MlflowClient(tracking_uri=store.uri)
    log(store, JOB)  # creates the experiment
    experiment = client.get_experiment_by_name("head")
    assert experiment is not None
    exp_id = experiment.experiment_id
    parent = client.create_run(exp_id, run_name="sweep").info.run_id
    ids = [log(store, JOB, f"decision.epsilon={e}", parent=parent) for e in (0.05, 0.1)]
    url = set_sweep_view(client, exp_id, parent, "http://127.0.0.1:5000")
    key = f"sweep-{parent[:8]}"
    assert url == f"http://127.0.0.1:5000/#/experiments/{exp_id}/runs?viewStateShareKey={key}"
    assert client.get_run(parent).data.tags["mcu.view_url"] == url
    stored = json.loads(client.get_experiment(exp_id).tags[VIEW_TAG + key])
    assert stored == sweep_view(parent)
    # MLflow's own search reads the filter: this sweep's jobs, neither the parent nor the lone job.
    found = client.search_runs([exp_id], filter_string=stored["searchFilter"])
    assert sorted(r.info.run_id for r in found) == sorted(ids)
    assert set_sweep_view(client, exp_id, parent, "http://127.0.0.1:5000") == url  # again: the same view
    # Another sweep's view under the short key (two parent ids that start alike): the full id.
    client.set_experiment_tag(exp_id, VIEW_TAG + key, json.dumps(sweep_view(parent[:8] + "f" * 24)))
    full = f"http://x/#/experiments/{exp_id}/runs?viewStateShareKey=sweep-{parent}"
    assert set_sweep_view(client, exp_id, parent, "http://x") == full
    assert json.loads(client.get_experiment(exp_id).tags[f"{VIEW_TAG}sweep-{parent}"]) == sweep_view(parent)


def test_a_sweeps_view_that_mlflow_refuses_is_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    class Refusing:
        def get_experiment(self, experiment_id: str) -> object:
            raise OSError("the tracking server is gone")

    assert set_sweep_view(Refusing(), "1", "0123456789abcdef", "http://127.0.0.1:5000") is None
    assert "the sweep's view was not stored: the tracking server is gone" in caplog.text


def test_the_sweep_parent_carries_its_best_jobs_headline(store: Store) -> None:
    client = MlflowClient(tracking_uri=store.uri)
    log(store, JOB)  # creates the experiment
    experiment = client.get_experiment_by_name("head")
    assert experiment is not None
    parent = client.create_run(experiment.experiment_id, run_name="sweep").info.run_id
    better = {**JOB, "f1_minus_always": 0.1, "f1_minus_always_ci_low": 0.02, "verdict.f1_vs_always": 1.0}
    tied = {**better, "auc_score_ci_low": 0.4}
    ids = [log(store, m, f"decision.epsilon={e}", parent=parent) for m, e in ((JOB, 0.05), (better, 0.1), (tied, 0.2))]
    children = client.search_runs([experiment.experiment_id], filter_string=f"tags.`mlflow.parentRunId` = '{parent}'")
    best = log_best_child(client, parent, children)
    assert best is not None and best.info.run_id == ids[1]  # ΔF1's lower bound, then AUC (score)'s
    run = client.get_run(parent)
    assert run.data.metrics["f1_minus_always_ci_low"] == 0.02 and run.data.metrics["auc_score_ci_low"] == 0.52
    assert run.data.tags[BEST_RUN_TAG] == ids[1] and run.data.tags["mcu.beats_always"] == "✓"
    assert run.data.tags["mcu.headline"] == client.get_run(ids[1]).data.tags["mcu.headline"]


def test_the_headline_figure_puts_f1_and_its_baselines_on_one_axis(store: Store, tmp_path: Path) -> None:
    from PIL import Image

    from mcu_exp.tracking.headline_figure import FILE

    _, cfg = compose_job("tracking.experiment=head")
    tracking = dataclasses.replace(cfg.tracking, uri=store.uri)
    with mlflow_run(tracking, str(store.outputs), "figure", run_tags(cfg)) as tracker:
        tracker.log_headline({**JOB, "auc_binary": float("nan")}, ["all"], {}, figure=tmp_path)
    with Image.open(tmp_path / FILE) as image:
        assert image.size == (900, 360)
        colours = len(set(image.convert("RGB").getdata()))
    assert colours > 20  # bars, whiskers and text, not a blank canvas
