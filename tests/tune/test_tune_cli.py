"""`mcu-exp tune`: from a per_program.csv or an MLflow run, a table, a CSV, one-line errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mcu_exp.app import config_dir
from mcu_exp.cli.commands import SUBCOMMANDS
from mcu_exp.cli.tune import main, storage_url
from mcu_exp.tune.nested_cv import nested_cv, read_per_program
from support.mlflow_store import seed_store


def write_per_program(path: Path, n: int = 40, seed: int = 0) -> Path:
    """A run's per_program.csv: the pipeline's columns, α loosely tied to the labels."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, n)
    alpha_test = rng.uniform(0.05, 0.4, n) - 0.08 * labels
    table = pd.DataFrame(
        {
            "program_id": [f"prog-{i}" for i in range(n)],
            "human_label": labels,
            "human_fraction": 0.5,
            "n_evaluators": 9,
            "score": -alpha_test,
            "label": 1,
            "alpha_cal": alpha_test + rng.normal(0, 0.02, n),
            "alpha_test": alpha_test,
        }
    )
    table.to_csv(path, index=False)
    return path


def test_command_prints_both_searches_and_writes_the_same_numbers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command as ``mcu-exp tune …`` dispatches it (the app's subcommand table), in this
    process; it returns (exit 0)."""
    csv = write_per_program(tmp_path / "per_program.csv")
    out = tmp_path / "tune.csv"
    monkeypatch.setenv("MCU_EXP_OUTPUTS", str(tmp_path / "outputs"))
    args = ["--per-program", str(csv), "--trials", "12", "--folds", "3", "--seed", "4", "--out", str(out)]
    SUBCOMMANDS["tune"](args, config_dir())
    res = capsys.readouterr()
    assert "in-sample F1" in res.out and "held-out F1" in res.out and "3 stratified outer folds" in res.out
    rows = pd.read_csv(out)
    assert rows["search"].tolist() == ["epsilon", "threshold"]
    expected = nested_cv(read_per_program(csv), "threshold", folds=3, trials=12, seed=4)
    assert rows.loc[1, "held_out_f1"] == pytest.approx(expected.held_out_f1)
    assert rows.loc[1, "in_sample_f1"] == pytest.approx(expected.in_sample.f1)
    assert f"{100 * expected.held_out_f1:.1f}%" in res.out


def test_run_id_reads_the_runs_artifact_and_decision_params(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from mlflow.tracking import MlflowClient

    monkeypatch.setenv("MCU_EXP_OUTPUTS", str(tmp_path / "outputs"))
    uri = f"sqlite:///{seed_store(tmp_path) / 'mlflow.db'}"  # a migrated store
    client = MlflowClient(tracking_uri=uri)
    exp = client.create_experiment("mcu_exp", artifact_location=(tmp_path / "artifacts").as_uri())
    run = client.create_run(exp, run_name="smollm2-135m · p1 · ε=0.2", tags={"mcu.model": "smollm2-135m"})
    client.log_param(run.info.run_id, "proxy.name", "p1")
    client.log_param(run.info.run_id, "labels.group", "professional")
    client.log_param(run.info.run_id, "decision.epsilon", "0.2")
    client.log_param(run.info.run_id, "decision.quantile", "conformal")
    client.log_artifact(run.info.run_id, str(write_per_program(tmp_path / "scores.csv", seed=1)))
    client.set_terminated(run.info.run_id)

    main(["--run-id", run.info.run_id, "--tracking-uri", uri, "--search", "epsilon", "--trials", "8", "--folds", "3"])
    printed = capsys.readouterr().out
    title = " ".join(printed.split("┏")[0].split())  # rich wraps a long title over lines
    assert title == (
        f"Tuning for F1 on run smollm2-135m · p1 · ε=0.2 ({run.info.run_id[:8]}; model=smollm2-135m, proxy=p1, "
        "readers=professional, ε=0.2)"
    )
    assert "ε=0.2 F1" in printed  # the run's own ε for reference
    threshold_row = [line for line in printed.splitlines() if "threshold" in line and "│" in line]
    assert threshold_row == []  # --search epsilon only


@pytest.mark.parametrize("rule", ["theta", "p1_and_theta", "conformal"])
def test_a_run_labelled_by_another_rule_is_told_that_no_column_is_its_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, rule: str
) -> None:
    """Tune searches the conformal rule: for a θ run the ε column is not the run's F1, and the
    command says so (a note on stderr, the caption); for a conformal run it says nothing."""
    from mlflow.tracking import MlflowClient

    monkeypatch.setenv("MCU_EXP_OUTPUTS", str(tmp_path / "outputs"))
    uri = f"sqlite:///{seed_store(tmp_path) / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    exp = client.create_experiment("mcu_exp", artifact_location=(tmp_path / "artifacts").as_uri())
    run = client.create_run(exp, run_name="p2")
    client.log_param(run.info.run_id, "decision.rule", rule)
    client.log_artifact(run.info.run_id, str(write_per_program(tmp_path / "scores.csv", seed=2)))
    client.set_terminated(run.info.run_id)
    capsys.readouterr()
    main(["--run-id", run.info.run_id, "--tracking-uri", uri, "--search", "epsilon", "--trials", "4", "--folds", "3"])
    res = capsys.readouterr()
    notes = [line for line in res.err.splitlines() if line.startswith("mcu-exp tune: note:")]
    caption = " ".join(res.out.split())
    if rule == "conformal":
        assert notes == [] and "not the run's own rule" not in caption
    else:
        assert notes == [
            f"mcu-exp tune: note: the run labels programs by the rule {rule}; tune searches the conformal "
            "rule's ε and τ on its α_cal/α_test, so no column is the run's own F1"
        ]
        assert f"not the run's own rule {rule}: the ε=0.1 column is not the run's F1." in caption


@pytest.mark.parametrize(
    "content,message",
    [
        ("program_id,human_label,alpha_test\np,1,0.2\n", "missing column(s) alpha_cal"),
        (
            "program_id,human_label,alpha_cal,alpha_test\na,1,0.1,0.1\nb,2,0.1,0.1\n",
            "line 3: human_label must be 0 or 1",
        ),
        # four programs, one of them twice: not n = 5
        (
            "program_id,human_label,alpha_cal,alpha_test\na,1,0.1,0.1\nb,0,0.3,0.3\nc,1,0.1,0.2\nd,0,0.2,0.4\n"
            "a,1,0.1,0.1\n",
            "program ids repeat (a); expected each program once",
        ),
        (
            b"program_id,human_label,alpha_cal,alpha_test\na,1,0.1,0.1\n\xe9,0,0.2,0.2\n",
            ":3: not UTF-8 text (byte 0xe9",
        ),
        ("", "empty file, expected a CSV table"),
    ],
)
def test_bad_files_fail_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | bytes, message: str
) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(SystemExit) as exc:
        main(["--per-program", str(bad)])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("mcu-exp tune: error:") and str(bad) in err and message in err
    assert len(err.splitlines()) == 1


def test_storage_defaults_to_the_outputs_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCU_EXP_OUTPUTS", str(tmp_path / "out"))
    assert storage_url(None) is None
    assert storage_url("") == f"sqlite:///{(tmp_path / 'out' / 'tune' / 'optuna.db').resolve()}"
    assert storage_url("postgresql://db/optuna") == "postgresql://db/optuna"
    assert storage_url(str(tmp_path / "s.db")) == f"sqlite:///{tmp_path / 's.db'}"


def test_a_stored_study_with_more_trials_than_asked_says_how_many_it_used(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Resumed with fewer --trials than the stored study holds, every stored trial counts: the
    caption says so instead of the smaller number alone."""
    monkeypatch.setenv("MCU_EXP_OUTPUTS", str(tmp_path / "outputs"))
    csv = write_per_program(tmp_path / "per_program.csv", seed=3)
    common = ["--per-program", str(csv), "--search", "threshold", "--folds", "3", "--storage", str(tmp_path / "s.db")]
    main([*common, "--trials", "6"])
    first = " ".join(capsys.readouterr().out.split())
    assert "6 TPE trials per study, seed 0." in first and "hold up to" not in first
    main([*common, "--trials", "3"])
    again = " ".join(capsys.readouterr().out.split())
    assert "3 TPE trials per study, seed 0 (the stored in-sample studies hold up to 6 trials, all used)." in again


def test_unknown_run_and_missing_store_fail_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--run-id", "abc", "--tracking-uri", f"sqlite:///{tmp_path / 'none.db'}"])
    assert "no MLflow store at" in capsys.readouterr().err
    assert not (tmp_path / "none.db").exists()


@pytest.mark.parametrize(
    ("n", "folds", "hint"),
    [(6, 5, "the smaller class has 3 of 6 programs; use --folds 3 (or fewer)"), (5, 2, "at least 2 programs of each")],
)
def test_too_many_folds_names_the_largest_that_works(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], n: int, folds: int, hint: str
) -> None:
    csv = tmp_path / "scores.csv"
    labels = [1, 0] * (n // 2) + [1] * (n % 2) if folds == 5 else [1, 1, 1, 1, 0]
    pd.DataFrame(
        {
            "program_id": [f"p{i}" for i in range(n)],
            "human_label": labels,
            "alpha_cal": np.linspace(0.1, 0.5, n),
            "alpha_test": np.linspace(0.2, 0.6, n),
        }
    ).to_csv(csv, index=False)
    with pytest.raises(SystemExit) as exc:
        main(["--per-program", str(csv), "--folds", str(folds), "--trials", "2"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"mcu-exp tune: error: --folds {folds}: each stratified fold needs a program of each class")
    assert hint in err and len(err.splitlines()) == 1
