"""Debug and smoke runs (debug=quick, any dataset.limit) never mix with real ones: their own
experiment, a visible name prefix, a tag, and reports that skip them. Real MLflow."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from mcu_exp.cli.report import main
from mcu_exp.names import TAG_DEBUG
from mcu_exp.report.build import ReportError, make_report
from support.md_tables import section
from support.mlflow_runs import Store, log_job

pytestmark = pytest.mark.slow  # whole jobs, stores or encoders: scheduled first under xdist


def where(store: Store, run_id: str) -> tuple[str, str, str]:
    """(experiment name, run name, mcu.debug tag) of a logged run."""
    client = MlflowClient(tracking_uri=store.uri)
    run = client.get_run(run_id)
    return client.get_experiment(run.info.experiment_id).name, run.info.run_name, run.data.tags.get(TAG_DEBUG)


@pytest.mark.parametrize(
    "overrides",
    [["debug=quick"], ["dataset.limit=3"], ["debug=quick", "tracking.run_name=try"]],
    ids=["debug=quick", "dataset.limit", "own run name"],
)
def test_a_debug_job_logs_to_its_own_experiment_named_and_tagged(store: Store, overrides: list[str]) -> None:
    experiment, name, tag = where(store, log_job(store, "jobs", overrides))
    assert experiment == "jobs-debug"
    assert name.startswith("[debug] ") and (name == "[debug] try") == ("tracking.run_name=try" in overrides)
    assert tag == "true"


def test_a_real_job_stays_in_the_main_experiment(store: Store) -> None:
    assert where(store, log_job(store, "jobs")) == ("jobs", "smollm2-135m · p1 · ε=0.1", "false")


def test_report_skips_debug_runs_and_says_how_many(
    store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    exp = "mixed"
    real = log_job(store, exp)
    tagged = log_job(store, exp, ["decision.epsilon=0.2"])
    MlflowClient(tracking_uri=store.uri).set_tag(tagged, TAG_DEBUG, "true")  # by hand, in the main experiment
    log_job(store, exp, ["debug=quick"])  # goes to mixed-debug
    out = make_report(store.uri, experiments=[exp], out=tmp_path / "main", log=False)
    assert "Skipped 1 debug run (tag mcu.debug=true; --debug compares them)" in capsys.readouterr().out
    assert pd.read_csv(out / "summary.csv")["run_id"].tolist() == [real]
    assert "- **skipped**: 1 debug run" in (out / "report.md").read_text()

    with_debug = make_report(store.uri, experiments=[exp], out=tmp_path / "all", log=False, include_debug=True)
    assert len(pd.read_csv(with_debug / "summary.csv")) == 2

    with pytest.raises(ReportError, match=r"no runs match .*skipped 1 debug run .*--debug"):
        make_report(store.uri, experiments=[f"{exp}-debug"], out=tmp_path / "none", log=False)
    main(
        [
            "--tracking-uri",
            store.uri,
            "--experiment",
            f"{exp}-debug",
            "--debug",
            "--no-log",
            "--out",
            str(tmp_path / "debug"),
        ]
    )
    rows = section((tmp_path / "debug" / "report.md").read_text(), "Alignment with human labels")
    assert "| smollm2-135m | p1 |" in rows and "- **skipped**: —" in (tmp_path / "debug" / "report.md").read_text()
