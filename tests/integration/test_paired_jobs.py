"""Paired designs end to end, in-process (``debug=quick``-sized, the tiny random Llama): a paired
custom dataset's job ends with the twins analysis; the same job under ``probe=rename_identifiers``
runs on the edited programs, records the pairing and the probe in its MLflow params, shares no
generated sample with the original; ``mcu-exp compare`` on the two prints the paired analysis."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from mcu_exp.cli.compare import main as compare_main
from mcu_exp.pipeline import run_job
from support.hydra_job import hydra_job
from support.mlflow_store import seed_store
from support.paired_study import write_paired_study
from support.tiny_llama import model_overrides

pytestmark = [pytest.mark.slow]

TINY = [
    "debug=quick",
    "dataset=custom",
    "proxy.k=4",
    "proxy.k_cal=2",
    "model.max_new_tokens=12",
    "reference=null",
    "quiet=true",
    "evaluation.bootstrap_resamples=1000",
    "tracking.sweep_report=false",
]


@pytest.fixture(scope="module")
def jobs(tmp_path_factory: pytest.TempPathFactory, tiny_llama: Path) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("paired")
    outputs = seed_store(base / "outputs")
    study = write_paired_study(base / "study")
    patch = pytest.MonkeyPatch()
    folders: dict[str, Path] = {}
    try:
        patch.setenv("MCU_EXP_OUTPUTS", str(outputs))
        patch.setenv("HF_HUB_OFFLINE", "1")
        patch.delenv("MLFLOW_TRACKING_URI", raising=False)
        for probe in ("none", "rename_identifiers"):  # the order of `-m probe=none,rename_identifiers`
            overrides = [*TINY, f"dataset.root={study}", f"probe={probe}", *model_overrides(tiny_llama)]
            with hydra_job(*overrides) as cfg:
                run_job(cfg)
                folders[probe] = Path(cfg.paths.outputs)
    finally:
        patch.undo()
    client = MlflowClient(tracking_uri=f"sqlite:///{outputs / 'mlflow.db'}")
    runs = client.search_runs([e.experiment_id for e in client.search_experiments()])
    found = {r.data.params.get("probe.edit"): r for r in runs}
    assert set(found) == {"none", "rename_identifiers"}  # both runs log their probe
    return {name: Path(run.data.tags["mcu.output_dir"]) / "results" for name, run in found.items()}


def test_a_paired_custom_dataset_ends_with_the_twins_analysis(jobs: dict[str, Any]) -> None:
    results = jobs["none"]
    pairs = pd.read_csv(results / "pairs.csv", dtype=str).set_index("pair")
    assert list(pairs.index) == ["count|count-r", "max|max-r", "sum|sum-r"]  # natural id order
    per_program = pd.read_csv(results / "per_program.csv", dtype={"program_id": str}).set_index("program_id")
    for name, row in pairs.iterrows():
        control, treatment = str(name).split("|")
        delta = per_program.loc[treatment, "score"] - per_program.loc[control, "score"]
        assert float(row["delta_proxy"]) == pytest.approx(delta)
    metrics = json.loads((results / "metrics.json").read_text())
    assert metrics["twins.n"] == 3
    assert metrics["twins.direction"] == -1  # the study's readers did worse on the renamed twins
    assert (results / "pairs.png").is_file()


def test_a_probe_runs_on_the_edited_programs_and_records_the_pairing(jobs: dict[str, Any]) -> None:
    results = jobs["rename_identifiers"]
    pairing = pd.read_csv(results / "probe.csv", dtype=str, keep_default_na=False).set_index("program_id")
    assert (pairing["status"] == "edited").all() and (pairing["probe"] == "rename_identifiers").all()
    assert "total" not in pairing.loc["sum", "edited_code"] and "total" in pairing.loc["sum", "original_code"]
    assert pairing.loc["sum-r", "edited_code"] != pairing.loc["sum-r", "original_code"]  # v1… become unused names
    summaries = pd.read_csv(results / "summaries.csv", dtype={"program_id": str})
    assert set(summaries["program_id"]) == set(pairing.index)  # every edited program ran
    metrics = json.loads((results / "metrics.json").read_text())
    assert (metrics["probe.edited"], metrics["probe.unchanged"], metrics["probe.excluded"]) == (6, 0, 0)
    # the edited code is a new prompt: no sample of the original run is reused
    assert metrics["generation_cache_hits"] == 0 and metrics["generation_cache_misses"] > 0


def test_compare_prints_the_paired_analysis(
    jobs: dict[str, Any], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    compare_main([str(jobs["none"].parent), str(jobs["rename_identifiers"].parent), "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert "Paired analysis, rename_identifiers: Δ = score of B (edited) − score of A" in out
    assert "pairs: 6; in the humans' direction" in out
    assert "p1's score falls after rename_identifiers in " in out
    table = pd.read_csv(tmp_path / "probe_pairs.csv", dtype={"program_id": str})
    assert len(table) == 6 and set(table["moved"]) <= {True, False}
