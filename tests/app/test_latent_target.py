"""``labels.target=latent``: a job scores its proxy against each program's latent
understandability from a crossed reader × program model, per reader group too, and says so."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from scipy.stats import spearmanr
from sklearn.metrics import roc_auc_score
from test_published_numbers import job, run_dir

from mcu_exp import names
from mcu_exp.ceiling.latent import fit_latent, latent_labels
from mcu_exp.data import load_dataset
from mcu_exp.data.labels import label_evaluations
from mcu_exp.job.validate import check_config
from mcu_exp.pipeline import run_job, typed_config

pytestmark = pytest.mark.slow  # a whole job


def test_a_job_against_the_latent_target(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outputs = tmp_path / "outputs"
    cfg = job(outputs, "labels.target=latent", "evaluation.subgroups=[professional]")
    run_job(cfg)
    printed = capsys.readouterr().out
    flat = " ".join(printed.split())
    results = run_dir(outputs) / names.RESULTS_DIR
    metrics = json.loads((results / names.METRICS_FILE).read_text())
    per_program = pd.read_csv(results / names.PER_PROGRAM_FILE, index_col=0)

    fit = fit_latent(label_evaluations(load_dataset(typed_config(cfg).dataset)))
    truth = latent_labels(fit.understandability)
    common = [p for p in truth.index if p in per_program.index]
    score = per_program.loc[common, "score"]
    assert metrics["auc_score"] == pytest.approx(roc_auc_score(truth[common], score), abs=1e-12)
    assert metrics["spearman"] == pytest.approx(spearmanr(score, fit.understandability[common]).statistic, abs=1e-9)
    assert metrics["latent.reliability"] == pytest.approx(fit.reliability)
    assert "group.professional.latent.reliability" in metrics
    assert not any(key.startswith("ceiling.") for key in metrics)  # the bounds describe observed labels

    assert "human labels (latent understandability, above the median" in flat.lower()
    assert f"reliability of the latent values {fit.reliability:.3f}" in flat
    assert f"the latent target's reliability is {fit.reliability:.3f}" in flat


def test_a_misspelt_target_is_one_line(tmp_path: Path) -> None:
    cfg = typed_config(job(tmp_path / "outputs", "labels.target=latnet"))
    with pytest.raises(ValueError, match=r"labels.target='latnet': expected one of observed, latent"):
        check_config(cfg)
