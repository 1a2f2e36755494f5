"""`mcu-exp compare` prints both runs' human noise ceiling and share of it where they logged one
(metrics.json, reliability.csv, MLflow metrics), and says when the two runs' ceilings differ."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from test_compare_cli import per_program, row_of, run_folder

from mcu_exp import names
from mcu_exp.cli.compare import main

CEILING = {
    "ceiling.auc_score": 0.65,
    "ceiling.auc_score_ci_low": 0.56,
    "ceiling.auc_score_ci_high": 0.75,
    "ceiling.spearman": 0.8,
    "ceiling.spearman_ci_low": 0.7,
    "ceiling.spearman_ci_high": 0.85,
    "ceiling.f1": 0.7,
    "ceiling.programs": 50.0,
    "ceiling.programs_left_out": 0.0,
}
SHARE = {
    "share.auc_score": 0.533,
    "share.auc_score_ci_low": -0.5,
    "share.auc_score_ci_high": 1.2,
    "share.spearman": 0.2625,
    "share.spearman_ci_low": -0.09,
    "share.spearman_ci_high": 0.6,
}


def with_metrics(root: Path, metrics: dict[str, float | None], group: str = "all") -> Path:
    """A run folder whose results/ holds metrics.json and config.yaml's labels section."""
    folder = run_folder(root, per_program(seed=1, noise=0.8))
    (folder / names.RESULTS_DIR / names.METRICS_FILE).write_text(json.dumps({"f1": 0.7, **metrics}))
    (folder / names.RESULTS_DIR / names.CONFIG_FILE).write_text(
        f"labels:\n  rule: mean_abu50\n  min_fraction: 0.5\n  group: {group}\n  readers: all\n"
    )
    return folder


def with_reliability(root: Path, group: str, auc: float) -> Path:
    """A run folder whose ceiling is only in reliability.csv (figures without the prefix)."""
    folder = run_folder(root, per_program(seed=2, noise=1.2))
    rows = [
        {
            "group": "all",
            "auc_score": auc,
            "auc_score_ci_low": auc - 0.1,
            "auc_score_ci_high": auc + 0.1,
            "spearman": 0.6,
            "spearman_ci_low": 0.5,
            "spearman_ci_high": 0.7,
            "splits": 1000,
            "confidence": 0.95,
        },
        {"group": "professional", "auc_score": 0.99, "spearman": 0.99, "splits": 1000, "confidence": 0.95},
    ]
    pd.DataFrame(rows).to_csv(folder / names.RESULTS_DIR / "reliability.csv", index=False)
    (folder / names.RESULTS_DIR / names.CONFIG_FILE).write_text(
        f"labels:\n  rule: mean_abu50\n  min_fraction: 0.5\n  group: {group}\n  readers: all\n"
    )
    return folder


def compare(a: Path, b: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    main([str(a), str(b), "--resamples", "1000", "--seed", "1", *extra])
    return capsys.readouterr().out


def test_both_runs_ceilings_and_shares_and_their_difference(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = with_metrics(tmp_path / "A", {**CEILING, **SHARE})
    b = with_reliability(tmp_path / "B", "professional", auc=0.61)
    printed = compare(a, b, capsys, "--out", str(tmp_path / "out"))
    assert (
        row_of(printed, "AUC (score) ceiling") == "│ AUC (score) ceiling │ 0.650 [0.560, 0.750] │ "
        "0.610 [0.510, 0.710] │"
    )
    assert (
        row_of(printed, "AUC (score) share of ceiling") == "│ AUC (score) share of ceiling │ "
        "53.3% [-50.0%, 120.0%] │ — │"
    )
    assert row_of(printed, "ρ ceiling") == "│ ρ ceiling │ 0.800 [0.700, 0.850] │ 0.600 [0.500, 0.700] │"
    assert row_of(printed, "ρ share of ceiling") == "│ ρ share of ceiling │ 26.2% [-9.0%, 60.0%] │ — │"
    assert (
        "The runs' ceilings differ (AUC (score) ceiling 0.650 [0.560, 0.750] vs 0.610 [0.510, 0.710]; "
        "ρ ceiling 0.800 [0.700, 0.850] vs 0.600 [0.500, 0.700]): different label settings "
        "(labels.group: all vs professional)" in printed
    )
    saved = pd.read_csv(tmp_path / "out" / "comparison.csv").iloc[0]
    assert saved["share.auc_score_a"] == 0.533 and saved["ceiling.auc_score_b"] == 0.61
    assert "share.auc_score_b" not in saved.index  # B logged no share: no column, never 0


def test_same_ceiling_undefined_and_one_sided(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = with_metrics(tmp_path / "A", {**CEILING, **SHARE})
    same = with_metrics(
        tmp_path / "same",
        {**CEILING, "share.spearman": 0.302, "share.spearman_ci_low": None, "share.spearman_ci_high": None},
    )
    printed = compare(a, same, capsys)
    assert "Both runs stand against the same ceiling" in printed
    # undefined bounds (a ceiling interval reaching 0) are printed, not eaten as rich markup
    assert row_of(printed, "ρ share of ceiling").endswith("│ 30.2% [undefined, undefined] │")

    undefined = with_metrics(tmp_path / "U", dict.fromkeys((*CEILING, *SHARE)))
    printed = compare(a, undefined, capsys)
    assert row_of(printed, "ρ ceiling").endswith("│ undefined │")
    assert row_of(printed, "AUC (score) share of ceiling").endswith("│ undefined │")

    bare = run_folder(tmp_path / "bare", per_program(seed=3, noise=1.0))
    printed = compare(a, bare, capsys)
    assert row_of(printed, "AUC (score) ceiling").endswith("│ 0.650 [0.560, 0.750] │ — │")
    assert "Only A logged a ceiling." in printed
    other = run_folder(tmp_path / "other", per_program(seed=4, noise=1.0))
    printed = compare(bare, other, capsys)
    assert "Ceilings:" not in printed and "share of ceiling" not in printed  # neither logged one: as before


def test_mlflow_runs_ceiling_from_their_metrics_and_artifacts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mlflow.tracking import MlflowClient

    from mcu_exp.tracking.artifacts import RunArtifacts, experiment_location
    from support.mlflow_store import seed_store

    uri = f"sqlite:///{seed_store(tmp_path / 'outputs') / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    exp = client.create_experiment("mcu_exp", artifact_location=experiment_location("mcu_exp"))
    ids = []
    for name, group, metrics in (
        ("all run", "all", {**CEILING, **SHARE}),
        ("tested run", "all", {"ceiling.auc_score": 0.7, "share.auc_score": 0.25}),
    ):
        folder = run_folder(tmp_path / name, per_program(seed=len(ids) + 5, noise=1.0)) / names.RESULTS_DIR
        run = client.create_run(exp, run_name=name)
        for key, value in (
            ("group", group),
            ("rule", "mean_abu50"),
            ("min_fraction", "0.5"),
            ("readers", "tested" if name == "tested run" else "all"),
        ):
            client.log_param(run.info.run_id, f"labels.{key}", value)
        if name == "all run":  # the headline metrics in MLflow, the rest in metrics.json
            for key in ("ceiling.auc_score", "ceiling.auc_score_ci_low", "ceiling.auc_score_ci_high"):
                client.log_metric(run.info.run_id, key, metrics[key])
            (folder / names.METRICS_FILE).write_text(json.dumps(metrics))
        else:
            for key, value in metrics.items():
                client.log_metric(run.info.run_id, key, value)
        RunArtifacts(client, run.info.run_id, run.info.artifact_uri).put_folder(folder)
        client.set_terminated(run.info.run_id)
        ids.append(run.info.run_id)
    main([*ids, "--tracking-uri", uri, "--resamples", "1000", "--seed", "2"])
    printed = capsys.readouterr().out
    assert row_of(printed, "AUC (score) ceiling") == "│ AUC (score) ceiling │ 0.650 [0.560, 0.750] │ 0.700 │"
    assert row_of(printed, "ρ share of ceiling") == "│ ρ share of ceiling │ 26.2% [-9.0%, 60.0%] │ — │"
    assert "different label settings (labels.readers: all vs tested)" in printed
