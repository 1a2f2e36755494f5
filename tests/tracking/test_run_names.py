"""Run names tell configurations apart: what varies first, every result-changing override in
a short form, and never two runs of one experiment with the same name."""

from __future__ import annotations

from pathlib import Path

from mlflow.tracking import MlflowClient

from mcu_exp.tracking.naming import run_name
from support.mlflow_runs import Store, compose_job, log_job
from support.mlflow_store import seed_store


def name_of(*overrides: str, varying: tuple[str, ...] = ()) -> str:
    _, cfg = compose_job(*overrides)
    return run_name(cfg, overrides=list(overrides), varying=varying)


def test_result_changing_overrides_come_first_in_short_form() -> None:
    assert name_of() == "smollm2-135m · p1 · ε=0.1"
    assert name_of("scorer=rougel") == "rougel · smollm2-135m · p1 · ε=0.1"
    assert name_of("proxy.sample_seed=7") == "seed7 · smollm2-135m · p1 · ε=0.1"
    assert name_of("model.model_id=Qwen/Qwen2.5-0.5B") == "Qwen2.5-0.5B · smollm2-135m · p1 · ε=0.1"
    assert name_of("debug=quick", "quiet=true", "tracking.experiment=x") == "[debug] smollm2-135m · p1 · ε=0.1"
    assert name_of("model.name=gpt-4o-mini") == "gpt-4o-mini · p1 · ε=0.1"  # shown once, in its place


def test_a_sweep_names_what_it_varies_before_model_and_proxy() -> None:
    overrides = ("decision.epsilon=0.05", "labels.group=professional", "scorer=rougel")
    assert (
        name_of(*overrides, varying=("decision.epsilon", "labels.group"))
        == "ε=0.05 · group=professional · rougel · smollm2-135m · p1"
    )
    assert name_of("proxy=p0", "model=gpt-4o", varying=("model",)) == "gpt-4o · p0 · ε=0.1"
    assert name_of("scorer=rougel", "model.name=b", varying=("model.name",)) == "b · rougel · p1 · ε=0.1"


def test_names_are_unique_within_an_experiment(tmp_path: Path) -> None:
    outputs = seed_store(tmp_path / "outputs")
    store = Store(outputs, f"sqlite:///{outputs / 'mlflow.db'}")
    ids = [log_job(store, "names") for _ in range(3)]
    client = MlflowClient(tracking_uri=store.uri)
    assert [client.get_run(i).info.run_name for i in ids] == [
        "smollm2-135m · p1 · ε=0.1",
        "smollm2-135m · p1 · ε=0.1 #2",
        "smollm2-135m · p1 · ε=0.1 #3",
    ]
