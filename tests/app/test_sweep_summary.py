"""The 6-job decision-only sweep of issue 27 (ε × reader group, stand-in proxy, a debug sweep):
one line per job, the summary sorted by the headline with the best row marked, the sentence
that answers the sweep's question, and a printed ``mcu-exp report`` command that works."""

from __future__ import annotations

import math
import re
import shlex
import subprocess
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from mcu_exp.app import config_dir
from mcu_exp.cli.commands import SUBCOMMANDS
from mcu_exp.report.sweep_summary import conclusion, display_frame, summary_frame
from support.mlflow_store import share_results
from support.sweeps import STANDIN, mcu_exp, multirun_in_process

JOBS = 6
LINES_PER_JOB = 15


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    from support.mlflow_store import seed_store

    outputs = seed_store(tmp_path_factory.mktemp("summary") / "outputs")
    res = mcu_exp(
        "-m",
        STANDIN,
        "quiet=true",
        "dataset.limit=50",  # a debug sweep over all 50 programs: logged to mcu_exp-debug
        "evaluation.bootstrap_resamples=1000",
        "evaluation.permutations=200",
        "tracking.sweep_report=false",
        "decision.epsilon=0.1,0.2",
        "labels.group=all,professional,bachelor",
        outputs=outputs,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    return outputs, res


pytestmark = pytest.mark.slow  # sweeps: one in a subprocess, one in this process


def test_each_job_prints_one_line_and_logs_the_rest(sweep: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    outputs, res = sweep
    lines = (res.stdout + res.stderr).splitlines()
    starts = [i for i, line in enumerate(lines) if re.search(r"\[HYDRA\]\s+#\d+ :", line)]
    summary = next(i for i, line in enumerate(lines) if line.startswith("job  run"))  # the summary's header
    summary -= 2  # its title: the sweep's name and how many jobs
    assert len(starts) == JOBS
    for number, (start, end) in enumerate(zip(starts, [*starts[1:], summary])):
        chunk = lines[start:end]
        assert len(chunk) <= LINES_PER_JOB, chunk
        (line,) = [x for x in chunk if x.startswith(f"[job {number}] ")]
        assert "ΔF1 vs always-1" in line and ("✓" in line or "✗" in line)
        assert not any("[INFO]" in x for x in chunk)
    (log,) = outputs.glob("multirun/*/*/0/*.log")
    assert "95 % CI" in log.read_text(encoding="utf-8")  # the full tables, in the job's log file


def test_the_summary_is_sorted_by_the_headline_and_answers_the_question(
    sweep: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    outputs, res = sweep
    (csv,) = outputs.glob("multirun/*/*/sweep_summary.csv")
    frame = pd.read_csv(csv)
    assert len(frame) == JOBS and (frame["status"] == "FINISHED").all()
    for column in ("f1_minus_always", "f1_minus_always_ci_low", "f1_minus_always_ci_high", "auc_score_ci_low"):
        assert pd.api.types.is_float_dtype(frame[column])  # numbers, not "57.1% [50.0%, 80.0%]"
    keys = list(zip(frame["mcc_ci_low"], frame["auc_score_ci_low"]))
    assert keys == sorted(keys, reverse=True)  # ranked by MCC's lower bound, then AUC's
    assert frame["best"].tolist() == [True] + [False] * (JOBS - 1)
    assert (frame["beats_always"] == (frame["f1_minus_always_ci_low"] > 0)).all()
    diff = frame["f1"] - frame["baseline_always_f1"]
    assert all(math.isclose(a, b, abs_tol=1e-12) for a, b in zip(diff, frame["f1_minus_always"]))
    assert ((frame["labelled_high"] > 0) & (frame["labelled_high"] <= 1)).all()
    best = frame.iloc[0]
    text = " ".join(res.stdout.split())
    assert f"Best by MCC's lower bound: {best['run']}, MCC {best['mcc']:.3f}" in text
    if not frame["beats_always"].any():
        assert "No configuration beats the always-understandable baseline" in text
    else:
        assert "beats the always-understandable baseline by " in text
    lines = res.stdout.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("job  run"))
    table = lines[head - 2 : head + 2 + JOBS]
    rows = table[4:]
    assert "★" in rows[0] and not any("★" in row for row in rows[1:])
    assert all(str(r)[:8] in "".join(rows) for r in frame["run_id"])  # short run ids, for compare
    assert all(len(line) <= 100 for line in table)  # a 6-job sweep fits 100 columns
    assert "epsilon" in table[2] and "group" in table[2]  # one column per swept parameter
    assert "Every row: programs 50." in res.stdout  # what every row shares: said once


def test_the_printed_report_command_works(
    sweep: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outputs, res = sweep
    (line,) = [x for x in res.stdout.splitlines() if x.startswith("Report: mcu-exp report ")]
    args = shlex.split(line.removeprefix("Report: mcu-exp "))
    assert "--debug" in args and "mcu_exp-debug" in args
    assert "MLflow experiment 'mcu_exp-debug'" in res.stdout
    assert re.search(r"then: http://127\.0\.0\.1:5000/#/experiments/\d+/runs/[0-9a-f]{32}", res.stdout)
    # The printed command through the app's subcommand table, in this process (`mcu-exp report`
    # itself runs in a subprocess in tests/report/test_report_cli.py); it returns (exit 0).
    monkeypatch.setenv("MCU_EXP_OUTPUTS", str(outputs))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    SUBCOMMANDS[args[0]]([*args[1:], "--no-log", "--out", str(tmp_path / "report")], config_dir())
    assert (tmp_path / "report" / "report.html").is_file()


def _run(job: str, name: str, **metrics: float) -> SimpleNamespace:
    """An MLflow run as the summary reads it (info, tags, metrics)."""
    info = SimpleNamespace(run_id=f"r{job}", run_name=name, status="FINISHED")
    return SimpleNamespace(info=info, data=SimpleNamespace(tags={"mcu.job_num": job}, metrics=metrics, params={}))


def test_a_configuration_that_beats_the_baseline_is_named_and_ranking_follows_mcc() -> None:
    def metrics(f1: float, low: float, high: float, auc_low: float, mcc_low: float) -> dict[str, float]:
        return {
            "f1": f1,
            "f1_ci_low": low,
            "f1_ci_high": high,
            "baseline_always_f1": 0.6,
            "auc_score": auc_low + 0.1,
            "auc_score_ci_low": auc_low,
            "mcc": mcc_low + 0.2,
            "mcc_ci_low": mcc_low,
            "mcc_ci_high": mcc_low + 0.4,
        }

    from mcu_exp.evaluation.versus_always import f1_minus_always

    found = {
        "r0": metrics(0.62, 0.55, 0.70, 0.40, 0.05),
        "r1": metrics(0.75, 0.65, 0.80, 0.52, 0.10),
        "r2": metrics(0.62, 0.55, 0.70, 0.45, 0.20),
        "r3": metrics(float("nan"), float("nan"), float("nan"), 0.9, float("nan")),
    }
    for m in found.values():
        m.update(f1_minus_always(m))
    runs = [_run(str(i), f"config {i}") for i in range(4)]
    frame = summary_frame(runs, found, failed={"4": "bad value"})
    assert frame["job"].tolist() == ["2", "1", "0", "3", "4"]  # MCC low, then AUC low; undefined, failed last
    assert frame["best"].tolist() == [True, False, False, False, False]
    assert conclusion(frame) == (
        "Best by MCC's lower bound: config 2, MCC 0.400 [0.200, 0.600]. config 1 beats the always-understandable "
        "baseline by +15.0 pp [+5.0, +20.0] F1 (75.0% [65.0%, 80.0%] vs 60.0%)."
    )


def test_a_near_constant_labeller_cannot_win_the_ranking() -> None:
    """One configuration labels all but one program High (F1 copies always-1), another
    separates the classes: the separating one ranks first, the other is flagged."""
    from mcu_exp.evaluation import evaluate
    from mcu_exp.evaluation.versus_always import f1_minus_always

    rng = np.random.default_rng(3)
    truth = np.array([1] * 35 + [0] * 15)  # mostly understandable: always-1 has a high F1
    score = truth + rng.normal(0, 0.8, truth.size)
    separating = (score > np.median(score)).astype(int)
    near_constant = np.ones(truth.size, dtype=int)
    near_constant[int(np.argmin(score))] = 0
    found = {}
    for rid, labels in (("r0", near_constant), ("r1", separating)):
        report = evaluate(truth, labels, score, resamples=1000, permutations=0)
        m = {**report.metrics, "baseline_always_f1": report.baselines["always_positive"]["f1"]}
        m |= {f"{k}_ci_low": v[0] for k, v in report.ci.items()} | {f"{k}_ci_high": v[1] for k, v in report.ci.items()}
        m["labelled_high"] = labels.mean()
        found[rid] = m | f1_minus_always(m)
    assert found["r0"]["f1_minus_always"] >= found["r1"]["f1_minus_always"]  # ΔF1 would crown the constant one
    frame = summary_frame([_run("0", "near constant"), _run("1", "separating")], found)
    assert frame["run"].tolist() == ["separating", "near constant"]
    shown = display_frame(frame)
    assert shown["High"].tolist()[1] == "98%!" and "!" not in shown["High"].tolist()[0]


def test_a_constant_labeller_ranks_after_a_weak_informative_one() -> None:
    """A configuration that labels every program Low has MCC 0 by convention (0/0) with no
    interval; a weak but informative one has a lower bound below 0: the informative one ranks
    first (a point interval [0, 0] would have crowned the constant one)."""
    from mcu_exp.evaluation import evaluate

    rng = np.random.default_rng(5)
    truth = np.array([1] * 26 + [0] * 24)
    score = truth + rng.normal(0, 2.5, truth.size)
    weak = (score > np.median(score)).astype(int)
    found = {}
    for rid, labels in (("r0", np.zeros(truth.size, dtype=int)), ("r1", weak)):
        report = evaluate(truth, labels, score, resamples=1000, permutations=0)
        m = {**report.metrics, "baseline_always_f1": report.baselines["always_positive"]["f1"]}
        m |= {f"{k}_ci_low": v[0] for k, v in report.ci.items()} | {f"{k}_ci_high": v[1] for k, v in report.ci.items()}
        m["labelled_high"] = labels.mean()
        found[rid] = m
    assert found["r0"]["mcc"] == 0.0 and np.isnan(found["r0"]["mcc_ci_low"])
    assert found["r1"]["mcc_ci_low"] < 0 < found["r1"]["mcc"]
    frame = summary_frame([_run("0", "constant"), _run("1", "weak")], found)
    assert frame["run"].tolist() == ["weak", "constant"]


def test_a_near_constant_labeller_with_a_zero_lower_bound_ranks_after_the_others() -> None:
    """The README sweep's figures: ε=0.05 · rougel labels 49 of 50 programs High, MCC 0.15
    [0.00, 0.31] (its lower bound sits at 0 because a third of the resamples leave its one Low
    program out and are constant); ε=0.1 · minilm labels 46, MCC 0.16 [-0.24, 0.35]. The flagged
    labeller ranks last, and the view's best child agrees."""
    from mcu_exp.tracking.ui_view import best_child

    near = {"mcc": 0.149, "mcc_ci_low": 0.0, "mcc_ci_high": 0.307, "labelled_high": 0.98, "n": 50.0}
    near |= {"auc_score": 0.51, "auc_score_ci_low": 0.34, "auc_score_ci_high": 0.67}
    informative = {"mcc": 0.16, "mcc_ci_low": -0.24, "mcc_ci_high": 0.35, "labelled_high": 0.92, "n": 50.0}
    informative |= {"auc_score": 0.61, "auc_score_ci_low": 0.45, "auc_score_ci_high": 0.77}
    found = {"r0": near, "r1": informative}
    frame = summary_frame([_run("0", "ε=0.05 · rougel"), _run("1", "ε=0.1 · minilm")], found)
    assert frame["run"].tolist() == ["ε=0.1 · minilm", "ε=0.05 · rougel"] and frame["best"].tolist() == [True, False]
    runs = [_run("0", "near", **near), _run("1", "informative", **informative)]
    for run in runs:
        run.data.params = {"result.n": "50"}
    best = best_child(runs)
    assert best is not None and best.info.run_name == "informative"


def test_a_sweep_without_tracking_prints_its_summary_too(tmp_path: Path) -> None:
    # In this process: what the sweep prints and writes is read, not the command's process
    # (the fixture's sweep above runs the command).
    res = multirun_in_process(
        share_results(tmp_path / "outputs"),
        STANDIN,
        "quiet=true",
        "dataset.limit=20",
        "evaluation.bootstrap_resamples=1000",
        "evaluation.permutations=200",
        "tracking=none",
        "decision.epsilon=0.1,0.2",
    )
    (csv,) = (tmp_path / "outputs").glob("multirun/*/*/sweep_summary.csv")
    frame = pd.read_csv(csv)
    assert sorted(frame["job"].astype(str)) == ["0", "1"] and (frame["status"] == "FINISHED").all()
    head = next(line for line in res.stdout.splitlines() if line.startswith("job  run"))
    assert "epsilon" in head and "MCC" in head
    assert f"Summary: {csv} (tracking=none: no MLflow run, no report)" in res.stdout
    assert "Best by MCC's lower bound: decision.epsilon=" in " ".join(res.stdout.split())
    assert not (tmp_path / "outputs" / "mlflow.db").exists()
    # A sweep's jobs leave their own figures out (evaluation.plots unset); `mcu-exp figures` draws them.
    sweep_dir = csv.parent
    assert not list(sweep_dir.glob("*/results/*.png"))
    assert f"Each job's own figures: mcu-exp figures {sweep_dir}" in res.stdout
    SUBCOMMANDS["figures"]([str(sweep_dir)], config_dir())
    for job in ("0", "1"):
        drawn = {p.name for p in (sweep_dir / job / "results").glob("*.png")}
        assert {"sensitivity_threshold.png", "sensitivity_epsilon.png", "coverage_epsilon.png", "headline.png"} <= drawn
