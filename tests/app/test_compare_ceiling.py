"""`mcu-exp compare` prints both runs' humans' bounds, each run's paired differences to them and
its disattenuated ρ where they logged them (metrics.json, reliability.csv, MLflow metrics), says
when the two runs' ceilings differ, and still reads runs logged before the bounds (their
share of ceiling, labelled as an old run's; an old reliability.csv's unprefixed columns)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from test_compare_cli import per_program, row_of, run_folder

from mcu_exp import names
from mcu_exp.ceiling.versus import ceiling_table
from mcu_exp.cli.compare import main
from support.ceiling_keys import OLD_CEILING, OLD_SHARE, bounds_metrics, undefined_bounds

LABELS = "labels:\n  rule: mean_abu50\n  min_fraction: 0.5\n  group: {group}\n  readers: all\n"


def with_metrics(root: Path, metrics: dict[str, float], group: str = "all") -> Path:
    """A run folder whose results/ holds metrics.json (NaN as null) and config.yaml's labels section."""
    folder = run_folder(root, per_program(seed=1, noise=0.8))
    saved = {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in metrics.items()}
    (folder / names.RESULTS_DIR / names.METRICS_FILE).write_text(json.dumps({"f1": 0.7, **saved}))
    (folder / names.RESULTS_DIR / names.CONFIG_FILE).write_text(LABELS.format(group=group))
    return folder


def with_reliability(root: Path, group: str, table: pd.DataFrame) -> Path:
    """A run folder whose ceiling is only in reliability.csv."""
    folder = run_folder(root, per_program(seed=2, noise=1.2))
    table.to_csv(folder / names.RESULTS_DIR / names.RELIABILITY_FILE, index=False)
    (folder / names.RESULTS_DIR / names.CONFIG_FILE).write_text(LABELS.format(group=group))
    return folder


def old_reliability(auc: float) -> pd.DataFrame:
    """reliability.csv as a run before the bounds wrote it: figures without the prefix, over splits."""
    rows = [
        {"group": "all", "auc_score": auc, "auc_score_ci_low": auc - 0.1, "auc_score_ci_high": auc + 0.1}
        | {"spearman": 0.6, "spearman_ci_low": 0.5, "spearman_ci_high": 0.7, "splits": 1000, "confidence": 0.95},
        {"group": "professional", "auc_score": 0.99, "spearman": 0.99, "splits": 1000, "confidence": 0.95},
    ]
    return pd.DataFrame(rows)


def compare(a: Path, b: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    main([str(a), str(b), "--resamples", "1000", "--seed", "1", *extra])
    return capsys.readouterr().out


def test_both_runs_bounds_and_differences_and_where_they_differ(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = with_metrics(tmp_path / "A", bounds_metrics())
    table = ceiling_table({"all": bounds_metrics(auc=0.61, upper=0.8), "professional": bounds_metrics(auc=0.99)})
    b = with_reliability(tmp_path / "B", "professional", table)  # the job's own reliability.csv
    printed = compare(a, b, capsys, "--out", str(tmp_path / "out"))
    assert row_of(printed, "AUC (score) lower bound").endswith("│ 0.650 [0.560, 0.750] │ 0.610 [0.520, 0.710] │")
    assert row_of(printed, "AUC (score) upper bound").endswith("│ 0.820 [0.760, 0.880] │ 0.800 [0.740, 0.860] │")
    assert row_of(printed, "AUC (score) − lower bound").endswith(
        "│ -0.070 [-0.200, +0.060] │ -0.030 [-0.200, +0.060] │"
    )
    assert row_of(printed, "AUC (score) − upper bound").endswith(
        "│ -0.240 [-0.370, -0.110] │ -0.220 [-0.370, -0.110] │"
    )
    assert row_of(printed, "ρ ceiling").endswith("│ 0.800 [0.700, 0.850] │ 0.800 [0.700, 0.850] │")
    assert row_of(printed, "disattenuated ρ").endswith("│ 0.263 [-0.090, 0.600] │ 0.263 [-0.090, 0.600] │")
    assert "share of ceiling" not in printed and "95 % CI over programs" in printed
    assert (
        "The runs' ceilings differ (lower bound 0.650 [0.560, 0.750] vs 0.610 [0.520, 0.710]; upper bound "
        "0.820 [0.760, 0.880] vs 0.800 [0.740, 0.860]): different label settings (labels.group: all vs professional)"
        in printed
    )
    saved = pd.read_csv(tmp_path / "out" / "comparison.csv").iloc[0]
    assert saved["vs_ceiling.upper_a"] == pytest.approx(0.58 - 0.82) and saved["ceiling.upper_auc_score_b"] == 0.8
    assert saved["vs_ceiling.upper_p_below_a"] == 1.0 and saved["disattenuated.spearman_ci_high_b"] == 0.6
    assert not any(c.startswith("share.") for c in saved.index)


def test_same_ceiling_undefined_and_one_sided(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = with_metrics(tmp_path / "A", bounds_metrics())
    same = with_metrics(tmp_path / "same", bounds_metrics(proxy=0.7))  # another proxy, the same labels
    printed = compare(a, same, capsys)
    assert "Both runs stand against the same ceiling" in printed
    assert row_of(printed, "AUC (score) − upper bound").endswith(
        "│ -0.240 [-0.370, -0.110] │ -0.120 [-0.370, -0.110] │"
    )

    undefined = with_metrics(tmp_path / "U", undefined_bounds())
    printed = compare(a, undefined, capsys)
    assert row_of(printed, "ρ ceiling").endswith("│ undefined │")
    assert row_of(printed, "AUC (score) − lower bound").endswith("│ undefined │")

    bare = run_folder(tmp_path / "bare", per_program(seed=3, noise=1.0))
    printed = compare(a, bare, capsys)
    assert row_of(printed, "AUC (score) lower bound").endswith("│ 0.650 [0.560, 0.750] │ — │")
    assert "Only A logged a ceiling." in printed
    other = run_folder(tmp_path / "other", per_program(seed=4, noise=1.0))
    printed = compare(bare, other, capsys)
    assert "Humans' ceiling" not in printed and "lower bound" not in printed  # neither logged one: as before


def test_old_runs_share_of_ceiling_is_shown_labelled(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = with_metrics(tmp_path / "old", {**OLD_CEILING, **OLD_SHARE})
    file_only = with_reliability(tmp_path / "file", "professional", old_reliability(auc=0.61))
    printed = compare(old, file_only, capsys, "--out", str(tmp_path / "out"))
    assert row_of(printed, "AUC (score) lower bound").endswith("│ 0.650 [0.560, 0.750] │ 0.610 [0.510, 0.710] │")
    assert row_of(printed, "AUC (score) upper bound").endswith("│ — │ — │")
    assert row_of(printed, "AUC (score) share of ceiling (old run)").endswith("│ 53.3% [-50.0%, 120.0%] │ — │")
    assert row_of(printed, "ρ share of ceiling (old run)").endswith("│ 26.2% [-9.0%, 60.0%] │ — │")
    assert "A and B logged their ceiling before the bounds (old run): the half-panel ceiling with its interval " in (
        printed
    )
    saved = pd.read_csv(tmp_path / "out" / "comparison.csv").iloc[0]
    assert saved["share.auc_score_a"] == 0.533 and saved["ceiling.auc_score_b"] == 0.61

    new = with_metrics(tmp_path / "new", bounds_metrics())
    printed = compare(new, old, capsys)
    assert row_of(printed, "AUC (score) share of ceiling (old run)").endswith("│ — │ 53.3% [-50.0%, 120.0%] │")
    assert row_of(printed, "AUC (score) − upper bound").endswith("│ -0.240 [-0.370, -0.110] │ — │")
    assert "B logged its ceiling before the bounds (old run)" in printed
    # the same labels: the same half-panel estimate, its interval over splits not compared with one over programs
    assert "Both runs stand against the same ceiling (the same human label settings)." in printed


def test_mlflow_runs_ceiling_from_their_metrics_and_artifacts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mlflow.tracking import MlflowClient

    from mcu_exp.tracking.artifacts import RunArtifacts, experiment_location
    from mcu_exp.tracking.headline import CEILING as HEADLINE
    from support.mlflow_store import seed_store

    uri = f"sqlite:///{seed_store(tmp_path / 'outputs') / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    exp = client.create_experiment("mcu_exp", artifact_location=experiment_location("mcu_exp"))
    ids = []
    for name, metrics in (
        ("all run", bounds_metrics()),
        ("tested run", {"ceiling.auc_score": 0.7, "share.auc_score": 0.25}),  # an old run: MLflow metrics only
    ):
        folder = run_folder(tmp_path / name, per_program(seed=len(ids) + 5, noise=1.0)) / names.RESULTS_DIR
        run = client.create_run(exp, run_name=name)
        for key, value in (("group", "all"), ("rule", "mean_abu50"), ("min_fraction", "0.5")):
            client.log_param(run.info.run_id, f"labels.{key}", value)
        client.log_param(run.info.run_id, "labels.readers", "tested" if name == "tested run" else "all")
        if name == "all run":  # the headline metrics in MLflow, every figure in metrics.json
            for key in HEADLINE:
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
    assert row_of(printed, "AUC (score) lower bound").endswith("│ 0.650 [0.560, 0.750] │ 0.700 │")
    assert row_of(printed, "disattenuated ρ").endswith("│ 0.263 [-0.090, 0.600] │ — │")  # from metrics.json
    assert row_of(printed, "AUC (score) share of ceiling (old run)").endswith("│ — │ 25.0% │")
    assert "different label settings (labels.readers: all vs tested)" in printed
