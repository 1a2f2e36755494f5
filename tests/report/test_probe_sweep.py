"""The end of a probe sweep: each probe job is paired with the probe=none job of the same other
settings, and the paired analysis is logged on the sweep's parent run."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from mcu_exp.evaluation.probe_pairs import paired_analysis
from mcu_exp.report.probe_sweep import analyse_probe_sweep, probe_groups
from mcu_exp.tracking.artifacts import RunArtifacts, experiment_location
from support.mlflow_store import seed_store


def fake(run_id: str, **params: str) -> SimpleNamespace:
    return SimpleNamespace(info=SimpleNamespace(run_id=run_id), data=SimpleNamespace(params=params, tags={}))


def test_groups_pair_each_probe_with_the_control_of_its_other_settings() -> None:
    runs = [
        fake("a", **{"probe.edit": "none", "proxy.name": "p1", "result.n": "50"}),
        fake("b", **{"probe.edit": "strip_comments", "proxy.name": "p1", "result.n": "34"}),
        fake("c", **{"probe.edit": "none", "proxy.name": "p2"}),
        fake("d", **{"probe.edit": "rename_identifiers", "proxy.name": "p2"}),
        fake("e", **{"probe.edit": "rename_identifiers", "proxy.name": "p3"}),  # no control: left out
    ]
    groups = [(c.info.run_id, [p.info.run_id for p in ps]) for c, ps in probe_groups(runs)]
    assert groups == [("a", ["b"]), ("c", ["d"])]


def test_a_probe_sweep_logs_the_paired_analysis_on_its_parent(tmp_path: Path) -> None:
    outputs = seed_store(tmp_path / "outputs")
    client = MlflowClient(tracking_uri=f"sqlite:///{outputs / 'mlflow.db'}")
    experiment = client.create_experiment("sweep", artifact_location=experiment_location("sweep"))
    parent = client.create_run(experiment).info.run_id
    scores = {"none": [0.5, 0.4, 0.3, 0.2, 0.6], "strip_comments": [0.4, 0.45, 0.1, 0.0, 0.5]}
    children = []
    for edit, values in scores.items():
        folder = tmp_path / edit / "results"
        folder.mkdir(parents=True)
        frame = pd.DataFrame({"program_id": list("abcde"), "score": values})
        frame.to_csv(folder / "per_program.csv", index=False)
        run = client.create_run(experiment, tags={"mcu.output_dir": str(folder.parent)})
        for key, value in {"probe.edit": edit, "proxy.name": "p1", "evaluation.bootstrap_resamples": "500"}.items():
            client.log_param(run.info.run_id, key, value)
        client.set_terminated(run.info.run_id)
        children.append(client.get_run(run.info.run_id))
    text = analyse_probe_sweep(client, parent, children)
    assert "p1's score falls after strip_comments in 4 of 5 programs" in text
    expected = paired_analysis(pd.Series(scores["strip_comments"]) - pd.Series(scores["none"]), -1, resamples=500)
    logged = client.get_run(parent).data.metrics
    assert logged["probe.strip_comments.moved"] == expected.moved == 4
    assert logged["probe.strip_comments.median"] == pytest.approx(expected.median)
    assert logged["probe.strip_comments.median_low"] == pytest.approx(expected.median_low)
    artifacts = RunArtifacts(client, parent, client.get_run(parent).info.artifact_uri)
    assert {"probe/strip_comments/probe_pairs.csv", "probe/strip_comments/probe_pairs.png"} <= artifacts.list(
        "probe/strip_comments"
    )
