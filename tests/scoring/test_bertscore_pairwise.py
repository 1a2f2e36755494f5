"""Pairwise F1, SSC and mean-to-reference: symmetry and consistency between the entry points."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

from mcu_exp.scoring import BertScorer
from mcu_exp.scoring.matching import greedy_f1, pad
from support.scorer_data import EMPTY, LONG, SUMMARIES, scorer_config


def test_pairwise_matrix_is_symmetric_with_unit_diagonal(scorer: BertScorer) -> None:
    matrix = scorer.pairwise_f1(SUMMARIES)
    assert matrix.shape == (len(SUMMARIES), len(SUMMARIES))
    assert np.array_equal(matrix, matrix.T)
    assert np.allclose(np.diag(matrix), 1.0, atol=1e-5)
    off = matrix[~np.eye(len(SUMMARIES), dtype=bool)]
    assert off.min() > 0 and off.max() < 0.99


def test_f1_is_symmetric_before_the_cache_canonicalises_pairs(minilm_cfg: Any) -> None:
    """P and R swap when the texts do, with idf on as well: canonical cache keys are safe."""
    for cfg, idf_sents in ((minilm_cfg, None), (scorer_config(idf=True), SUMMARIES)):
        scorer = BertScorer(cfg, idf_sents=idf_sents)
        a = pad(scorer.embed(SUMMARIES[:4] + [LONG]))
        b = pad(scorer.embed(SUMMARIES[3:]))
        assert np.allclose(greedy_f1(a, b).numpy(), greedy_f1(b, a).numpy().T, atol=1e-6)
        block = greedy_f1(a).numpy()
        assert np.allclose(block, greedy_f1(a, a).numpy(), atol=1e-6)


def test_ssc_is_the_mean_over_pairs(scorer: BertScorer) -> None:
    matrix = scorer.pairwise_f1(SUMMARIES)
    expected = np.mean([matrix[i, j] for i, j in itertools.combinations(range(len(SUMMARIES)), 2)])
    assert scorer.ssc(SUMMARIES) == pytest.approx(expected, abs=1e-12)


def test_ssc_many_matches_ssc_per_group(minilm_cfg: Any) -> None:
    groups = [SUMMARIES[:3], SUMMARIES[2:6], [SUMMARIES[0], SUMMARIES[0], EMPTY]]
    together = BertScorer(minilm_cfg).ssc_many(groups)
    alone = [BertScorer(minilm_cfg).ssc(g) for g in groups]
    assert together == pytest.approx(alone, abs=1e-6)
    assert together[2] == pytest.approx((1.0 + 0.0 + 0.0) / 3, abs=1e-5)


def test_f1_matrix_is_symmetric_in_its_arguments(scorer: BertScorer) -> None:
    a, b = SUMMARIES[:3], SUMMARIES[3:]
    forward, backward = scorer.f1_matrix(a, b), scorer.f1_matrix(b, a)
    assert forward.shape == (3, len(b))
    assert np.array_equal(forward, backward.T)
    # a column (P2: the summaries against r*) does not depend on the other columns scored with it
    alone = scorer.f1_matrix(a, [SUMMARIES[1]])[:, 0]
    assert np.array_equal(alone, scorer.f1_matrix(a, SUMMARIES[1:2] + b)[:, 0])
    # a paraphrase pair is closer than an unrelated one
    assert forward[0, 0] < scorer.f1_matrix([SUMMARIES[0]], [SUMMARIES[1]])[0, 0]


def test_empty_text_scores_zero_against_everything(scorer: BertScorer) -> None:
    assert scorer.f1_matrix([EMPTY, " \n"], SUMMARIES + [EMPTY]).tolist() == [[0.0] * 8] * 2


def test_bad_calls_fail_clearly(scorer: BertScorer, minilm_cfg: Any) -> None:
    with pytest.raises(ValueError, match="at least 2 texts"):
        scorer.ssc([SUMMARIES[0]])
    with pytest.raises(ValueError, match="idf_sents"):
        BertScorer(scorer_config(idf=True))
