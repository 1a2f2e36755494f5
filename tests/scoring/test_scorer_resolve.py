"""Finding the encoder: clear one-line errors when it is absent, fallback only when allowed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mcu_exp.scoring import BertScorer, ScorerUnavailableError
from mcu_exp.scoring.resolve import max_length
from support.scorer_data import LONG, SUMMARIES, scorer_config


def _one_line(err: pytest.ExceptionInfo[BaseException]) -> str:
    message = str(err.value)
    assert "\n" not in message
    return message


def test_missing_local_folder(tmp_path: Path) -> None:
    cfg = scorer_config(model=str(tmp_path / "no-such-model"))  # a path wins over the package
    with pytest.raises(ScorerUnavailableError) as err:
        BertScorer(cfg)
    assert "scorer.model: folder" in _one_line(err) and "no-such-model" in str(err.value)


def test_hub_model_not_in_cache_says_how_to_get_it() -> None:
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    cfg = scorer_config("deberta_base", model="mcu-exp-tests/absent-encoder")
    with pytest.raises(ScorerUnavailableError) as err:
        BertScorer(cfg)
    assert "huggingface-cli download mcu-exp-tests/absent-encoder" in _one_line(err)


def test_paper_encoder_absent_says_how_to_get_it() -> None:
    from huggingface_hub import try_to_load_from_cache

    if isinstance(try_to_load_from_cache("microsoft/deberta-base", "config.json"), str):
        pytest.skip("microsoft/deberta-base is in the local cache here")
    with pytest.raises(ScorerUnavailableError) as err:
        BertScorer(scorer_config("deberta_base"))
    assert "huggingface-cli download microsoft/deberta-base" in _one_line(err)


def test_package_not_installed() -> None:
    with pytest.raises(ScorerUnavailableError) as err:
        BertScorer(scorer_config(package="mcu-exp-no-such-package"))
    assert "pip install mcu-exp-no-such-package" in _one_line(err)


def test_no_fallback_unless_allowed() -> None:
    absent = {"model": "mcu-exp-tests/absent-encoder"}
    cfg = scorer_config("deberta_base", **absent)
    assert cfg.fallback["name"] == "minilm" and not cfg.allow_fallback  # composed, but off
    with pytest.raises(ScorerUnavailableError):
        BertScorer(cfg)
    with pytest.raises(ValueError, match="scorer.fallback holds no scorer config"):
        BertScorer(scorer_config("deberta_base", allow_fallback=True, fallback=None, **absent))


def test_fallback_warns_and_the_spec_says_which_scorer_ran(scorer: BertScorer) -> None:
    cfg = scorer_config("deberta_base", model="mcu-exp-tests/absent-encoder", allow_fallback=True)
    with pytest.warns(RuntimeWarning, match="SCORER FALLBACK"):
        fallen = BertScorer(cfg)
    spec = fallen.spec()
    assert (spec["name"], spec["fallback_from"], spec["layer"]) == ("minilm", "deberta_base", 6)
    assert fallen.spec_hash() == scorer.spec_hash()


def test_rescaling_needs_a_baseline_for_local_models() -> None:
    with pytest.raises(ValueError, match="scorer.baseline_path") as err:
        BertScorer(scorer_config(rescale_with_baseline=True))
    _one_line(err)
    with pytest.raises(ValueError, match="does not exist"):
        BertScorer(scorer_config(rescale_with_baseline=True, baseline_path="/nonexistent.tsv"))


def test_layer_out_of_range() -> None:
    with pytest.raises(ValueError, match="scorer.num_layers: 9 is outside 0..6"):
        BertScorer(scorer_config(num_layers=9))


def test_tokenizer_without_a_sane_limit_truncates_at_the_position_limit(scorer: BertScorer, tmp_path: Path) -> None:
    """A tokenizer saved without model_max_length (microsoft/deberta-base's) reports ~1e30."""
    folder = tmp_path / "encoder"
    folder.mkdir()
    for file in scorer.resolved.path.iterdir():
        if file.is_file() and file.name != "tokenizer_config.json":
            (folder / file.name).symlink_to(file)
    settings = json.loads((scorer.resolved.path / "tokenizer_config.json").read_text())
    del settings["model_max_length"]
    (folder / "tokenizer_config.json").write_text(json.dumps(settings))
    assert max_length(folder, {"max_position_embeddings": 384}) == 384
    assert max_length(folder, {}) == 512
    from bert_score.utils import get_tokenizer, sent_encode

    with pytest.raises(OverflowError):  # what bert-score itself does with this tokenizer
        sent_encode(get_tokenizer(str(folder)), LONG)
    local = BertScorer(scorer_config(model=str(folder)))
    texts = [LONG, SUMMARIES[0]]
    assert local.f1_matrix(texts, texts) == pytest.approx(scorer.f1_matrix(texts, texts), abs=1e-6)
    assert local.spec()["n_truncated"] == 1
    assert local.spec_hash() != scorer.spec_hash()  # another folder's files, another identity
