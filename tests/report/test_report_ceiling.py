"""The humans' noise ceiling in `mcu-exp report`: the ceiling and share-of-ceiling columns of the
main and per-group tables, the ceiling figure, and a report of real MLflow runs that logged the
`ceiling.*` / `share.*` keys (and runs that did not: "—", never 0)."""

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
from support.mlflow_runs import METRICS, Store, log_job

NAN = float("nan")
SCORE = {
    "auc_score": 0.58,
    "auc_score_ci_low": 0.42,
    "auc_score_ci_high": 0.74,
    "spearman": 0.21,
    "spearman_ci_low": -0.07,
    "spearman_ci_high": 0.46,
}


def ceiling_metrics(prefix: str = "", auc: float = 0.65, rho: float = 0.8) -> dict[str, float]:
    """The keys a job with a reliability estimate logs for one label set (the issue's contract)."""
    return {
        f"{prefix}{k}": v
        for k, v in {
            "ceiling.auc_score": auc,
            "ceiling.auc_score_ci_low": auc - 0.09,
            "ceiling.auc_score_ci_high": auc + 0.1,
            "ceiling.f1": 0.7,
            "ceiling.f1_ci_low": 0.6,
            "ceiling.f1_ci_high": 0.8,
            "ceiling.spearman": rho,
            "ceiling.spearman_ci_low": rho - 0.1,
            "ceiling.spearman_ci_high": rho + 0.05,
            "ceiling.split_half_rho": 0.47,
            "ceiling.reliability": rho**2,
            "ceiling.krippendorff_alpha": 0.12,
            "ceiling.programs": 50.0,
            "ceiling.programs_left_out": 0.0,
            "share.auc_score": 0.533,
            "share.auc_score_ci_low": -0.5,
            "share.auc_score_ci_high": 1.2,
            "share.spearman": 0.2625,
            "share.spearman_ci_low": -0.09,
            "share.spearman_ci_high": 0.6,
        }.items()
    }


def undefined_ceiling(prefix: str = "") -> dict[str, float]:
    """A label set with fewer than 10 splittable programs: every ceiling and share NaN."""
    return {k: NAN for k in ceiling_metrics(prefix) if not k.endswith(("programs", "programs_left_out"))}


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
                **ceiling_metrics("group.professional.", auc=0.7),
            ),
            record("b", "gpt-4o", 0.1, 0.72, start=2, **SCORE),  # a run from before the ceiling existed
            record(
                "c",
                "gpt-4",
                0.1,
                0.66,
                start=3,
                **SCORE,
                **undefined_ceiling(),
                **undefined_ceiling("group.professional."),
            ),
        ]
    )


def test_main_table_puts_the_ceiling_and_the_share_beside_each_metric() -> None:
    frame = ceiling_frame()
    keys = tables.varying_keys(frame)
    summary = tables.summary_table(frame, keys)
    shown = tables.display_table(summary, keys)
    columns = list(shown.columns)
    at = columns.index("AUC (score)")
    assert columns[at + 1 : at + 3] == ["AUC (score) ceiling", "AUC (score) share of ceiling"]
    at = columns.index("Spearman ρ (score, correctness)")
    assert columns[at + 1 : at + 3] == ["ρ ceiling", "ρ share of ceiling"]
    assert columns[columns.index("F1 random") + 1] == "F1 ceiling"  # after F1 and its baselines
    assert shown["AUC (score) ceiling"].tolist() == ["0.650 [0.560, 0.750]", "—", UNDEFINED]
    assert shown["AUC (score) share of ceiling"].tolist() == ["53.3% [-50.0%, 120.0%]", "—", UNDEFINED]
    assert shown["ρ ceiling"].tolist() == ["0.800 [0.700, 0.850]", "—", UNDEFINED]
    assert shown["ρ share of ceiling"].tolist()[0] == "26.2% [-9.0%, 60.0%]"
    assert shown["F1 ceiling"].tolist() == ["70.0% [60.0%, 80.0%]", "—", UNDEFINED]
    csv = tables.csv_table(summary)
    assert csv["ceiling.auc_score"].tolist()[0] == 0.65 and csv["ceiling.auc_score"].tolist()[2] == "NaN"
    assert pd.isna(csv["ceiling.auc_score"].tolist()[1])  # never logged: an empty cell, not 0


def test_runs_without_a_ceiling_get_no_ceiling_columns() -> None:
    frame = tables.runs_frame([record("a", "m", 0.1, 0.7, 1, **SCORE), record("b", "n", 0.1, 0.7, 2, **SCORE)])
    keys = tables.varying_keys(frame)
    summary = tables.summary_table(frame, keys)
    assert not any("ceiling" in c for c in tables.display_table(summary, keys).columns)
    assert not any(c.startswith(("ceiling.", "share.")) for c in summary.columns)
    shown = tables.display_subgroups(tables.subgroup_table(frame, keys), keys)
    assert not any("ceiling" in c for c in shown.columns)


def test_each_reader_group_is_read_against_its_own_ceiling() -> None:
    frame = ceiling_frame()
    keys = tables.varying_keys(frame)
    sub = tables.subgroup_table(frame, keys)
    assert tables.subgroups(frame) == ["professional"]  # group.professional.ceiling.f1 names no group
    assert sorted(set(sub["group"])) == ["all", "professional"]
    shown = tables.display_subgroups(sub, keys)
    assert shown["AUC ceiling professional"].tolist() == ["0.700 [0.610, 0.800]", "—", UNDEFINED]
    assert shown["AUC ceiling all"].tolist() == ["0.650 [0.560, 0.750]", "—", UNDEFINED]
    assert shown["share professional"].tolist() == ["53.3% [-50.0%, 120.0%]", "—", UNDEFINED]
    columns = list(shown.columns)
    assert columns[columns.index("AUC professional") + 1 :][:2] == ["AUC ceiling professional", "share professional"]


def test_ceiling_figure_draws_a_band_per_configuration_that_logged_one() -> None:
    frame = ceiling_frame()
    keys = tables.varying_keys(frame)
    rows = tables.latest_per_config(frame, keys)
    fig = plot_ceiling(rows, keys)
    auc, rho = fig.axes
    assert "half-panel" in auc.get_title() and "extrapolated to the full panel" in rho.get_title()
    bands = [c for c in auc.collections if isinstance(c, PolyCollection)]
    assert len(bands) == 1  # only the run with a finite ceiling
    (low, high) = sorted({round(float(y), 6) for y in bands[0].get_paths()[0].vertices[:, 1]})
    assert (low, high) == (0.56, 0.75)
    ticks = [t.get_text() for t in auc.get_xticklabels()]
    assert ticks[0] == "qwen3-14b\np1" and ticks[1].endswith("(no ceiling logged)")
    assert ticks[2].endswith("(ceiling undefined)")
    legend = [t.get_text() for t in rho.get_legend().get_texts()]
    assert "human ceiling: interval over splits" in legend and "chance (0)" in legend
    empty_thr = pd.DataFrame(columns=["threshold", "f1", "auc_binary", "run_id"])
    empty_eps = pd.DataFrame(columns=["epsilon", "nominal", "coverage", "run_id"])
    pngs = figures.report_figures(rows, keys, empty_thr, empty_eps, tables.subgroup_table(frame, keys))
    assert pngs["ceiling.png"].startswith(b"\x89PNG")
    assert not ceiling.figure_rows(rows[rows.index == "b"])  # no ceiling logged: no figure
    assert not ceiling.figure_rows(rows[rows.index == "c"])  # an undefined one: nothing to draw


def test_report_of_mlflow_runs_shows_their_ceilings(store: Store, tmp_path: Path) -> None:
    exp = "ceiling"
    log_job(store, exp, ["decision.epsilon=0.1"], metrics={**METRICS, **SCORE, **ceiling_metrics()})
    log_job(store, exp, ["decision.epsilon=0.2"], metrics={**METRICS, **SCORE})
    out = make_report(store.uri, experiments=[exp], out=tmp_path / "report", log=False)
    markdown = (out / "report.md").read_text(encoding="utf-8")
    header = next(line for line in markdown.splitlines() if line.startswith("| model"))
    assert "| AUC (score) ceiling | AUC (score) share of ceiling |" in header
    assert "| 0.650 [0.560, 0.750] | 53.3% [-50.0%, 120.0%] |" in markdown
    assert "Ceilings: the humans' own alignment" in markdown and "half-panel" in markdown
    assert (out / "figures" / "ceiling.png").read_bytes().startswith(b"\x89PNG")
    assert "![Each configuration's AUC (score) and Spearman ρ" in markdown
    summary = pd.read_csv(out / "summary.csv")
    assert sorted(summary["ceiling.auc_score"].tolist(), key=math.isnan)[0] == 0.65
    assert summary["ceiling.auc_score"].isna().sum() == 1  # the run without a ceiling: empty, not 0
