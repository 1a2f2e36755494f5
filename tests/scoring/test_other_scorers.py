"""The scorers besides BERTScore (ROUGE-L F, cosine of mean-pooled MiniLM embeddings) and the
factory that picks a scorer by ``scorer.kind``: values against the reference libraries, the
cache rules BERTScore follows, and every conf/scorer/*.yaml mapped to its class."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mcu_exp.scoring import (
    BertScorer,
    CosineScorer,
    PairScorer,
    RougeLScorer,
    build_scorer,
    pairs,
    scorer_class,
)
from support.scorer_data import EMPTY, REPO, SUMMARIES, scorer_config

EXPECTED_CLASS = {"minilm": BertScorer, "deberta_base": BertScorer, "rougel": RougeLScorer, "cosine": CosineScorer}
TEXTS = SUMMARIES[:5]


@pytest.fixture(scope="module")
def rougel() -> RougeLScorer:
    return RougeLScorer(scorer_config("rougel"))


@pytest.fixture(scope="module")
def cosine() -> CosineScorer:
    return CosineScorer(scorer_config("cosine"))


# ROUGE-L ------------------------------------------------------------------------------------


@pytest.mark.parametrize("use_stemmer", [True, False])
def test_rougel_equals_rouge_score(use_stemmer: bool) -> None:
    from rouge_score import rouge_scorer

    ours = RougeLScorer(scorer_config("rougel", use_stemmer=use_stemmer))
    theirs = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=use_stemmer)
    got = ours.f1_matrix(TEXTS, SUMMARIES)
    want = np.array([[theirs.score(a, b)["rougeL"].fmeasure for b in SUMMARIES] for a in TEXTS])
    np.testing.assert_array_equal(got, want)
    # ROUGE-L F is symmetric to the last bit, so one cache entry serves (a, b) and (b, a).
    swapped = np.array([[theirs.score(b, a)["rougeL"].fmeasure for b in SUMMARIES] for a in TEXTS])
    np.testing.assert_array_equal(swapped, want)


def test_rougel_by_hand() -> None:
    """LCS("returns the sum of all values", "returns sum values") = 3: P = 3/3, R = 3/6,
    F = 2PR/(P+R) = 2/3; "the cat sat on the mat" / "the cat is on a mat": LCS = 4 of 6 each."""
    plain = RougeLScorer(scorer_config("rougel", use_stemmer=False))
    assert plain.ssc(["returns the sum of all values", "returns sum values"]) == pytest.approx(2 / 3)
    assert plain.ssc(["The cat sat on the mat.", "the cat is on a mat"]) == pytest.approx(4 / 6)
    # Stemming makes inflections match: "returns values" vs "return value".
    stemmed = RougeLScorer(scorer_config("rougel"))
    assert plain.ssc(["returns values", "return value"]) == 0.0
    assert stemmed.ssc(["returns values", "return value"]) == 1.0


def test_rougel_identical_is_one_empty_is_zero(rougel: RougeLScorer) -> None:
    m = rougel.pairwise([*TEXTS, EMPTY])
    np.testing.assert_array_equal(np.diag(m)[:-1], 1.0)
    assert not m[-1].any() and not m[:, -1].any()
    np.testing.assert_array_equal(m, m.T)
    assert rougel.pairwise_f1(TEXTS).tolist() == m[:-1, :-1].tolist()


def test_ssc_is_the_mean_over_pairs_i_below_j(rougel: RougeLScorer, cosine: CosineScorer) -> None:
    for scorer in (rougel, cosine):
        m = scorer.pairwise(TEXTS)
        assert scorer.ssc(TEXTS) == pytest.approx(m[np.triu_indices(len(TEXTS), 1)].mean(), abs=1e-12)
        assert scorer.ssc_many([TEXTS, TEXTS[:2]]) == pytest.approx([scorer.ssc(TEXTS), m[0, 1]], abs=1e-12)
        with pytest.raises(ValueError, match="at least 2 texts"):
            scorer.ssc(TEXTS[:1])


def test_rougel_cache_and_spec(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pairs, "BAR_DELAY_S", 0.0)
    first = RougeLScorer(scorer_config("rougel"), cache=tmp_path, progress=True)
    want = first.pairwise(TEXTS)
    assert first.model_loaded and "score: 100%" in capfd.readouterr().err
    first.close()
    again = RougeLScorer(scorer_config("rougel"), cache=tmp_path, progress=True)
    np.testing.assert_array_equal(again.pairwise(TEXTS[::-1]), want[::-1, ::-1])
    assert not again.model_loaded and "score" not in capfd.readouterr().err
    unstemmed = RougeLScorer(scorer_config("rougel", use_stemmer=False), cache=tmp_path)
    assert unstemmed.spec_hash() != again.spec_hash()
    unstemmed.pairwise(TEXTS)
    assert unstemmed.model_loaded  # a changed config never reuses the other's scores
    spec = again.spec()
    assert spec["kind"] == "rougel" and spec["use_stemmer"] is True and spec["versions"]["rouge-score"]


# Cosine -------------------------------------------------------------------------------------


def _direct_cosine(path: Path, a: str, b: str) -> float:
    """sentence-transformers' recipe for all-MiniLM-L6-v2, written out with transformers."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(path))
    model = AutoModel.from_pretrained(str(path)).eval()
    batch = tokenizer([a, b], padding=True, truncation=True, return_tensors="pt")
    with torch.inference_mode():
        hidden = model(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).float()
    mean = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
    unit = torch.nn.functional.normalize(mean, dim=-1)
    return float(unit[0] @ unit[1])


def test_cosine_equals_a_direct_computation(cosine: CosineScorer) -> None:
    a, b = SUMMARIES[0], SUMMARIES[1]
    assert cosine.ssc([a, b]) == pytest.approx(_direct_cosine(cosine.resolved.path, a, b), abs=1e-5)


def test_cosine_identical_is_one_and_symmetric(cosine: CosineScorer) -> None:
    m = cosine.pairwise([*TEXTS, TEXTS[0], EMPTY])
    np.testing.assert_allclose(np.diag(m)[:-1], 1.0, atol=1e-12)
    assert m[0, len(TEXTS)] == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_array_equal(m, m.T)
    assert not m[-1].any()  # a blank text scores 0, as under BERTScore
    assert (np.abs(m) <= 1.0).all()
    cross = cosine.f1_matrix(TEXTS[:2], TEXTS)
    np.testing.assert_array_equal(cross, m[:2, : len(TEXTS)])
    np.testing.assert_array_equal(cosine.f1_matrix(TEXTS, TEXTS[:2]), cross.T)


def test_cosine_second_scorer_is_served_from_the_cache(tmp_path: Path) -> None:
    first = CosineScorer(scorer_config("cosine"), cache=tmp_path)
    want = first.pairwise(TEXTS)
    assert first.model_loaded
    first.close()
    second = CosineScorer(scorer_config("cosine"), cache=tmp_path)
    np.testing.assert_array_equal(second.pairwise(TEXTS), want)
    assert second.ssc(TEXTS[1:]) == pytest.approx(want[1:, 1:][np.triu_indices(4, 1)].mean())
    assert not second.model_loaded
    assert second.spec()["n_inputs"] == len(TEXTS)  # lengths come back from the cache too
    # Same encoder, other measure or layer: other spec hash, nothing reused.
    bert = BertScorer(scorer_config("minilm"), cache=tmp_path)
    assert bert.spec_hash() != second.spec_hash()
    assert CosineScorer(scorer_config("cosine", num_layers=5)).spec_hash() != second.spec_hash()
    assert CosineScorer(scorer_config("cosine", batch_size=2)).spec_hash() == second.spec_hash()


def test_cosine_refuses_bertscore_only_settings() -> None:
    with pytest.raises(ValueError, match="scorer.idf"):
        CosineScorer(scorer_config("cosine", idf=True))


# Factory ------------------------------------------------------------------------------------


def test_every_scorer_yaml_has_its_class() -> None:
    names = sorted(p.stem for p in (REPO / "conf" / "scorer").glob("*.yaml"))
    assert names == sorted(EXPECTED_CLASS)
    for name in names:
        assert scorer_class(scorer_config(name)) is EXPECTED_CLASS[name], name


@pytest.mark.parametrize("name", ["minilm", "rougel", "cosine"])
def test_build_scorer_gives_the_interface_p1_and_p2_use(name: str, tmp_path: Path) -> None:
    scorer = build_scorer(scorer_config(name), cache=tmp_path, idf_sents=None, progress=False)
    assert type(scorer) is EXPECTED_CLASS[name] and isinstance(scorer, PairScorer)
    m = scorer.pairwise_f1(TEXTS[:3])
    assert m.shape == (3, 3) and scorer.f1_matrix(TEXTS[:3], TEXTS[:1]).shape == (3, 1)
    assert scorer.spec()["spec_hash"] == scorer.spec_hash() and scorer.n_truncated == 0
    scorer.close()


def test_build_scorer_falls_back_for_an_absent_bertscore_model() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the loud fallback warning, where it falls back
        scorer = build_scorer(scorer_config("deberta_base", allow_fallback=True))
    assert isinstance(scorer, BertScorer)


def test_unknown_kind_is_named() -> None:
    cfg: Any = scorer_config("minilm")
    cfg.kind = "bleu"
    with pytest.raises(ValueError, match=r"unknown scorer kind 'bleu' \(scorer.kind\).*bertscore, rougel, cosine"):
        build_scorer(cfg)


def test_pairwise_many_scores_only_pairs_i_below_j(rougel: RougeLScorer, tmp_path: Path) -> None:
    scorer = RougeLScorer(scorer_config("rougel"), cache=tmp_path)
    ssc = scorer.ssc_many([TEXTS, TEXTS[1:3]])
    n_cached = len(scorer.cache)
    first, second = scorer.pairwise_many([TEXTS, TEXTS[1:3]])
    assert len(scorer.cache) == n_cached == 10  # the 5·4/2 pairs i < j; no self-pairs scored
    full = rougel.pairwise(TEXTS)
    np.testing.assert_array_equal(first, full)
    np.testing.assert_array_equal(second, full[1:3, 1:3])
    assert ssc[0] == first[np.triu_indices(len(TEXTS), 1)].mean()
