"""``mcu_exp.load_run``: a finished job's per-program table, metrics and config in a notebook,
read from the local SQLite store a real job wrote, with no server (where MLflow's own client
cannot list the run's artifacts)."""

from __future__ import annotations

from pathlib import Path

import pytest
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

import mcu_exp
from mcu_exp.pipeline import run_job
from support.compose import compose
from support.mlflow_store import seed_store
from support.standin_proxy import TARGET

pytestmark = pytest.mark.slow  # a whole (decision-only) job


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """A local store holding one finished stand-in job: its URI and the run id."""
    outputs = seed_store(tmp_path_factory.mktemp("notebook") / "outputs")
    cfg = compose(
        TARGET,
        "quiet=true",
        "evaluation.plots=false",
        f"paths.outputs={outputs}",
        "evaluation.bootstrap_resamples=1000",
        "decision.epsilon=0.2",
    )
    run_job(cfg)
    uri = f"sqlite:///{outputs / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("mcu_exp")
    assert experiment is not None
    (run,) = client.search_runs([experiment.experiment_id])
    return uri, run.info.run_id


def test_load_run_reads_a_local_store_without_a_server(store: tuple[str, str]) -> None:
    uri, run_id = store
    with pytest.raises(MlflowException, match="mlflow-artifacts"):  # what a notebook user hit
        MlflowClient(tracking_uri=uri).list_artifacts(run_id)
    run = mcu_exp.load_run(run_id, tracking_uri=uri)
    assert run.run_id == run_id and run.status == "FINISHED" and run.experiment == "mcu_exp"
    assert run.per_program.index.name == "program_id" and len(run.per_program) == 50
    assert {"human_label", "score", "label"} <= set(run.per_program.columns)
    assert run.metrics["f1"] == MlflowClient(tracking_uri=uri).get_run(run_id).data.metrics["f1"]
    assert "group.phd.precision_ci_low" in run.metrics  # every metric, not only MLflow's headline
    assert run.metrics["f1_minus_always"] == pytest.approx(run.metrics["f1"] - run.metrics["baseline_always_f1"])
    assert run.config["decision"]["epsilon"] == 0.2 and run.params["decision.epsilon"] == "0.2"


def test_load_run_finds_the_store_from_the_environment(store: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    uri, run_id = store
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    assert mcu_exp.load_run(run_id).name.endswith("p1 · ε=0.2")


def test_an_unknown_run_is_one_line(store: tuple[str, str], tmp_path: Path) -> None:
    uri, _ = store
    with pytest.raises(mcu_exp.RunNotFound, match="^run 'nope' in sqlite") as raised:
        mcu_exp.load_run("nope", tracking_uri=uri)
    assert "\n" not in str(raised.value)
    with pytest.raises(mcu_exp.RunNotFound, match="no MLflow store"):
        mcu_exp.load_run("abc", tracking_uri=f"sqlite:///{tmp_path / 'none.db'}")
