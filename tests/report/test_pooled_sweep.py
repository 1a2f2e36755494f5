"""The end of a sweep over datasets: each configuration's datasets pooled (random effects on
Fisher's z), printed with its sentence, and logged on the parent run with a forest plot."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from mcu_exp.evaluation.pooling import pool_correlations, pool_disattenuated
from mcu_exp.report.pooled import dataset_groups
from mcu_exp.report.pooled_sweep import analyse_pooled_sweep
from mcu_exp.tracking.artifacts import RunArtifacts

FIGURES = {  # dataset → (ρ, n, reliability)
    "scalabrino": (0.243, 50, 0.509),
    "stakelab": (0.15, 49, 0.40),
    "atoms": (0.35, 126, 0.80),
}


def sweep(tmp_path: Path, configs: tuple[str, ...] = ("p1",)):  # -> (client, parent id, children, metrics)
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    experiment = client.create_experiment("mcu_exp", artifact_location=str(tmp_path / "artifacts"))
    parent = client.create_run(experiment).info.run_id
    metrics = {}
    for proxy in configs:
        for name, (rho, n, reliability) in FIGURES.items():
            run = client.create_run(experiment, tags={"mlflow.parentRunId": parent})
            rid = run.info.run_id
            for key, value in {
                "dataset.name": name,
                "dataset.root": f"/data/{name}",
                "model.name": "smollm2-135m",
                "proxy.name": proxy,
                "result.n": str(n),
            }.items():
                client.log_param(rid, key, value)
            client.set_terminated(rid)
            shift = 0.1 if proxy == "p2" else 0.0
            metrics[rid] = {
                "spearman": rho + shift,
                "spearman_ci_low": rho - 0.2,
                "spearman_ci_high": rho + 0.2,
                "n": float(n),
                "auc_score": 0.6,
                "ceiling.reliability": reliability,
                "ceiling.spearman": math.sqrt(reliability),
            }
    children = [client.get_run(rid) for rid in metrics]
    return client, parent, children, metrics


def test_a_sweep_over_three_datasets_is_pooled_and_logged(tmp_path: Path) -> None:
    client, parent, children, metrics = sweep(tmp_path)
    text = analyse_pooled_sweep(client, parent, children, metrics)
    expected = pool_correlations([(k, rho, n) for k, (rho, n, _) in FIGURES.items()])
    disattenuated = pool_disattenuated([(k, rho, n, r) for k, (rho, n, r) in FIGURES.items()])
    logged = client.get_run(parent).data.metrics
    assert logged["pooled.rho"] == pytest.approx(expected.rho, abs=1e-12)
    assert logged["pooled.tau2"] == pytest.approx(expected.tau2, abs=1e-12)
    assert logged["pooled.k"] == 3 and logged["pooled.disattenuated"] == pytest.approx(disattenuated.rho, abs=1e-12)
    assert "Pooled over 3 datasets, smollm2-135m · p1's Spearman ρ" in " ".join(text.split())
    assert f"{expected.rho:.3f} [{expected.ci_low:.3f}, {expected.ci_high:.3f}]" in text
    assert max(len(line) for line in text.splitlines()) <= 100  # fits the sweep's 100-column summary
    assert all(name in text for name in FIGURES)
    files = RunArtifacts(client, parent, client.get_run(parent).info.artifact_uri).list("pooled/0")
    assert {"pooled/0/pooled.csv", "pooled/0/forest.png", "pooled/0/pooled_disattenuated.csv"} <= files


def test_configurations_pool_apart_and_an_undefined_rho_is_named(tmp_path: Path) -> None:
    client, parent, children, metrics = sweep(tmp_path, ("p1", "p2"))
    assert sorted(len(g) for g in dataset_groups(children)) == [3, 3]
    first = next(rid for rid in metrics if client.get_run(rid).data.params["dataset.name"] == "atoms")
    metrics[first]["spearman"] = math.nan
    text = analyse_pooled_sweep(client, parent, children, metrics)
    logged = client.get_run(parent).data.metrics
    assert {"pooled.0.rho", "pooled.1.rho"} <= set(logged) and "pooled.rho" not in logged
    assert "left out of the pool: atoms:" in text
    assert logged["pooled.0.k"] + logged["pooled.1.k"] == 5


def test_a_sweep_on_one_dataset_pools_nothing(tmp_path: Path) -> None:
    client, parent, children, metrics = sweep(tmp_path)
    one = [r for r in children if r.data.params["dataset.name"] == "scalabrino"]
    assert analyse_pooled_sweep(client, parent, one, metrics) == ""
