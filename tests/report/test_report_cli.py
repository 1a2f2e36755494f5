"""`mcu-exp report` on a real stand-in sweep: tables, figures, the HTML page, the report run."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from mcu_exp.cli.report import main
from mcu_exp.names import mlflow_series
from mcu_exp.report.build import ReportError, make_report
from mcu_exp.report.sources import RunFiles
from mcu_exp.tracking.artifacts import RunArtifacts
from mcu_exp.tracking.headline import chart_key
from support.sweeps import Sweep, mcu_exp

PNG = b"\x89PNG\r\n\x1a\n"


def sweep_runs(sweep: Sweep) -> list:
    client = MlflowClient(tracking_uri=sweep.uri)
    exp = client.get_experiment_by_name("mcu_exp")
    return [r for r in client.search_runs([exp.experiment_id]) if r.data.tags.get("mcu.kind") == "job"]  # jobs only


@pytest.mark.slow  # the `sweep` fixture runs a 4-job sweep (in this process)
def test_report_command_writes_tables_figures_and_one_page(sweep: Sweep, tmp_path: Path) -> None:
    out = tmp_path / "report"
    res = mcu_exp("report", "--sweep", sweep.tag, "--out", str(out), outputs=sweep.outputs)
    assert res.returncode == 0, res.stderr[-3000:]
    assert str(out / "report.html") in res.stdout

    summary = pd.read_csv(out / "summary.csv")
    assert sorted(summary["model"]) == ["gpt-4o", "gpt-4o", "qwen3-14b", "qwen3-14b"]
    assert sorted(summary["epsilon"]) == [0.05, 0.05, 0.2, 0.2]
    by_id = {r.info.run_id: r.data.metrics for r in sweep_runs(sweep)}
    for row in summary.itertuples():
        metrics = by_id[row.run_id]
        for name in ("f1", "f1_ci_low", "f1_ci_high", "auc_binary", "baseline_always_f1", "baseline_random_f1"):
            assert getattr(row, name) == pytest.approx(metrics[name])

    markdown = (out / "report.md").read_text()
    table = markdown.split("## Alignment with human labels")[1].split("##")[0]
    rows = [line for line in table.splitlines() if line.startswith("| gpt-4o") or line.startswith("| qwen3")]
    assert len(rows) == 4
    assert "| ε |" in table and "F1 always-1" in table and "vs reference" not in table
    first = summary.iloc[0]
    assert f"{100 * first['f1']:.1f}% [{100 * first['f1_ci_low']:.1f}%, {100 * first['f1_ci_high']:.1f}%]" in markdown

    page = (out / "report.html").read_text()
    images = re.findall(r'<img [^>]*src="data:image/png;base64,([^"]+)"', page)
    assert len(images) == 6  # every job logs the humans' ceiling: the ceiling figure comes last
    for name, data in zip(
        ("f1_threshold", "auc_threshold", "auc_subgroups", "coverage_epsilon", "f1_epsilon", "ceiling"),
        images,
        strict=True,
    ):
        png = base64.b64decode(data)
        assert png.startswith(PNG) and png == (out / "figures" / f"{name}.png").read_bytes()
    assert "http://" not in page and "https://" not in page  # nothing fetched from elsewhere


@pytest.mark.slow  # the `sweep` fixture runs a 4-job sweep (in this process)
def test_report_is_logged_as_a_run_that_later_reports_leave_out(sweep: Sweep, tmp_path: Path) -> None:
    make_report(sweep.uri, sweep=sweep.tag, out=tmp_path / "one")
    second = make_report(sweep.uri, sweep="latest", out=tmp_path / "two")
    client = MlflowClient(tracking_uri=sweep.uri)
    exp = client.get_experiment_by_name("mcu_exp")
    reports = client.search_runs([exp.experiment_id], "tags.`mcu.kind` = 'report'")
    assert len(reports) >= 2
    assert {r.info.run_name for r in reports} == {f"report · {sweep.tag}"}
    assert all(r.info.status == "FINISHED" for r in reports)
    artifacts = RunArtifacts(client, reports[0].info.run_id, reports[0].info.artifact_uri)
    for name in ("report.html", "report.md", "summary.csv", "figures/f1_threshold.png"):
        assert artifacts.get(name, tmp_path / "logged") is not None, name
    assert len(pd.read_csv(second / "runs.csv")) == 4  # the reports themselves are not compared


@pytest.mark.slow  # the `sweep` fixture runs a 4-job sweep (in this process)
def test_filter_selects_runs_and_bad_selections_fail_in_one_line(
    sweep: Sweep, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = make_report(sweep.uri, filter_string="tags.`mcu.model` = 'gpt-4o'", out=tmp_path / "f", log=False)
    summary = pd.read_csv(out / "summary.csv")
    assert set(summary["model"]) == {"gpt-4o"} and len(summary) == 2
    with pytest.raises(ReportError, match="no runs match"):
        make_report(sweep.uri, sweep="no-such-sweep", out=tmp_path / "g", log=False)
    with pytest.raises(ReportError, match=r"no MLflow experiment named 'nope'.*mcu_exp"):
        make_report(sweep.uri, experiments=["nope"], out=tmp_path / "h", log=False)
    # The command's own entry point, in this process (`mcu-exp report` itself runs in the first test).
    monkeypatch.setenv("MCU_EXP_OUTPUTS", str(sweep.outputs))  # the store found as `mcu-exp report` finds it
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    with pytest.raises(SystemExit) as exc:
        main(["--filter", "metrics.f1 >>> 2", "--out", str(tmp_path / "i")])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("mcu-exp report: error: bad run selection") and len(err.strip().splitlines()) == 1


def test_missing_store_is_an_error_not_an_empty_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCU_EXP_OUTPUTS", str(tmp_path / "outputs"))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    with pytest.raises(SystemExit) as exc:
        main([])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "no MLflow store at" in err and str(tmp_path / "outputs" / "mlflow.db") in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "outputs" / "mlflow.db").exists()


@pytest.mark.slow  # the `sweep` fixture runs a 4-job sweep (in this process)
def test_curves_from_the_csv_artifacts_agree_with_the_jobs_metric_series(sweep: Sweep, tmp_path: Path) -> None:
    client = MlflowClient(tracking_uri=sweep.uri)
    run = sweep_runs(sweep)[0]
    files = RunFiles(client, [run], tmp_path)
    for grid, x, column in (("threshold", "threshold", "f1"), ("epsilon", "epsilon", "coverage")):
        curve = files.curves([run.info.run_id], grid)
        assert len(curve) >= 9 and set(curve["run_id"]) == {run.info.run_id}
        key = chart_key(mlflow_series(grid, column), run.data.tags["mcu.scorer"])  # as the job logs it
        series = {m.step: m.value for m in client.get_metric_history(run.info.run_id, key)}
        assert series, f"the job logged no {key}"
        expected: dict[int, float] = {}
        for point, number in zip(curve[x], curve[column], strict=True):
            expected.setdefault(round(float(point) * 1000), float(number))  # step = grid value × 1000
        assert set(series) == set(expected)
        for step, number in series.items():
            assert number == pytest.approx(expected[step], nan_ok=True)
