"""A report row is one configuration: every parameter that can change a result, not a few
identity keys. Real runs, logged by the project's tracker into a real MLflow store."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from mcu_exp.report.build import make_report
from mcu_exp.report.identity import NOT_CONFIGURATION, is_configuration
from support.md_tables import section, table_rows
from support.mlflow_runs import METRICS, Store, log_job

pytestmark = pytest.mark.slow  # whole jobs, stores or encoders: scheduled first under xdist

# A change of configuration, and the header of the column that shows it.
VARIANTS = {
    "labels.min_fraction=0.6": "label ≥",
    "proxy.k=30": "k",
    "seed=1": "seed",
    "scorer.num_layers=5": "layer",
    "experts=frontier": "experts",
    "proxy.split_seed=2": "split seed",
}
# Changes that cannot change a result: a run with them is a rerun.
NOT_RESULTS = [
    "quiet=true",
    "model.max_concurrency=2",
    "model.timeout_s=5",
    "paths.outputs=/elsewhere",
    "cache.dir=/elsewhere/cache",
    "evaluation.plots=false",
    "dataset.download=false",
]


def test_not_configuration_covers_paths_progress_and_throughput_only() -> None:
    for key in (
        "paths.outputs",
        "cache.dir",
        "quiet",
        "preview_only",
        "tracking.experiment",
        "tracking.uri",
        "model.num_threads",
        "experts.members.gpt-5.model.max_concurrency",
        "scorer.batch_size",
        "result.tau",
    ):
        assert not is_configuration(key), key
    for key in (
        "labels.min_fraction",
        "proxy.k",
        "proxy.r",
        "seed",
        "scorer.num_layers",
        "experts.name",
        "experts.members.gpt-5.seed",
        "model.temperature",
        "model.max_cost_usd",
        "dataset.root",
        "dataset.limit",
        "evaluation.bootstrap_resamples",
        "decision.epsilon",
        "reference.samples",
    ):
        assert is_configuration(key), key
    assert len(NOT_CONFIGURATION) == len(set(NOT_CONFIGURATION))


def test_runs_that_differ_in_any_result_parameter_keep_a_row_each(store: Store, tmp_path: Path) -> None:
    exp = "identity"
    first = log_job(store, exp)
    variants = {log_job(store, exp, [override]): override for override in VARIANTS}
    rerun = log_job(store, exp, NOT_RESULTS)
    out = make_report(store.uri, experiments=[exp], out=tmp_path / "report", log=False)

    summary = pd.read_csv(out / "summary.csv")
    assert len(summary) == 1 + len(VARIANTS)  # no result disappears
    assert set(summary["run_id"]) == {rerun, *variants} and first not in set(summary["run_id"])
    assert summary.set_index("run_id")["runs"].to_dict() == {rerun: 2, **dict.fromkeys(variants, 1)}

    markdown = (out / "report.md").read_text()
    main = section(markdown, "Alignment with human labels")
    rows = table_rows(main)
    assert len(rows) == 1 + len(VARIANTS)
    assert {"model", "proxy", "runs", "n", *VARIANTS.values()} <= set(rows[0])
    assert not {"quiet", "model.max_concurrency", "paths.outputs"} & set(rows[0])  # no column for non-results
    assert all(row["n"] == "50" and row["model"] == "smollm2-135m" and row["proxy"] == "p1" for row in rows)
    assert sorted(row["runs"] for row in rows) == ["1"] * len(VARIANTS) + ["2"]
    assert "1 row had reruns; the newest is shown" in main
    by_k = {row["k"]: row for row in rows}
    assert set(by_k) == {"20", "30"}  # the raw values, each row its own
    assert "readers: all; label: per row" in main  # labels.min_fraction differs between rows


def test_model_settings_that_go_with_the_name_are_a_note_not_columns(store: Store, tmp_path: Path) -> None:
    exp = "models"
    for model in ("gpt-4o", "qwen3-14b"):
        for eps in ("0.05", "0.2"):
            log_job(store, exp, [f"model={model}", f"decision.epsilon={eps}"])
    out = make_report(store.uri, experiments=[exp], out=tmp_path / "report", log=False)
    main = section((out / "report.md").read_text(), "Alignment with human labels")
    rows = table_rows(main)
    assert [(r["model"], r["ε"]) for r in rows] == [
        ("gpt-4o", "0.05"),
        ("gpt-4o", "0.2"),
        ("qwen3-14b", "0.05"),
        ("qwen3-14b", "0.2"),
    ]
    assert not any(c.startswith("model.") for c in rows[0])
    assert (
        "Also differing, with the model, proxy or expert pool named in the row (in summary.csv): model.backend" in main
    )
    assert "readers: all; label: mean ABU50 ≥ 0.5" in main
    summary = pd.read_csv(out / "summary.csv")
    assert {"params.model.backend", "params.model.model_id"} <= set(summary.columns)


def test_per_group_columns_name_the_readers_they_hold(store: Store, tmp_path: Path) -> None:
    exp = "groups"
    professional = {
        "group.professional.f1": 0.8,
        "group.professional.f1_ci_low": 0.7,
        "group.professional.f1_ci_high": 0.9,
        "group.professional.auc_binary": 0.75,
        "group.professional.n": 50.0,
    }
    log_job(store, exp, metrics={**METRICS, "f1": 0.6, **professional})
    # A run labelled by professional readers alone: its unprefixed metrics are theirs.
    log_job(
        store,
        exp,
        ["labels.group=professional"],
        metrics={
            **METRICS,
            "f1": 0.8,
            "f1_ci_low": 0.7,
            "f1_ci_high": 0.9,
            "auc_binary": 0.75,
            **professional,
            "group.bachelor.f1": 0.5,
            "group.bachelor.auc_binary": 0.5,
            "group.bachelor.n": 50.0,
        },
    )
    out = make_report(store.uri, experiments=[exp], out=tmp_path / "report", log=False)
    markdown = (out / "report.md").read_text()
    assert "readers: per row (see the reader group column)" in section(markdown, "Alignment with human labels")
    rows = {row["reader group"]: row for row in table_rows(section(markdown, "Per human reader group"))}
    assert rows["all"]["F1 all"] == "60.0% [60.0%, 80.0%]"
    assert rows["all"]["F1 professional"] == "80.0% [70.0%, 90.0%]"
    assert rows["professional"]["F1 all"] == "—"  # it has no all-readers metrics
    assert rows["professional"]["F1 professional"] == "80.0% [70.0%, 90.0%]"
    assert rows["professional"]["F1 bachelor"].startswith("50.0%")
