"""The sweep summary's ceiling figures: each job's AUC (score) minus the humans' upper bound with
its paired interval over programs, as the job logged it, in ``sweep_summary.csv`` (the terminal
table names it); a job logged before the bounds keeps its share of ceiling there."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd

from mcu_exp.evaluation.versus_always import f1_minus_always
from mcu_exp.report.sweep_summary import display_frame, render, summary_frame
from support.ceiling_keys import bounds_metrics, old_metrics

HEADER = "AUC − upper bound"


def _run(job: str) -> SimpleNamespace:
    """An MLflow run as the summary reads it (info, tags; its metrics come from ``metrics.json``)."""
    info = SimpleNamespace(run_id=f"r{job}", run_name=f"config {job}", status="FINISHED")
    return SimpleNamespace(info=info, data=SimpleNamespace(tags={"mcu.job_num": job}, metrics={}, params={}))


def _metrics(f1_low: float, **ceiling: float) -> dict[str, float]:
    found = {"f1": 0.7, "f1_ci_low": f1_low, "f1_ci_high": 0.8, "baseline_always_f1": 0.6, "auc_score": 0.58}
    found |= {"auc_score_ci_low": 0.42, "auc_score_ci_high": 0.74, **ceiling}
    return found | f1_minus_always(found)


def test_each_job_shows_its_auc_minus_the_upper_bound() -> None:
    found = {"r0": _metrics(0.65, **bounds_metrics()), "r1": _metrics(0.55)}
    frame = summary_frame([_run("0"), _run("1")], found)
    assert frame["vs_ceiling.upper"].iloc[0] == found["r0"]["vs_ceiling.upper"]
    assert frame["vs_ceiling.upper_ci_high"].iloc[0] == -0.11 and frame["vs_ceiling.upper_p_below"].iloc[0] == 1.0
    assert frame["ceiling.upper_auc_score"].iloc[0] == 0.82
    assert not any(c.startswith("share.") for c in frame.columns)  # no job logged one: no column
    assert HEADER not in display_frame(frame)  # the terminal table stays within 100 columns
    legend = " ".join(render(frame, "s").split())  # the legend under the table, however it wraps
    assert "AUC (score) − the humans' upper bound, is in sweep_summary.csv" in legend


def test_an_old_jobs_share_of_ceiling_is_shown_labelled() -> None:
    found = {"r0": _metrics(0.65, **bounds_metrics()), "r1": _metrics(0.55, **old_metrics())}
    frame = summary_frame([_run("0"), _run("1")], found)
    assert frame["share.auc_score"].tolist()[1] == 0.533 and pd.isna(frame["share.auc_score"].tolist()[0])
    assert frame.columns[-2:].tolist() == ["beats_always", "verdict"]  # the old columns before the verdict
    legend = " ".join(render(frame, "s").split())
    assert "A job logged before the bounds keeps its share of ceiling" in legend
