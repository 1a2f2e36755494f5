"""P0, P2 and P3 through the real app, offline and tiny (the tiny random Llama as target and
experts, MiniLM as scorer: the mechanics, not the text, are under test).

The three jobs run one after the other in this process, each inside a Hydra job as the app
runs it (``support.hydra_job``), sharing the outputs folder and its generation cache as the
jobs of a sweep do (so P3 finds the target summaries P2 generated, and the P0 reference of P2
and P3 the answers P0's job generated); each test checks one job. (The sweep launcher itself
is tested in tests/tracking and tests/report.)
P0 gets one demo question per program (4 rotations each) to keep the prompts few: every
prompt holds a whole method, and prefilling ~600 tokens is what costs time on a CPU.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from mcu_exp.pipeline import run_job
from mcu_exp.tracking.artifacts import RunArtifacts
from support.hydra_job import hydra_job
from support.mlflow_store import all_metrics, seed_store
from support.tiny_llama import LOCAL_EXPERTS, model_overrides

pytestmark = [pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
QUESTIONS = REPO / "data" / "questions" / "scalabrino_demo.jsonl"
PROGRAMS = 3
# `++`: r is P3's key and samples P0's; each proxy drops (with a warning) the keys its Config lacks.
TINY = [
    "debug=quick",
    f"dataset.limit={PROGRAMS}",
    "proxy.k=4",
    "proxy.k_cal=2",
    "experts.m=2",
    "experts.top_n=1",
    "++proxy.r=2",
    "++proxy.samples=1",
    "reference.samples=1",
    "model.max_new_tokens=12",
    "evaluation.bootstrap_resamples=1000",
    "evaluation.plots=false",
    "quiet=true",
    "tracking.sweep_report=false",
]


def first_questions(target: Path) -> Path:
    """The demo file's first question of each program (JSONL in file order)."""
    kept: dict[str, str] = {}
    for line in QUESTIONS.read_text(encoding="utf-8").splitlines():
        kept.setdefault(json.loads(line)["program_id"], line)
    target.write_text("\n".join(kept.values()) + "\n", encoding="utf-8")
    return target


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, tiny_llama: Path) -> dict[str, object]:
    base = tmp_path_factory.mktemp("e2e")
    outputs = seed_store(base / "outputs")
    questions = first_questions(base / "questions.jsonl")
    patch = pytest.MonkeyPatch()
    try:
        patch.setenv("MCU_EXP_OUTPUTS", str(outputs))
        patch.setenv("HF_HUB_OFFLINE", "1")
        patch.delenv("MLFLOW_TRACKING_URI", raising=False)
        for proxy in ("p0", "p2", "p3"):  # the order of `-m proxy=p0,p2,p3`
            overrides = model_overrides(tiny_llama, ("model", *LOCAL_EXPERTS))
            with hydra_job(f"proxy={proxy}", *TINY, *overrides, f"dataset.questions={questions}") as cfg:
                run_job(cfg)
    finally:
        patch.undo()
    client = MlflowClient(tracking_uri=f"sqlite:///{outputs / 'mlflow.db'}")
    experiments = [e.experiment_id for e in client.search_experiments()]  # debug runs have their own
    found = {r.data.params["proxy.name"]: r for r in client.search_runs(experiments) if "proxy.name" in r.data.params}
    assert set(found) == {"p0", "p2", "p3"}
    return {"client": client, **found}


def results(run) -> Path:
    return Path(run.data.tags["mcu.output_dir"]) / "results"


def artifacts(runs, run) -> set[str]:
    return RunArtifacts(runs["client"], run.info.run_id, run.info.artifact_uri).list()


def test_p0_job(runs) -> None:
    run = runs["p0"]
    assert run.info.status == "FINISHED"
    table = pd.read_csv(results(run) / "per_program.csv")
    assert {"program_id", "human_label", "score", "label", "n_questions", "n_correct"} <= set(table.columns)
    assert len(table) == PROGRAMS and (table["n_questions"] == 1).all()
    assert ((table["score"] >= 0.5).astype(int) == table["label"]).all()
    answers = pd.read_csv(results(run) / "answers.csv")
    assert len(answers) == PROGRAMS * 4  # programs x rotations, one sample each
    assert sorted(
        answers.groupby(["program_id", "question_id"])["correct_position"].agg(lambda s: "".join(sorted(s))).unique()
    ) == ["ABCD"]
    m = all_metrics(runs["client"], run)
    assert m["p0.unparseable"] == answers["letter"].isna().sum()
    parsed = answers["letter"].notna().sum()
    if parsed:
        assert sum(m[f"p0.letter_share.{x}"] for x in "ABCD") == pytest.approx(1.0)
    assert {"p0_labels.csv", "p0_questions.csv", "answers.csv"} <= artifacts(runs, run)


def test_p2_job(runs) -> None:
    run = runs["p2"]
    assert run.info.status == "FINISHED"
    table = pd.read_csv(results(run) / "per_program.csv")
    assert {"ssc_meta_cal", "ssc_meta_test", "reference_expert", "score", "label"} <= set(table.columns)
    assert len(table) == 3
    assert table["score"].tolist() == pytest.approx(table["ssc_meta_test"].tolist())
    assert table["ssc_meta_test"].between(0, 1).all()
    pool = pd.read_csv(results(run) / "expert_pool.csv")
    assert len(pool) == 3 * 3 * 2 and pool["kept"].sum() == 3 * 3  # 3 programs x 3 experts x m, top 1 kept
    assert (pool.groupby("program_id")["is_reference"].sum() == 1).all()
    assert (pool[pool["is_reference"]]["kept"]).all()
    assert run.data.params["result.rule"] == "conformal"
    assert {"tau", "coverage"} <= set(run.data.metrics) and "p2.tau_meta" in all_metrics(runs["client"], run)
    assert {"ssc_meta.csv", "summaries.csv", "sensitivity_threshold.csv"} <= artifacts(runs, run)
    assert (
        all_metrics(runs["client"], run)["vs_reference.n"] == 3
    )  # scored against the P0 reference: the questions are given


def test_p3_job(runs) -> None:
    run = runs["p3"]
    assert run.info.status == "FINISHED"
    table = pd.read_csv(results(run) / "per_program.csv")
    assert {"judge", "n_summaries", "n_correct", "n_incorrect", "score", "label"} <= set(table.columns)
    assert len(table) == 3 and (table["n_summaries"] == 4).all()
    assert ((table["score"] > 0.5).astype(int) == table["label"]).all()
    judgments = pd.read_csv(results(run) / "judgments.csv")
    assert len(judgments) == 3 * 4 * 2
    assert set(judgments["verdict"]) <= {"CORRECT", "INCORRECT", "UNPARSEABLE"}
    m = all_metrics(runs["client"], run)
    assert m["p3.unparseable"] == (judgments["verdict"] == "UNPARSEABLE").sum()
    assert m["generation_cache_hits"] >= 3 * 4  # the target summaries P2's job generated
    assert m["vs_reference.n"] == 3 and not any(
        k.startswith("vs_reference.") for k in all_metrics(runs["client"], runs["p0"])
    )
