"""A p0_output job on atoms, in-process (six programs of the real data, the tiny random Llama,
three samples each): the per-program accuracy as score, the answer distribution, the error
alignment as table, metrics and printed lines; a second run finds every sample in the cache."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hydra.core.hydra_config import HydraConfig

from mcu_exp.pipeline import run_job
from support.hydra_job import hydra_job
from support.mlflow_store import seed_store
from support.tiny_llama import model_overrides

pytestmark = [pytest.mark.slow]

PROGRAMS = {"1", "2", "3", "4", "5", "6"}  # three confusing/clean pairs
SAMPLES = 3


def tiny_atoms(folder: Path) -> Path:
    """The three atoms CSV files cut to :data:`PROGRAMS` (an unverified copy: never cached)."""
    source = Path(os.environ["MCU_EXP_DATA"]) / "atoms"
    if not (source / "responses.csv").is_file():
        pytest.skip(f"no local atoms data at {source}")
    folder.mkdir()
    for name, column in (("programs.csv", "id"), ("responses.csv", "program"), ("atom_tags.csv", "program")):
        with (source / name).open(newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            rows = [row for row in reader if row[column] in PROGRAMS]
            header = reader.fieldnames or []
        with (folder / name).open("w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=header)
            writer.writeheader()
            writer.writerows(rows)
    return folder


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, tiny_llama: Path) -> list[dict[str, Any]]:
    """The same job twice: its results folder and what it printed, each time."""
    base = tmp_path_factory.mktemp("output-job")
    outputs = seed_store(base / "outputs")
    data = tiny_atoms(base / "atoms")
    overrides = [
        "debug=quick",
        "dataset=atoms",
        f"dataset.root={data}",
        "proxy=p0_output",
        f"proxy.samples={SAMPLES}",
        "proxy.answer_max_new_tokens=8",
        "proxy.error_resamples=500",
        "proxy.error_permutations=200",
        "reference=null",
        "quiet=true",
        "tracking.sweep_report=false",
        *model_overrides(tiny_llama),
    ]
    patch = pytest.MonkeyPatch()
    found = []
    try:
        patch.setenv("MCU_EXP_OUTPUTS", str(outputs))
        patch.delenv("MLFLOW_TRACKING_URI", raising=False)
        for _ in range(2):
            printed = io.StringIO()
            with hydra_job(*overrides) as cfg, contextlib.redirect_stdout(printed):
                run_job(cfg)
                results = Path(HydraConfig.get().runtime.output_dir) / "results"
            found.append({"results": results, "printed": printed.getvalue()})
    finally:
        patch.undo()
    return found


def test_the_job_scores_each_program_by_its_share_of_right_answers(runs: list[dict[str, Any]]) -> None:
    results = runs[0]["results"]
    table = pd.read_csv(results / "per_program.csv", dtype={"program_id": str}).set_index("program_id")
    assert set(table.index) == PROGRAMS
    assert set(table["score"]).issubset({0.0, 1 / 3, 2 / 3, 1.0})
    assert list(table["label"]) == [int(s >= 0.5) for s in table["score"]]
    answers = pd.read_csv(results / "output_answers.csv", dtype=str, keep_default_na=False)
    assert answers.groupby("program_id")["count"].apply(lambda c: c.astype(int).sum()).to_dict() == dict.fromkeys(
        sorted(PROGRAMS), SAMPLES
    )
    samples = pd.read_csv(results / "output_samples.csv", dtype=str, keep_default_na=False)
    assert len(samples) == SAMPLES * len(PROGRAMS)


def test_the_job_reports_error_alignment(runs: list[dict[str, Any]]) -> None:
    results = runs[0]["results"]
    metrics = json.loads((results / "metrics.json").read_text())
    errors = pd.read_csv(results / "error_alignment.csv", dtype={"program_id": str}, keep_default_na=False)
    assert metrics["errors.programs"] == len(errors) >= 2  # a random model errs; the subjects err on most
    assert metrics["errors.js"] == pytest.approx(errors["js_divergence"].mean())
    assert 0 < metrics["errors.js_p"] <= 1 and metrics["p0_output.programs"] == len(PROGRAMS)
    printed = runs[0]["printed"]
    assert f"Error alignment: {len(errors)} programs where the model and the humans both err" in printed
    assert "JS divergence of wrong answers" in printed


def test_a_second_run_generates_nothing(runs: list[dict[str, Any]]) -> None:
    first, second = (json.loads((r["results"] / "metrics.json").read_text()) for r in runs)
    assert second["generation_cache_misses"] == 0 and second["generation_cache_hits"] == SAMPLES * len(PROGRAMS)
    assert second["errors.js"] == first["errors.js"] and second["errors.js_p"] == first["errors.js_p"]
