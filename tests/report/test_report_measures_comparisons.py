"""`mcu-exp report`'s sections over the runs' ``measures.csv`` and ``per_program.csv``
artifacts: the uncertainty measures with the code-metric baselines shown once (per label
set), and paired comparisons of the configurations that share human labels, Holm-adjusted
across the pairs shown. Runs are logged with MlflowClient directly, their artifacts written
with :class:`RunArtifacts` as a job leaves them (relative ``mlflow-artifacts:/`` location)."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from mlflow.entities import Metric, Param
from mlflow.tracking import MlflowClient

from mcu_exp.evaluation.paired import compare_many, holm
from mcu_exp.names import MEASURES_FILE, METRICS_FILE, PER_PROGRAM_FILE
from mcu_exp.report.build import make_report
from mcu_exp.report.comparisons import comparison_part
from mcu_exp.tracking.artifacts import RunArtifacts, experiment_location
from support.md_tables import section, table_rows
from support.mlflow_store import seed_store

EXPERIMENT = "measures"
HEADLINE = {
    "f1": 0.7,
    "f1_ci_low": 0.6,
    "f1_ci_high": 0.8,
    "auc_binary": 0.55,
    "auc_binary_ci_low": 0.45,
    "auc_binary_ci_high": 0.65,
    "baseline_always_f1": 0.684,
    "baseline_random_f1": 0.518,
    "n": 40.0,
}
MEASURES = ("measure.ssc", "measure.eigv", "measure.deg", "measure.ecc")
N = 40
TRUTH = np.random.default_rng(7).integers(0, 2, N)
OTHER_TRUTH = np.where(np.arange(N) < 6, 1 - TRUTH, TRUTH)  # another reader group's labels
# (model, labels.group, has measures and per-program tables)
RUNS = (
    ("m1", "all", True),
    ("m2", "all", True),
    ("m3", "all", True),
    ("m1", "professional", True),
    ("m2", "professional", True),
    ("old", "all", False),
)


def measures_frame(seed: int, group: str) -> pd.DataFrame:
    """A measures.csv as a job writes it: measure.* rows differ by run, code.* rows by label
    set only, and a dataset.* row."""
    rng = np.random.default_rng(seed)
    code_rng = np.random.default_rng(1000 if group == "all" else 1001)
    rows = {}
    for column, r in [
        *((m, rng) for m in MEASURES),
        *((c, code_rng) for c in ("code.loc", "code.cyclomatic")),
        ("dataset.readability", code_rng),
    ]:
        auc, rho, prr = r.uniform(0.4, 0.8), r.uniform(-0.2, 0.5), r.uniform(-0.3, 0.4)
        rows[column] = {
            "n": N,
            "auc_score": auc,
            "auc_score_ci_low": auc - 0.1,
            "auc_score_ci_high": auc + 0.1,
            "spearman": rho,
            "spearman_ci_low": rho - 0.15,
            "spearman_ci_high": rho + 0.15,
            "prr": prr,
            "prr_ci_low": prr - 0.39,
            "prr_ci_high": prr + 0.39,
            "prr_perm_p": 0.25,
            "spearman_vs": "correctness",
        }
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index.name = "column"
    return frame


def per_program_frame(seed: int, group: str) -> pd.DataFrame:
    rng = np.random.default_rng(100 + seed)
    truth = TRUTH if group == "all" else OTHER_TRUTH
    score = truth + rng.normal(0.0, 1.2, N)
    return pd.DataFrame(
        {"human_label": truth, "human_fraction": truth * 0.8, "score": score, "label": (score > 0.3).astype(int)},
        index=pd.Index([f"prog-{i:02d}" for i in range(N)], name="program_id"),
    )


def build_store(outputs: Path) -> tuple[str, dict[tuple[str, str], str]]:
    """Five runs with measures.csv and per_program.csv (three against all readers, two against
    professional readers, whose labels differ on 6 programs) and one older run without either."""
    seed_store(outputs)
    uri = f"sqlite:///{outputs / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    exp = client.create_experiment(EXPERIMENT, artifact_location=experiment_location(EXPERIMENT))
    ids = {}
    for seed, (model, group, new) in enumerate(RUNS):
        tags = {"mcu.model": model, "mcu.proxy": "p1", "mcu.dataset": "scalabrino", "mcu.sweep": "s1"}
        run = client.create_run(exp, run_name=f"{model} · p1 · {group}", tags=tags)
        params = {
            "decision.rule": "conformal",
            "decision.epsilon": "0.1",
            "decision.quantile": "empirical",
            "labels.group": group,
            "model.name": model,
            "proxy.name": "p1",
        }
        client.log_batch(
            run.info.run_id,
            params=[Param(k, v) for k, v in params.items()],
            metrics=[Metric(k, v, 0, 0) for k, v in HEADLINE.items()],
        )
        folder = outputs.parent / f"files-{seed}"
        folder.mkdir()
        (folder / METRICS_FILE).write_text(json.dumps(HEADLINE))
        if new:
            measures_frame(seed, group).to_csv(folder / MEASURES_FILE)
            per_program_frame(seed, group).to_csv(folder / PER_PROGRAM_FILE)
        RunArtifacts(client, run.info.run_id, run.info.artifact_uri).put_folder(folder)
        client.set_terminated(run.info.run_id, "FINISHED")
        ids[model, group] = run.info.run_id
    return uri, ids


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The store, and a report over every run of it."""
    root = tmp_path_factory.mktemp("measures")
    uri, ids = build_store(root / "outputs")
    out = make_report(uri, experiments=[EXPERIMENT], out=root / "report", log=False)
    return {"root": root, "uri": uri, "ids": ids, "out": out, "md": (out / "report.md").read_text()}


def interval(value: float, low: float, high: float) -> str:
    return f"{value:.3f} [{low:.3f}, {high:.3f}]"


def label(model: str, group: str) -> str:
    return f"{model} · p1 · reader group={group}"


def test_measure_cells_are_the_csv_values_formatted(made: dict[str, Any]) -> None:
    rows = table_rows(section(made["md"], "Uncertainty measures and code-metric baselines"))
    for seed, (model, group, new) in enumerate(RUNS):
        mine = {r["measure"]: r for r in rows if r["configuration"] == label(model, group)}
        if not new:
            assert not mine
            continue
        expected = measures_frame(seed, group)
        assert list(mine) == list(MEASURES)  # measure.* rows only, in the file's order
        for column, row in mine.items():
            values = expected.loc[column]
            assert row["AUC (score)"] == interval(
                values["auc_score"], values["auc_score_ci_low"], values["auc_score_ci_high"]
            )
            assert row["Spearman ρ"] == interval(
                values["spearman"], values["spearman_ci_low"], values["spearman_ci_high"]
            )
            assert row["PRR"] == interval(values["prr"], values["prr_ci_low"], values["prr_ci_high"])
            assert row["p (PRR)"] == "0.250"
            assert row["n"] == str(N)
    assert not any(r["measure"].startswith("dataset.") for r in rows)  # only in the CSV


def test_code_rows_once_per_label_set_and_every_row_in_the_csv(made: dict[str, Any]) -> None:
    rows = table_rows(section(made["md"], "Uncertainty measures and code-metric baselines"))
    code = [r for r in rows if r["measure"].startswith("code.")]
    assert sorted(r["configuration"] for r in code) == sorted(
        [f"code metrics · reader group={g}" for g in ("all", "professional") for _ in range(2)]
    )
    own = {r["configuration"]: r for r in code if r["measure"] == "code.loc"}
    for seed, group in ((0, "all"), (3, "professional")):  # each set from its first run
        values = measures_frame(seed, group).loc["code.loc"]
        assert own[f"code metrics · reader group={group}"]["AUC (score)"] == interval(
            values["auc_score"], values["auc_score_ci_low"], values["auc_score_ci_high"]
        )

    saved = pd.read_csv(made["out"] / MEASURES_FILE)
    with_files = [(seed, m, g) for seed, (m, g, new) in enumerate(RUNS) if new]
    assert len(saved) == len(with_files) * 7  # 4 measures, 2 code metrics, 1 dataset metric each
    for seed, model, group in with_files:
        mine = saved[saved["run_id"] == made["ids"][model, group]].set_index("column")
        assert mine["run_name"].iloc[0] == f"{model} · p1 · {group}"
        pd.testing.assert_frame_equal(
            mine[list(measures_frame(seed, group).columns)],
            measures_frame(seed, group),
            check_names=False,
            check_dtype=False,
        )


def test_code_rows_shown_once_when_the_labels_agree(made: dict[str, Any]) -> None:
    out = make_report(
        made["uri"],
        experiments=[EXPERIMENT],
        filter_string="params.`labels.group` = 'all'",
        out=made["root"] / "all-readers",
        log=False,
    )
    text = section((out / "report.md").read_text(), "Uncertainty measures and code-metric baselines")
    code = [r for r in table_rows(text) if r["measure"].startswith("code.")]
    assert [r["configuration"] for r in code] == ["code metrics"] * 2
    values = measures_frame(0, "all").loc["code.cyclomatic"]
    assert code[1]["Spearman ρ"] == interval(values["spearman"], values["spearman_ci_low"], values["spearman_ci_high"])
    assert "taken from the first run (m1 · p1)" in text


def test_old_run_without_measures_is_skipped_with_a_note(made: dict[str, Any]) -> None:
    text = section(made["md"], "Uncertainty measures and code-metric baselines")
    assert not any(r["configuration"] == label("old", "all") for r in table_rows(text))
    assert f"1 configuration without {MEASURES_FILE}" in text and label("old", "all") in text
    paired = section(made["md"], "Paired comparisons")
    assert "Not compared, no score" in paired and label("old", "all") in paired


def test_a_run_whose_artifacts_are_gone_is_named_not_taken_for_an_old_run(
    made: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copytree(made["root"] / "outputs", tmp_path / "outputs")  # artifacts are relative to the store
    uri = f"sqlite:///{tmp_path / 'outputs' / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    lost = made["ids"]["m2", "all"]
    shutil.rmtree(RunArtifacts(client, lost, client.get_run(lost).info.artifact_uri).local)
    capsys.readouterr()
    out = make_report(uri, experiments=[EXPERIMENT], out=tmp_path / "report", log=False)
    err = capsys.readouterr().err
    assert f"warning: run {lost} (m2 · p1 · all): its artifacts are missing" in err
    assert err.count("artifacts are missing") == 1  # the other runs have theirs
    text = section((out / "report.md").read_text(), "Uncertainty measures and code-metric baselines")
    assert (
        f"1 configuration whose run's artifacts are missing (restore them to report their measures), "
        f"left out: {label('m2', 'all')} (run {lost})." in text
    )
    assert (
        f"1 configuration without {MEASURES_FILE} (runs from before measures were logged), left out: "
        f"{label('old', 'all')}." in text
    )  # m2 is not said to predate measures


def frames(group: str, models: tuple[str, ...]) -> dict[str, pd.DataFrame]:
    """The per-program tables the runs of ``models`` on ``group`` logged, as read back."""
    out = {}
    for model in models:
        seed = RUNS.index((model, group, True))
        frame = per_program_frame(seed, group)
        out[label(model, group)] = frame.set_axis(frame.index.astype(str), axis=0)
    return out


def test_comparisons_are_compare_many_within_label_sets_holm_across_pairs(made: dict[str, Any]) -> None:
    saved = pd.read_csv(made["out"] / "comparisons.csv")
    shown = table_rows(section(made["md"], "Paired comparisons"))
    # Runs on different human labels are never a pair; each set is compared within itself.
    groups = {label(m, g): g for m, g, _ in RUNS}
    assert len(saved) == 3 + 1 and len(shown) == 4
    assert all(groups[a] == groups[b] for a, b in zip(saved["run_a"], saved["run_b"], strict=True))
    for group, models in (("all", ("m1", "m2", "m3")), ("professional", ("m1", "m2"))):
        expected = compare_many(frames(group, models), resamples=2000, seed=0)
        mine = saved[saved["run_a"].map(groups) == group].reset_index(drop=True)
        assert list(mine["run_a"]) == list(expected["run_a"]) and list(mine["run_b"]) == list(expected["run_b"])
        for column in (
            "n",
            "delta_f1",
            "delta_auc_score",
            "delta_auc_score_ci_low",
            "delta_auc_score_ci_high",
            "delong_p",
            "mcnemar_p",
        ):
            np.testing.assert_allclose(mine[column].to_numpy(float), expected[column].to_numpy(float))
        for _, row in mine.iterrows():
            cells = next(r for r in shown if r["A"] == row["run_a"] and r["B"] == row["run_b"])
            assert cells["ΔAUC (score)"] == interval(
                row["delta_auc_score"], row["delta_auc_score_ci_low"], row["delta_auc_score_ci_high"]
            )
    # Holm across the four pairs shown, not within each set.
    for raw, adjusted, head in (
        ("delong_p", "delong_p_holm", "DeLong p (Holm)"),
        ("mcnemar_p", "mcnemar_p_holm", "McNemar (accuracy) p (Holm)"),
    ):
        family = holm(saved[raw].to_numpy(float))
        np.testing.assert_allclose(saved[adjusted].to_numpy(float), family)
        assert [r[head] for r in shown] == [f"{p:.4f}" for p in family]
    text = section(made["md"], "Paired comparisons")
    assert "Holm-adjusted across the 4 pairs shown" in text and "2000 resamples, seed 0" in text
    assert "unadjusted 95 % paired stratified bootstrap CIs" in text and "a family of 8 intervals, 2 per pair" in text
    assert "Labels fixed in the resamples" in text  # these runs left no scores.csv
    assert "different human labels are not compared" in text


def rows_frame(count: int) -> pd.DataFrame:
    ids = [f"run{i}" for i in range(count)]
    return pd.DataFrame({"model": [f"m{i}" for i in range(count)], "proxy": "p1", "run_name": ids}, index=ids)


def test_comparisons_capped_and_runs_without_a_score_left_out() -> None:
    rows = rows_frame(5)
    found = {f"run{i}": per_program_frame(i, "all") for i in range(5)}
    found["run1"] = found["run1"].drop(columns="score")  # a proxy without a continuous score
    part = comparison_part(rows, ["model", "proxy"], found, most=3, resamples=1000)
    assert part is not None
    assert list(zip(part.csv["run_a"], part.csv["run_b"], strict=True)) == [
        ("m0 · p1", "m2 · p1"),
        ("m0 · p1", "m3 · p1"),
        ("m2 · p1", "m3 · p1"),
    ]
    notes = " ".join(part.notes)
    assert "Not compared, no score" in notes and "m1 · p1" in notes
    assert "1 more configuration with a score left out" in notes and "m4 · p1" in notes
    assert "mcu-exp compare" in notes
    assert comparison_part(rows, ["model", "proxy"], {"run0": found["run0"]}) is None  # fewer than two


def test_ten_configurations_give_every_pair() -> None:
    rows = rows_frame(10)
    found = {f"run{i}": per_program_frame(i, "all") for i in range(10)}
    part = comparison_part(rows, ["model", "proxy"], found)
    assert part is not None and len(part.csv) == 45
    assert not math.isnan(part.csv["delta_auc_score"].iloc[0])


def test_configurations_that_label_and_score_alike_are_not_paired() -> None:
    rows = rows_frame(4)  # m2 repeats m0's labels and scores, m3 m1's (a reader group whose labels agree)
    found = {"run0": per_program_frame(0, "all"), "run1": per_program_frame(1, "all")}
    found["run2"], found["run3"] = found["run0"].copy(), found["run1"].copy()
    part = comparison_part(rows, ["model", "proxy"], found, resamples=1000)
    assert part is not None
    assert list(zip(part.csv["run_a"], part.csv["run_b"], strict=True)) == [("m0 · p1", "m1 · p1")]
    assert (part.csv["delta_f1_ci_high"] - part.csv["delta_f1_ci_low"] > 0).all()  # no [0, 0] row
    notes = " ".join(part.notes)
    assert "m2 · p1: the same labels and scores as m0 · p1 on every program" in notes
    assert "m3 · p1: the same labels and scores as m1 · p1" in notes
    alike = comparison_part(rows_frame(2), ["model", "proxy"], {"run0": found["run0"], "run1": found["run2"]})
    assert alike is not None and alike.csv.empty and "m1 · p1: the same labels and scores as m0 · p1" in alike.notes[0]
