"""The humans' ceiling in `mcu-exp report`: the bounds, the proxy's differences to them and its
disattenuated ρ in the main and per-group tables, the ceiling figure, and a report of real MLflow
runs that logged them (and runs that did not: "—", never 0; runs logged before the bounds: their
share of ceiling, labelled as an old run's)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
from matplotlib.collections import PolyCollection
from test_report_tables import record

from mcu_exp.names import UNDEFINED
from mcu_exp.report import ceiling, figures, tables
from mcu_exp.report.build import make_report
from mcu_exp.report.ceiling_figure import plot_ceiling
from support.ceiling_keys import bounds_metrics, old_metrics, undefined_bounds
from support.mlflow_runs import METRICS, Store, log_job

SCORE = {
    "auc_score": 0.58,
    "auc_score_ci_low": 0.42,
    "auc_score_ci_high": 0.74,
    "spearman": 0.21,
    "spearman_ci_low": -0.07,
    "spearman_ci_high": 0.46,
}
AUC_COLUMNS = ["AUC (score) lower bound", "AUC (score) upper bound", "AUC (score) − lower bound"]
AUC_COLUMNS.append("AUC (score) − upper bound")


def ceiling_metrics(prefix: str = "", auc: float = 0.65, upper: float = 0.82) -> dict[str, float]:
    """What a job logs for one label set (:func:`support.ceiling_keys.bounds_metrics`)."""
    return bounds_metrics(prefix, auc=auc, upper=upper)


def ceiling_frame() -> pd.DataFrame:
    return tables.runs_frame(
        [
            record(
                "a",
                "qwen3-14b",
                0.1,
                0.70,
                start=1,
                **SCORE,
                **ceiling_metrics(),
                **ceiling_metrics("group.professional.", auc=0.7, upper=0.85),
            ),
            record("b", "gpt-4o", 0.1, 0.72, start=2, **SCORE),  # a run from before the ceiling existed
            record(
                "c",
                "gpt-4",
                0.1,
                0.66,
                start=3,
                **SCORE,
                **undefined_bounds(),
                **undefined_bounds("group.professional."),
            ),
        ]
    )


def old_frame() -> pd.DataFrame:
    """A run logged before the bounds (ceiling over splits and a share of it) beside today's."""
    return tables.runs_frame(
        [
            record("a", "qwen3-14b", 0.1, 0.70, start=1, **SCORE, **ceiling_metrics()),
            record("o", "gpt-4o", 0.1, 0.72, start=2, **SCORE, **old_metrics(), **old_metrics("group.professional.")),
        ]
    )


def test_main_table_puts_the_bounds_and_the_differences_beside_each_metric() -> None:
    frame = ceiling_frame()
    keys = tables.varying_keys(frame)
    summary = tables.summary_table(frame, keys)
    shown = tables.display_table(summary, keys)
    columns = list(shown.columns)
    at = columns.index("AUC (score)")
    assert columns[at + 1 : at + 5] == AUC_COLUMNS  # the AUC on the ceiling's programs is the AUC: not repeated
    at = columns.index("Spearman ρ (score, correctness)")
    assert columns[at + 1 : at + 3] == ["ρ ceiling", "disattenuated ρ"]
    assert columns[columns.index("F1 random") + 1] == "F1 lower bound"  # after F1 and its baselines
    assert not any("share" in c for c in columns)
    assert shown["AUC (score) lower bound"].tolist() == ["0.650 [0.560, 0.750]", "—", UNDEFINED]
    assert shown["AUC (score) upper bound"].tolist() == ["0.820 [0.760, 0.880]", "—", UNDEFINED]
    assert shown["AUC (score) − lower bound"].tolist() == ["-0.070 [-0.200, +0.060]", "—", UNDEFINED]
    assert shown["AUC (score) − upper bound"].tolist()[0] == "-0.240 [-0.370, -0.110]"
    assert shown["ρ ceiling"].tolist() == ["0.800 [0.700, 0.850]", "—", UNDEFINED]
    assert shown["disattenuated ρ"].tolist()[0] == "0.263 [-0.090, 0.600]"
    assert shown["F1 lower bound"].tolist() == ["70.0% [60.0%, 80.0%]", "—", UNDEFINED]
    caption = ceiling.caption(summary)
    assert "95 % CI over programs" in caption and "beta-binomial reader model" in caption and "old run" not in caption
    csv = tables.csv_table(summary)
    assert csv["ceiling.auc_score"].tolist()[0] == 0.65 and csv["ceiling.auc_score"].tolist()[2] == "NaN"
    assert pd.isna(csv["ceiling.auc_score"].tolist()[1])  # never logged: an empty cell, not 0
    assert csv["vs_ceiling.upper_p_below"].tolist()[0] == 1.0 and csv["ceiling.upper_auc_score"].tolist()[0] == 0.82
    assert not any(c.startswith("share.") for c in csv.columns)


def test_the_auc_on_the_ceilings_programs_is_shown_where_it_differs() -> None:
    found = {**ceiling_metrics(), "vs_ceiling.auc_score": 0.61}  # programs with one reader left out
    frame = tables.runs_frame([record("a", "m", 0.1, 0.7, 1, **SCORE, **found), record("b", "n", 0.1, 0.7, 2, **SCORE)])
    keys = tables.varying_keys(frame)
    shown = tables.display_table(tables.summary_table(frame, keys), keys)
    columns = list(shown.columns)
    assert columns[columns.index("AUC (score)") + 1] == "AUC (score) on the ceiling's programs"
    assert shown["AUC (score) on the ceiling's programs"].tolist() == ["0.610 [0.420, 0.740]", "—"]


def test_runs_without_a_ceiling_get_no_ceiling_columns() -> None:
    frame = tables.runs_frame([record("a", "m", 0.1, 0.7, 1, **SCORE), record("b", "n", 0.1, 0.7, 2, **SCORE)])
    keys = tables.varying_keys(frame)
    summary = tables.summary_table(frame, keys)
    shown = tables.display_table(summary, keys)
    assert not any("ceiling" in c or "bound" in c or "disattenuated" in c for c in shown.columns)
    assert not any(c.startswith(("ceiling.", "vs_ceiling.", "disattenuated.", "share.")) for c in summary.columns)
    shown = tables.display_subgroups(tables.subgroup_table(frame, keys), keys)
    assert not any("lower" in c or "upper" in c for c in shown.columns)


def test_each_reader_group_is_read_against_its_own_ceiling() -> None:
    frame = ceiling_frame()
    keys = tables.varying_keys(frame)
    sub = tables.subgroup_table(frame, keys)
    assert tables.subgroups(frame) == ["professional"]  # group.professional.ceiling.f1 names no group
    assert sorted(set(sub["group"])) == ["all", "professional"]
    shown = tables.display_subgroups(sub, keys)
    assert shown["AUC lower professional"].tolist() == ["0.700 [0.610, 0.800]", "—", UNDEFINED]
    assert shown["AUC lower all"].tolist() == ["0.650 [0.560, 0.750]", "—", UNDEFINED]
    assert shown["AUC upper professional"].tolist() == ["0.850 [0.790, 0.910]", "—", UNDEFINED]
    assert shown["AUC − upper professional"].tolist()[0] == "-0.270 [-0.370, -0.110]"
    columns = list(shown.columns)
    assert columns[columns.index("AUC professional") + 1 :][:5] == [
        f"{head} professional" for head in ("AUC lower", "AUC upper", "AUC − lower", "AUC − upper", "disattenuated ρ")
    ]
    assert "CI over programs" in ceiling.group_caption(sub) and "old run" not in ceiling.group_caption(sub)


def test_an_old_runs_ceiling_and_share_are_shown_labelled() -> None:
    frame = old_frame()
    keys = tables.varying_keys(frame)
    summary = tables.summary_table(frame, keys)
    shown = tables.display_table(summary, keys)
    assert shown["AUC (score) lower bound"].tolist() == ["0.650 [0.560, 0.750]"] * 2  # the same half-panel estimate
    assert shown["AUC (score) upper bound"].tolist() == ["0.820 [0.760, 0.880]", "—"]
    assert shown["AUC (score) share of ceiling (old run)"].tolist() == ["—", "53.3% [-50.0%, 120.0%]"]
    assert shown["ρ share of ceiling (old run)"].tolist() == ["—", "26.2% [-9.0%, 60.0%]"]
    assert "(old run): their ceiling is the half-panel one with its interval over reader splits" in ceiling.caption(
        summary
    )
    assert summary["share.auc_score"].tolist()[1] == 0.533
    sub = tables.subgroup_table(frame, keys)
    groups = tables.display_subgroups(sub, keys)
    assert groups["share (old run) professional"].tolist() == ["—", "53.3% [-50.0%, 120.0%]"]
    assert groups["AUC lower professional"].tolist() == ["—", "0.650 [0.560, 0.750]"]
    assert "old run" in ceiling.group_caption(sub)
    rows = tables.latest_per_config(frame, keys)
    ticks = [t.get_text() for t in plot_ceiling(rows, keys).axes[0].get_xticklabels()]
    assert ticks[1].endswith("(old run: CI over splits)") and "(" not in ticks[0]


def test_ceiling_figure_draws_both_bounds_per_configuration_that_logged_them() -> None:
    frame = ceiling_frame()
    keys = tables.varying_keys(frame)
    rows = tables.latest_per_config(frame, keys)
    fig = plot_ceiling(rows, keys)
    auc, rho = fig.axes
    assert "lower and upper bounds" in auc.get_title() and "full panel" in rho.get_title()
    bands = [c for c in auc.collections if isinstance(c, PolyCollection)]
    assert len(bands) == 2  # only the run with a finite ceiling: its lower and its upper bound
    spans = [sorted({round(float(y), 6) for y in band.get_paths()[0].vertices[:, 1]}) for band in bands]
    assert spans == [[0.56, 0.75], [0.76, 0.88]]  # each bound's CI over programs
    ticks = [t.get_text() for t in auc.get_xticklabels()]
    assert ticks[0] == "qwen3-14b\np1" and ticks[1].endswith("(no ceiling logged)")
    assert ticks[2].endswith("(ceiling undefined)")
    legend = [t.get_text() for t in auc.get_legend().get_texts()]
    assert "humans' upper bound (reader model): 95 % CI over programs" in legend
    legend = [t.get_text() for t in rho.get_legend().get_texts()]
    assert "humans' ρ ceiling (Spearman–Brown): 95 % CI over programs" in legend and "chance (0)" in legend
    empty_thr = pd.DataFrame(columns=["threshold", "f1", "auc_binary", "run_id"])
    empty_eps = pd.DataFrame(columns=["epsilon", "nominal", "coverage", "run_id"])
    pngs = figures.report_figures(rows, keys, empty_thr, empty_eps, tables.subgroup_table(frame, keys))
    assert pngs["ceiling.png"].startswith(b"\x89PNG")
    assert not ceiling.figure_rows(rows[rows.index == "b"])  # no ceiling logged: no figure
    assert not ceiling.figure_rows(rows[rows.index == "c"])  # an undefined one: nothing to draw


def test_report_of_mlflow_runs_shows_their_bounds(store: Store, tmp_path: Path) -> None:
    exp = "ceiling"
    log_job(store, exp, ["decision.epsilon=0.1"], metrics={**METRICS, **SCORE, **ceiling_metrics()})
    log_job(store, exp, ["decision.epsilon=0.2"], metrics={**METRICS, **SCORE})
    out = make_report(store.uri, experiments=[exp], out=tmp_path / "report", log=False)
    markdown = (out / "report.md").read_text(encoding="utf-8")
    header = next(line for line in markdown.splitlines() if line.startswith("| model"))
    assert f"| AUC (score) | {' | '.join(AUC_COLUMNS)} |" in header
    assert "| 0.650 [0.560, 0.750] | 0.820 [0.760, 0.880] | -0.070 [-0.200, +0.060] | -0.240 [-0.370, -0.110] |" in (
        markdown
    )
    assert "Humans' ceiling on the same labels, [ ] = 95 % CI over programs" in markdown
    assert "- Humans' bounds on AUC (score): lower 0.650 [0.560, 0.750] (half panel), upper 0.820" in markdown
    assert (out / "figures" / "ceiling.png").read_bytes().startswith(b"\x89PNG")
    assert "![Each configuration's AUC (score) and Spearman ρ" in markdown
    summary = pd.read_csv(out / "summary.csv")
    assert sorted(summary["ceiling.upper_auc_score"].tolist(), key=math.isnan)[0] == 0.82
    assert summary["vs_ceiling.upper"].isna().sum() == 1  # the run without a ceiling: empty, not 0


def test_report_of_an_old_mlflow_run_shows_its_share_labelled(store: Store, tmp_path: Path) -> None:
    exp = "old ceiling"
    log_job(store, exp, ["decision.epsilon=0.1"], metrics={**METRICS, **SCORE, **old_metrics()})
    out = make_report(store.uri, experiments=[exp], out=tmp_path / "report", log=False)
    markdown = (out / "report.md").read_text(encoding="utf-8")
    header = next(line for line in markdown.splitlines() if line.startswith("| model"))
    assert "| AUC (score) lower bound | AUC (score) share of ceiling (old run) |" in header
    assert "| 0.650 [0.560, 0.750] | 53.3% [-50.0%, 120.0%] |" in markdown
    assert "share of it 53.3% [−50.0%, 120.0%]" in markdown.replace("\n", " ")  # the lead's line on the best
    summary = pd.read_csv(out / "summary.csv")
    assert summary["share.auc_score"].tolist() == [0.533]
