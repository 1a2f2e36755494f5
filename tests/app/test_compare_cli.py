"""`mcu-exp compare`: two run folders in a subprocess, two MLflow runs of a local store, one-line
errors; the printed numbers are the library's (mcu_exp.evaluation.paired)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from mcu_exp import names
from mcu_exp.cli.compare import main
from mcu_exp.evaluation.paired import Comparison, compare_runs

REPO = Path(__file__).resolve().parents[2]
N = 40


def per_program(seed: int, noise: float, n: int = N, cut: float = 0.5, ids_from: int = 0) -> pd.DataFrame:
    """A run's per_program.csv: the pipeline's columns, the score loosely tied to the humans
    (the human labels depend on the program only, so two runs share them)."""
    human = np.random.default_rng(100).integers(0, 2, n + ids_from)[ids_from:]
    score = np.round(human + np.random.default_rng(seed).normal(0, noise, n), 3)
    return pd.DataFrame(
        {
            names.HUMAN_LABEL: human,
            names.HUMAN_FRACTION: 0.5,
            names.N_EVALUATORS: 3,
            names.SCORE: score,
            names.LABEL: (score > cut).astype(int),
            "extra": "x",
        },
        index=pd.Index([f"prog{i:02d}" for i in range(ids_from, ids_from + n)], name=names.PROGRAM_ID),
    )


def run_folder(root: Path, frame: pd.DataFrame) -> Path:
    (root / names.RESULTS_DIR).mkdir(parents=True)
    frame.to_csv(root / names.RESULTS_DIR / names.PER_PROGRAM_FILE)
    return root


def calibrated_run(root: Path, seed: int, noise: float, epsilon: float) -> tuple[Path, pd.DataFrame]:
    """A calibrated run's folder: per_program.csv labelled α_test ≤ τ (α_test = −score, τ the
    ⌈n(1 − ε)⌉-th smallest α_cal), scores.csv and the config's decision section."""
    frame = per_program(seed, noise)
    alpha_test = -frame[names.SCORE].to_numpy()
    alpha_cal = np.random.default_rng(seed + 50).uniform(-2, 1, N)
    tau = np.sort(alpha_cal)[round(N * (1 - epsilon)) - 1]
    frame[names.LABEL] = (alpha_test <= tau).astype(int)
    run_folder(root, frame)
    pd.DataFrame(
        {names.HUMAN_LABEL: frame[names.HUMAN_LABEL], "alpha_cal": alpha_cal, "alpha_test": alpha_test},
        index=frame.index,
    ).to_csv(root / names.RESULTS_DIR / names.SCORES_FILE)
    (root / names.RESULTS_DIR / names.CONFIG_FILE).write_text(
        f"decision:\n  epsilon: {epsilon}\n  quantile: empirical\n  rule: conformal\n  theta: 0.45\n"
    )
    scores = pd.read_csv(root / names.RESULTS_DIR / names.SCORES_FILE, index_col=names.PROGRAM_ID)
    return root, scores


def expected_lines(cmp: Comparison) -> tuple[str, str, str, str]:
    """The cells the table must show, formatted here independently of the CLI's helpers."""

    def pts(d: Any) -> str:
        return f"{100 * d.value:+.1f} pts [{100 * d.low:+.1f}, {100 * d.high:+.1f}]"

    f1 = (f"{100 * cmp.f1_a:.1f}%", f"{100 * cmp.f1_b:.1f}%", pts(cmp.delta_f1), "│")
    accuracy = (
        f"{100 * cmp.accuracy_a:.1f}%",
        f"{100 * cmp.accuracy_b:.1f}%",
        pts(cmp.delta_accuracy),
        f"b = {cmp.mcnemar.b}, c = {cmp.mcnemar.c}, p = {cmp.mcnemar.p:.3f} (exact binomial)",
    )
    auc = (
        f"{cmp.auc_a:.3f}",
        f"{cmp.auc_b:.3f}",
        f"{cmp.delta_auc.value:+.3f} [{cmp.delta_auc.low:+.3f}, {cmp.delta_auc.high:+.3f}]",
        f"DeLong z = {cmp.delong.z:+.2f}, p = {cmp.delong.p:.3f}",
    )  # type: ignore[union-attr]
    prr = (
        f"{cmp.prr_a:.3f}",
        f"{cmp.prr_b:.3f}",
        f"{cmp.delta_prr.value:+.3f} [{cmp.delta_prr.low:+.3f}, {cmp.delta_prr.high:+.3f}]",
    )
    return " │ ".join(f1), " │ ".join(accuracy), " │ ".join(auc), " │ ".join(prr)


def row_of(printed: str, metric: str) -> str:
    (line,) = [x for x in printed.splitlines() if x.startswith(f"│ {metric} ")]
    return " ".join(line.split())  # one space between cells, whatever the column widths


def squash(cells: str) -> str:
    return " ".join(cells.split())


@pytest.mark.slow
def test_two_run_folders_in_a_subprocess(tmp_path: Path) -> None:
    a = run_folder(tmp_path / "A", per_program(seed=1, noise=0.8))
    b = run_folder(tmp_path / "B", per_program(seed=2, noise=1.6, n=N + 5))  # 5 programs A lacks
    res = subprocess.run(
        [sys.executable, "-m", "mcu_exp", "compare", str(a), str(b), "--seed", "3", "--out", str(tmp_path / "out")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "MCU_EXP_OUTPUTS": str(tmp_path / "outputs")},
    )
    assert res.returncode == 0, res.stderr
    frames = [pd.read_csv(d / "results" / "per_program.csv", index_col="program_id") for d in (a, b)]
    cmp = compare_runs(*frames, resamples=2000, seed=3)
    f1, accuracy, auc, prr = expected_lines(cmp)
    assert squash(f1) in row_of(res.stdout, "F1")
    assert squash(accuracy) in row_of(res.stdout, "McNemar (accuracy)")
    assert squash(auc) in row_of(res.stdout, "AUC (score)")
    assert squash(prr) in row_of(res.stdout, "PRR")
    assert (
        f"n = {N} shared programs ({cmp.n_pos} understood, {N - cmp.n_pos} not); left out: 0 scored only "
        "by A, 5 only by B." in res.stdout
    )
    assert "2000 paired bootstrap resamples" in res.stdout and "seed 3" in res.stdout
    saved = pd.read_csv(tmp_path / "out" / "comparison.csv").iloc[0]
    for key, value in cmp.row().items():
        assert saved[key] == (pytest.approx(value, rel=1e-12, nan_ok=True) if isinstance(value, float) else value)
    curves = pd.read_csv(tmp_path / "out" / "rejection.csv")
    assert sorted(set(curves["run"])) == ["A", "B"] and len(curves) == 2 * N


def test_two_mlflow_runs_of_a_local_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from mlflow.tracking import MlflowClient

    from mcu_exp.tracking.artifacts import RunArtifacts, experiment_location
    from support.mlflow_store import seed_store

    uri = f"sqlite:///{seed_store(tmp_path / 'outputs') / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    exp = client.create_experiment("mcu_exp", artifact_location=experiment_location("mcu_exp"))
    ids, frames = [], []
    for name, seed, noise in (("p1 run", 4, 0.7), ("p3 run", 5, 1.2)):
        if name == "p1 run":  # calibrated: scores.csv among its artifacts, its decision in its params
            _, scores = calibrated_run(tmp_path / name, seed, noise, epsilon=0.2)
            (tmp_path / name / names.RESULTS_DIR / names.CONFIG_FILE).unlink()
            frame = pd.read_csv(
                tmp_path / name / names.RESULTS_DIR / names.PER_PROGRAM_FILE, index_col=names.PROGRAM_ID
            )
        else:
            frame = per_program(seed, noise)
            run_folder(tmp_path / name, frame)
        run = client.create_run(exp, run_name=name, tags={"mcu.sweep": "s1", "mcu.job_num": str(len(ids))})
        if name == "p1 run":
            for key, value in (("rule", "conformal"), ("epsilon", "0.2"), ("quantile", "empirical"), ("theta", "0.45")):
                client.log_param(run.info.run_id, f"decision.{key}", value)
        folder = tmp_path / name / names.RESULTS_DIR
        RunArtifacts(client, run.info.run_id, run.info.artifact_uri).put_folder(folder)  # as a job logs results/
        client.set_terminated(run.info.run_id)
        ids.append(run.info.run_id)
        frames.append(frame)

    main([*ids, "--tracking-uri", uri, "--resamples", "1000", "--seed", "9"])
    printed = capsys.readouterr().out
    # The run ids a sweep summary prints (their first 8 characters), and the sweep's job numbers.
    main([ids[0][:8], ids[1][:8], "--tracking-uri", uri, "--resamples", "1000", "--seed", "9"])
    assert capsys.readouterr().out == printed
    main(["0", "1", "--sweep", "s1", "--tracking-uri", uri, "--resamples", "1000", "--seed", "9"])
    assert capsys.readouterr().out == printed
    missing = fails(["0", "7", "--sweep", "s1", "--tracking-uri", uri], capsys)
    assert "unknown run '7': no job 7 in sweep 's1' in sqlite:///" in missing
    from mcu_exp.config import DecisionConfig
    from mcu_exp.evaluation.paired_recalibration import RunCalibration

    calibration = RunCalibration(scores, DecisionConfig(epsilon=0.2, quantile="empirical"))
    cmp = compare_runs(*frames, resamples=1000, seed=9, calibration_a=calibration)
    assert row_of(printed, "labels in the CIs") == "│ labels in the CIs │ recalibrated │ labels fixed │ │ │"
    f1, accuracy, auc, _ = expected_lines(cmp)
    assert "A = p1 run, B = p3 run" in printed and f"A: MLflow run {ids[0]} (p1 run)" in printed
    assert squash(f1) in row_of(printed, "F1") and squash(auc) in row_of(printed, "AUC (score)")
    assert squash(accuracy) in row_of(printed, "McNemar (accuracy)")


def test_calibrated_runs_are_recalibrated_in_the_resamples(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A run folder with scores.csv and its config is recalibrated on each resample (its ΔF1
    interval is compare_runs' with its calibration); one without keeps its labels fixed and
    the table says so; the caption calls the intervals unadjusted and counts the family."""
    from mcu_exp.config import DecisionConfig
    from mcu_exp.evaluation.paired_recalibration import RunCalibration

    a, scores = calibrated_run(tmp_path / "A", seed=1, noise=0.8, epsilon=0.2)
    b = run_folder(tmp_path / "B", per_program(seed=2, noise=1.2))
    main([str(a), str(b), "--resamples", "1000", "--seed", "5"])
    printed = capsys.readouterr().out
    frames = [pd.read_csv(d / "results" / "per_program.csv", index_col="program_id") for d in (a, b)]
    calibration = RunCalibration(scores, DecisionConfig(epsilon=0.2, quantile="empirical"))
    cmp = compare_runs(*frames, resamples=1000, seed=5, calibration_a=calibration)
    fixed = compare_runs(*frames, resamples=1000, seed=5)
    assert (cmp.delta_f1.low, cmp.delta_f1.high) != (fixed.delta_f1.low, fixed.delta_f1.high)
    f1, accuracy, _, prr = expected_lines(cmp)
    assert squash(f1) in row_of(printed, "F1") and squash(prr) in row_of(printed, "PRR")
    assert squash(accuracy) in row_of(printed, "McNemar (accuracy)") and "McNemar" not in row_of(printed, "F1")
    assert row_of(printed, "labels in the CIs") == "│ labels in the CIs │ recalibrated │ labels fixed │ │ │"
    assert "A recalibrated (conformal, ε = 0.2, empirical quantile): τ recomputed from alpha_cal" in printed
    assert "B labels fixed (no scores.csv (a proxy without calibration scores, P0/P3, or an older run))" in printed
    assert "unadjusted for multiplicity: the table is a family of 4 intervals" in printed


def fails(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("mcu-exp compare: error: ") and err.count("\n") == 1, err
    return err


def test_one_line_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from support.mlflow_store import seed_store

    a = run_folder(tmp_path / "A", per_program(seed=1, noise=1.0))
    uri = f"sqlite:///{seed_store(tmp_path / 'outputs') / 'mlflow.db'}"
    capsys.readouterr()  # MLflow's own lines while seeding (its first import in this process logs to the capture)
    assert "unknown run 'abc123'" in fails([str(a), "abc123", "--tracking-uri", uri], capsys)
    assert "no MLflow store at" in fails([str(a), "abc123", "--tracking-uri", f"sqlite:///{tmp_path}/none.db"], capsys)
    (tmp_path / "empty").mkdir()
    assert "no per_program.csv in run folder" in fails([str(a), str(tmp_path / "empty")], capsys)
    elsewhere = run_folder(tmp_path / "C", per_program(seed=2, noise=1.0, ids_from=N))
    assert "share no scored program" in fails([str(a), str(elsewhere)], capsys)
    flipped = per_program(seed=2, noise=1.0)
    flipped.iloc[3, flipped.columns.get_loc(names.HUMAN_LABEL)] ^= 1
    other = run_folder(tmp_path / "D", flipped)
    err = fails([str(a), str(other)], capsys)
    assert "human labels of runs A and B differ on 1 of 40 shared programs (prog03:" in err
    assert "--resamples must be at least 1000" in fails([str(a), str(a), "--resamples", "10"], capsys)


def test_the_command_module_stays_light() -> None:
    code = (
        "import sys, mcu_exp.cli.compare; "
        "print([m for m in ('pandas', 'scipy', 'mlflow', 'numpy', 'rich') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stderr


def test_the_parameters_that_differ_are_printed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Folders: their config.yaml; MLflow runs: their params. Settings that cannot change
    results (where a job wrote, quiet) are not differences."""
    from mlflow.tracking import MlflowClient

    from mcu_exp.tracking.artifacts import RunArtifacts, experiment_location
    from support.mlflow_store import seed_store

    config = "scorer:\n  name: {scorer}\ndecision:\n  epsilon: {eps}\npaths:\n  outputs: {out}\nquiet: {quiet}\n"
    a, b = (run_folder(tmp_path / side, per_program(seed=1, noise=1.0)) for side in ("A", "B"))
    for folder, scorer, eps, quiet in ((a, "minilm", 0.1, "true"), (b, "rougel", 0.1, "false")):
        text = config.format(scorer=scorer, eps=eps, out=folder, quiet=quiet)
        (folder / names.RESULTS_DIR / names.CONFIG_FILE).write_text(text)
    main([str(a), str(b), "--resamples", "1000"])
    printed = capsys.readouterr().out
    assert "Parameters that differ (1), A → B:\n  scorer.name: minilm → rougel\n" in printed

    uri = f"sqlite:///{seed_store(tmp_path / 'outputs') / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    exp = client.create_experiment("mcu_exp", artifact_location=experiment_location("mcu_exp"))
    ids = []
    for folder, seed in ((a, "0"), (b, "7")):
        run = client.create_run(exp, run_name=folder.name)
        for key, value in (("proxy.sample_seed", seed), ("decision.epsilon", "0.1"), ("tracking.uri", str(folder))):
            client.log_param(run.info.run_id, key, value)
        RunArtifacts(client, run.info.run_id, run.info.artifact_uri).put_folder(folder / names.RESULTS_DIR)
        ids.append(run.info.run_id)
    main([*ids, "--tracking-uri", uri, "--resamples", "1000"])
    assert "Parameters that differ (1), A → B:\n  proxy.sample_seed: 0 → 7\n" in capsys.readouterr().out
    main([ids[0], ids[0], "--tracking-uri", uri, "--resamples", "1000"])
    assert "Parameters: A and B share every setting that changes results." in capsys.readouterr().out
