"""`mcu-exp tune` reads the calibration and test nonconformity scores of every calibrated
proxy under one naming: each proxy's run writes them to ``scores.csv`` as ``alpha_cal`` /
``alpha_test`` (P2's α_meta included), and tune's reader and nested CV take that file as is."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mcu_exp import names
from mcu_exp.data import HumanLabels
from mcu_exp.outputs import scores_table
from mcu_exp.tune.nested_cv import nested_cv, read_per_program
from support.proxies import compose_cfg, make_proxy, prefill, run_cached, synthetic_dataset, walk_stages

pytestmark = pytest.mark.slow  # whole jobs, stores or encoders: scheduled first under xdist

PROGRAMS = 12


def text(stage_title: str):
    """Summaries that differ by program and sample, so every α is a real BERTScore."""
    return lambda pos, i: f"{stage_title}: method {pos} returns x plus {pos % 4}, variant {i % 3}."


@pytest.mark.parametrize("name", ["p1", "p2"])
def test_tune_reads_the_scores_of_every_calibrated_proxy(tmp_path: Path, name: str) -> None:
    dataset = synthetic_dataset(n_programs=PROGRAMS, n_questions=0)
    cfg = compose_cfg(f"proxy={name}", "proxy.k=4", "proxy.k_cal=2", "experts.m=2", "experts.top_n=1")
    proxy = make_proxy(cfg, dataset, tmp_path)
    assert proxy.calibrated
    for stage in walk_stages(
        proxy, lambda s: [[text(s.title)(p, i) for i in range(r.n)] for p, r in enumerate(s.requests)]
    ):
        prefill(tmp_path, stage.model, stage.requests, text(stage.title))
    done, stats = run_cached(proxy)
    assert stats["generation_cache_misses"] == 0
    outcome = proxy.outcome(done)

    ids = list(outcome.table.index)
    truth = pd.Series([pos % 2 for pos in range(PROGRAMS)], index=ids)
    labels = HumanLabels(
        labels=truth,
        fraction=truth.astype(float),
        correctness=truth.astype(float),
        n_evaluators=truth * 0 + 3,
        dropped=[],
        group="all",
    )
    path = tmp_path / names.SCORES_FILE
    scores_table(outcome, labels).to_csv(path)

    read = read_per_program(path)
    assert read.program_ids == ids and read.labels.tolist() == truth.tolist()
    assert np.allclose(read.alpha_cal, outcome.scores.alpha_cal)
    assert np.allclose(read.alpha_test, outcome.scores.alpha_test)
    result = nested_cv(read, "epsilon", folds=2, trials=4, seed=0)
    assert result.n == PROGRAMS and 0.0 <= result.held_out_f1 <= 1.0
