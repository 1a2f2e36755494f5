"""Report tables, figures and pages from synthetic run records (no MLflow, no subprocess)."""

from __future__ import annotations

import base64
import re

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure as MplFigure

from mcu_exp.names import TAG_UNDEFINED, UNDEFINED
from mcu_exp.report import figures, tables
from mcu_exp.report.html import Figure, ReportDocument, Section, render_html, render_markdown


def record(
    run_id: str,
    model: str,
    eps: float,
    f1: float,
    start: int,
    rule: str = "conformal",
    theta: float = 0.45,
    **metrics: float,
) -> dict:
    params = {
        "decision.epsilon": str(eps),
        "decision.rule": rule,
        "decision.theta": str(theta),
        "decision.quantile": "empirical",
        "labels.group": "all",
    }
    tags = {"mcu.model": model, "mcu.proxy": "p1", "mcu.dataset": "scalabrino", "mcu.sweep": "s1"}
    values = {
        "f1": f1,
        "f1_ci_low": f1 - 0.1,
        "f1_ci_high": f1 + 0.1,
        "accuracy": 0.6,
        "precision": 0.55,
        "recall": 0.9,
        "auc_binary": 0.55,
        "auc_binary_ci_low": 0.45,
        "auc_binary_ci_high": 0.65,
        "baseline_always_f1": 0.684,
        "baseline_random_f1": 0.518,
        "tau": 0.3,
        "coverage": 0.9,
        "group.professional.f1": f1 + 0.05,
        "group.professional.auc_binary": 0.5,
        "group.professional.n": 50.0,
        "n": 50.0,
        **metrics,
    }
    return tables.run_record(run_id, f"{model} · p1 · ε={eps}", "1", "FINISHED", start, tags, params, values)


@pytest.fixture
def frame() -> pd.DataFrame:
    return tables.runs_frame(
        [
            record("a", "qwen3-14b", 0.1, 0.70, start=1),
            record("b", "gpt-4o", 0.1, 0.72, start=2),
            record("c", "qwen3-14b", 0.2, 0.66, start=3),
            record("d", "gpt-4o", 0.2, 0.69, start=4),
            record("e", "qwen3-14b", 0.1, 0.71, start=5),  # a rerun of a's configuration
        ]
    )


def test_keys_show_what_varies_and_reruns_collapse_to_the_newest(frame: pd.DataFrame) -> None:
    keys = tables.varying_keys(frame)
    assert keys == ["model", "proxy", "epsilon"]
    rows = tables.latest_per_config(frame, keys)
    assert list(rows.index) == ["e", "c", "b", "d"]  # qwen3 launched first, then ε ascending
    assert rows.loc["e", "runs"] == 2 and rows.loc["d", "runs"] == 1
    summary = tables.summary_table(frame, keys)
    assert summary["f1"].tolist() == [0.71, 0.66, 0.72, 0.69]


def test_theta_is_a_key_only_for_rules_that_use_it() -> None:
    conformal = tables.runs_frame([record("a", "m", 0.1, 0.7, 1, theta=0.3), record("b", "m", 0.1, 0.7, 2, theta=0.5)])
    assert "theta" not in tables.varying_keys(conformal)
    theta = tables.runs_frame(
        [record("a", "m", 0.1, 0.7, 1, rule="theta", theta=0.3), record("b", "m", 0.1, 0.7, 2, rule="theta", theta=0.5)]
    )
    assert tables.varying_keys(theta) == ["model", "proxy", "theta"]


def test_display_shows_cis_baselines_and_vs_reference_only_when_logged(frame: pd.DataFrame) -> None:
    keys = tables.varying_keys(frame)
    shown = tables.display_table(tables.summary_table(frame, keys), keys)
    assert shown.loc[0, "F1"] == "71.0% [61.0%, 81.0%]"
    assert shown.loc[0, "F1 always-1"] == "68.4%" and shown.loc[0, "ε"] == "0.1"
    assert not any("vs reference" in c for c in shown.columns)
    assert "AUC (score)" not in shown.columns  # a metric no run logged gets no column

    with_p0 = tables.runs_frame(
        [
            record(
                "x",
                "gpt-4o",
                0.1,
                0.7,
                1,
                **{"vs_reference.f1": 0.95, "vs_reference.f1_ci_low": 0.9, "vs_reference.f1_ci_high": 0.99},
            ),
            record("y", "gpt-4", 0.1, 0.6, 2),
        ]
    )
    keys = tables.varying_keys(with_p0)
    shown = tables.display_table(tables.summary_table(with_p0, keys), keys)
    assert shown["F1 vs reference"].tolist() == ["95.0% [90.0%, 99.0%]", "—"]


def test_subgroups_table_and_markdown(frame: pd.DataFrame) -> None:
    keys = tables.varying_keys(frame)
    sub = tables.subgroup_table(frame, keys)
    assert set(sub["group"]) == {"all", "professional"} and len(sub) == 8
    shown = tables.display_subgroups(sub, keys)
    assert list(shown.columns[-2:]) == ["F1 professional", "AUC professional"]
    markdown = tables.to_markdown(pd.DataFrame({"model": ["a|b"], "F1": ["70.0%"]}))
    assert markdown.splitlines() == ["| model | F1 |", "| --- | ---: |", "| a\\|b | 70.0% |"]
    assert tables.group_sizes(sub) == "all 50, professional 50"


def test_figures_draw_one_curve_per_model_with_run_points(frame: pd.DataFrame) -> None:
    keys = tables.varying_keys(frame)
    rows = tables.latest_per_config(frame, keys)
    grid = np.linspace(0.1, 0.4, 5)
    curves = pd.concat(
        [pd.DataFrame({"run_id": rid, "threshold": grid, "f1": grid, "auc_binary": 0.5}) for rid in ("e", "b")]
    )
    fig = figures.plot_threshold_metric(curves, rows, keys, "f1", "F1")
    assert isinstance(fig, MplFigure)
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    # ε collapses (the curve does not depend on it); one baseline line for runs on the same labels
    assert sorted(legend) == ["F1 always-1 baseline (68.4%)", "gpt-4o", "qwen3-14b"]
    dots = [line for line in fig.axes[0].lines if line.get_linestyle() == "None"]
    assert sum(len(d.get_xdata()) for d in dots) == 4  # every run's (τ, F1) marked
    png = figures.png_bytes(fig)
    assert png.startswith(b"\x89PNG") and len(png) > 5000


def test_theta_figure_appears_for_runs_with_theta_curves() -> None:
    frame = tables.runs_frame(
        [
            record("a", "qwen3-14b", 0.1, 0.6, 1, rule="theta", theta=0.45),
            record("b", "gpt-4o", 0.1, 0.7, 2, rule="theta", theta=0.45),
            record("c", "gpt-4o", 0.1, 0.7, 3, rule="theta", theta=0.5),
        ]
    )
    keys = tables.varying_keys(frame)
    assert keys == ["model", "proxy", "theta"]
    rows = tables.latest_per_config(frame, keys)
    grid = np.linspace(0, 1, 21)
    theta = pd.concat(
        [pd.DataFrame({"run_id": rid, "theta": grid, "f1": 1 - grid, "auc_binary": 0.5}) for rid in ("a", "c")]
    )
    fig = figures.plot_theta(theta, rows, keys)
    legend = sorted(t.get_text() for t in fig.axes[0].get_legend().get_texts())
    assert legend == ["F1 always-1 baseline (68.4%)", "gpt-4o · p1", "qwen3-14b · p1"]
    dots = [line for line in fig.axes[0].lines if line.get_linestyle() == "None"]
    assert sorted(x for d in dots for x in d.get_xdata()) == [0.45, 0.45, 0.5]  # each run at its θ
    empty = pd.DataFrame(columns=["threshold", "f1", "auc_binary", "run_id"])
    eps = pd.DataFrame(columns=["epsilon", "nominal", "coverage", "run_id"])
    sub = tables.subgroup_table(frame, keys)
    assert "f1_auc_theta.png" in figures.report_figures(rows, keys, empty, eps, sub, theta)
    assert "f1_auc_theta.png" not in figures.report_figures(rows, keys, empty, eps, sub, theta.iloc[:0])


def test_runs_without_curves_or_subgroups_still_make_every_figure() -> None:
    bare = {"f1": 0.5, "accuracy": 0.5, "precision": 0.5, "recall": 0.5, "auc_binary": 0.5}  # a P3-like run
    frame = tables.runs_frame(
        [tables.run_record("r", "m · p3", "1", "FINISHED", 1, {"mcu.model": "m", "mcu.proxy": "p3"}, {}, bare)]
    )
    keys = tables.varying_keys(frame)
    rows = tables.latest_per_config(frame, keys)
    empty_thr = pd.DataFrame(columns=["threshold", "f1", "auc_binary", "run_id"])
    empty_eps = pd.DataFrame(columns=["epsilon", "nominal", "coverage", "run_id"])
    pngs = figures.report_figures(rows, keys, empty_thr, empty_eps, tables.subgroup_table(frame, keys))
    assert sorted(pngs) == ["auc_subgroups.png", "auc_threshold.png", "coverage_epsilon.png", "f1_threshold.png"]
    assert all(png.startswith(b"\x89PNG") for png in pngs.values())
    shown = tables.display_table(tables.summary_table(frame, keys), keys)
    assert shown.loc[0, "F1"] == "50.0%" and "F1 always-1" not in shown.columns


def test_html_page_is_self_contained_and_escaped() -> None:
    doc = ReportDocument(
        title="r <b>",
        facts={"runs": "2"},
        sections=[Section("Table", pd.DataFrame({"model": ["<script>x</script>"], "F1": ["70%"]}), "cap")],
        figures=[Figure("a.png", b"\x89PNG-a", "first"), Figure("b.png", b"\x89PNG-b", "second")],
        notes=["n1"],
    )
    page = render_html(doc)
    assert "<script>" not in page and "&lt;script&gt;" in page
    uris = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    assert [base64.b64decode(u) for u in uris] == [b"\x89PNG-a", b"\x89PNG-b"]
    markdown = render_markdown(doc)
    assert "![first](figures/a.png)" in markdown and "| model | F1 |" in markdown


def test_metrics_the_undefined_tag_names_read_undefined_and_absent_ones_a_dash() -> None:
    tags = {"mcu.model": "m", "mcu.proxy": "p1", TAG_UNDEFINED: "auc_binary, precision"}
    frame = tables.runs_frame(
        [tables.run_record("r", "m · p1", "1", "FINISHED", 1, tags, {}, {"f1": 0.5, "recall": 0.4, "n": 6.0})]
    )
    keys = tables.varying_keys(frame)
    shown = tables.display_table(tables.summary_table(frame, keys), keys)
    assert shown.loc[0, "AUC (labels)"] == UNDEFINED and shown.loc[0, "precision"] == UNDEFINED
    assert shown.loc[0, "F1"] == "50.0%" and shown.loc[0, "n"] == "6" and "accuracy" not in shown.columns
    csv = tables.csv_table(tables.summary_table(frame, keys))
    assert csv.loc[0, "auc_binary"] == "NaN" and pd.isna(csv.loc[0, "accuracy"])
    assert csv.loc[0, "undefined"] == "auc_binary; precision"
