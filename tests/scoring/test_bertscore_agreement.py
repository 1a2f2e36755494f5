"""Our batched BERTScore-F1 against bert-score 0.3.13's own BERTScorer on the same encoder.

bert-score is asked with `batch_size=1`, so each of its pairs is matched without padding:
batched, it also matches tokens against padding (similarity 0), which changes a pair's score
whenever a token's every cosine is negative, depending on the batch (see matching.py).
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mcu_exp.scoring import BertScorer
from support.scorer_data import EMPTY, LONG, SUMMARIES, scorer_config

TOL = 1e-5


def _pairs(texts: list[str]) -> tuple[list[str], list[str]]:
    pairs = list(itertools.combinations(texts, 2))
    return [a for a, _ in pairs], [b for _, b in pairs]


def test_f1_agrees_with_bert_score_including_a_truncated_text(scorer: BertScorer, reference: Any) -> None:
    texts = SUMMARIES + [LONG]
    cands, refs = _pairs(texts)
    _, _, expected = reference.score(cands, refs, batch_size=1)
    ours = np.array([scorer.f1_matrix([a], [b])[0, 0] for a, b in zip(cands, refs)])
    assert np.abs(ours - expected.numpy()).max() <= TOL
    assert len(reference._tokenizer.encode(LONG)) > 512  # bert-score truncated it too


def test_truncated_inputs_are_counted(minilm_cfg: Any) -> None:
    scorer = BertScorer(minilm_cfg)
    scorer.ssc([LONG, SUMMARIES[0], SUMMARIES[1]])
    spec = scorer.spec()
    assert (spec["n_truncated"], spec["n_inputs"], spec["max_length"]) == (1, 3, 512)


def test_empty_summary_scores_zero_like_bert_score(
    scorer: BertScorer, reference: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # bert-score 0.3.13 crashes on "" under transformers 5; give its tokenizer the method it
    # calls (what transformers 4 provided) to see what it intends an empty text to score.
    tok = reference._tokenizer
    monkeypatch.setattr(
        tok, "build_inputs_with_special_tokens", lambda ids: [tok.cls_token_id, *ids, tok.sep_token_id], raising=False
    )
    cands = [EMPTY, SUMMARIES[0], EMPTY, "   "]
    refs = [SUMMARIES[0], EMPTY, EMPTY, SUMMARIES[1]]
    _, _, expected = reference.score(cands, refs, batch_size=1)
    ours = np.array([scorer.f1_matrix([a], [b])[0, 0] for a, b in zip(cands, refs)])
    assert expected.tolist() == [0.0, 0.0, 0.0, 0.0]
    assert ours.tolist() == expected.tolist()


@pytest.mark.filterwarnings("ignore:The given NumPy array is not writable")
def test_idf_and_rescaling_agree_with_bert_score(scorer: BertScorer, tmp_path: Path) -> None:
    from bert_score import BERTScorer

    baseline = tmp_path / "baseline.tsv"
    rows = [f"{layer},0.{30 + layer},0.{31 + layer},0.{32 + layer}" for layer in range(7)]
    baseline.write_text("LAYER,P,R,F\n" + "\n".join(rows) + "\n")
    corpus = SUMMARIES + [LONG, SUMMARIES[0]]
    ours = BertScorer(
        scorer_config(idf=True, rescale_with_baseline=True, baseline_path=str(baseline)), idf_sents=corpus
    )
    theirs = BERTScorer(
        model_type=str(scorer.resolved.path),
        num_layers=6,
        idf=True,
        idf_sents=corpus,
        nthreads=0,
        device="cpu",
        lang="en",
        rescale_with_baseline=True,
        baseline_path=str(baseline),
    )
    cands, refs = _pairs(SUMMARIES[:5])
    _, _, expected = theirs.score(cands, refs, batch_size=1)
    got = np.array([ours.f1_matrix([a], [b])[0, 0] for a, b in zip(cands, refs)])
    assert np.abs(got - expected.numpy()).max() <= TOL
    assert ours.spec()["baseline_f"] == pytest.approx(0.38)
    plain = np.array([scorer.f1_matrix([a], [b])[0, 0] for a, b in zip(cands, refs)])
    assert np.abs(got - plain).max() > 1e-3  # idf and rescaling did change the numbers


def test_batched_scores_equal_one_pair_at_a_time(minilm_cfg: Any, scorer: BertScorer) -> None:
    fresh = BertScorer(minilm_cfg)
    matrix = fresh.pairwise_f1(SUMMARIES + [LONG, EMPTY])
    texts = SUMMARIES + [LONG, EMPTY]
    for i, j in itertools.combinations(range(len(texts)), 2):
        assert abs(matrix[i, j] - scorer.f1_matrix([texts[i]], [texts[j]])[0, 0]) <= TOL
