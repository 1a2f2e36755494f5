"""The on-disk score cache: keys, a warm second job that never loads the encoder, partial misses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mcu_exp.scoring import BertScorer, ScoreCache, pair_key, text_key
from support.scorer_data import LONG, REPO, SUMMARIES, scorer_config

GROUPS = [SUMMARIES[:4], SUMMARIES[3:], [LONG, SUMMARIES[0], SUMMARIES[5]]]


def test_keys_are_canonical_json_hashes() -> None:
    import hashlib

    a, b = 'zeta "quoted" ü', "alpha\nline"
    canonical = json.dumps({"spec": "h", "a": b, "b": a}, sort_keys=True, separators=(",", ":"))
    assert pair_key("h", a, b) == hashlib.sha256(canonical.encode()).digest()
    assert pair_key("h", a, b) == pair_key("h", b, a)
    assert pair_key("h", a, b, symmetric=False) != pair_key("h", b, a, symmetric=False)
    assert pair_key("h", a, b) != pair_key("h2", a, b)
    assert text_key("h", a) != text_key("h", b)


def test_spec_hash_names_everything_that_changes_scores(minilm_cfg: Any) -> None:
    base = BertScorer(minilm_cfg).spec_hash()
    assert BertScorer(minilm_cfg).spec_hash() == base
    assert BertScorer(scorer_config(num_layers=5)).spec_hash() != base
    assert BertScorer(scorer_config(idf=True), idf_sents=SUMMARIES).spec_hash() != base
    other_corpus = BertScorer(scorer_config(idf=True), idf_sents=SUMMARIES[:3]).spec_hash()
    assert other_corpus != BertScorer(scorer_config(idf=True), idf_sents=SUMMARIES).spec_hash()
    assert BertScorer(scorer_config(batch_size=3)).spec_hash() == base


_WARM_JOB = """
import json, sys
from support.scorer_data import scorer_config
from mcu_exp.scoring import BertScorer
s = BertScorer(scorer_config(), cache=sys.argv[1])
values = s.ssc_many(json.loads(sys.argv[2]))
spec = s.spec()
print(json.dumps({"values": values, "loaded": s.model_loaded, "n_truncated": spec["n_truncated"],
                  "modules": sorted(m for m in ("torch", "transformers") if m in sys.modules)}))
"""


def test_second_job_is_served_from_cache_without_the_encoder(minilm_cfg: Any, tmp_path: Path) -> None:
    cold = BertScorer(minilm_cfg, cache=tmp_path)
    expected = cold.ssc_many(GROUPS)
    assert cold.model_loaded and cold.spec()["n_truncated"] == 1
    cold.close()
    job = subprocess.run(
        [sys.executable, "-c", _WARM_JOB, str(tmp_path), json.dumps(GROUPS)],
        cwd=Path(__file__).parent,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": f"{REPO / 'src'}:{REPO / 'tests'}", "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"},
    )
    assert job.returncode == 0, job.stderr
    warm = json.loads(job.stdout.strip().splitlines()[-1])
    assert warm == {"values": expected, "loaded": False, "n_truncated": 1, "modules": []}


def test_only_missing_pairs_are_computed(minilm_cfg: Any, tmp_path: Path) -> None:
    first = BertScorer(minilm_cfg, cache=tmp_path)
    first.ssc(SUMMARIES[:4])
    first.f1_matrix(SUMMARIES[:2], SUMMARIES[4:6])
    assert len(first.cache) == 6 + 4
    second = BertScorer(minilm_cfg, cache=tmp_path)
    matrix = second.f1_matrix(SUMMARIES[:2], SUMMARIES[4:7])  # only the column SUMMARIES[6] is new
    assert len(second.cache) == 6 + 4 + 2
    assert set(second._memo) == {SUMMARIES[0], SUMMARIES[1], SUMMARIES[6]}
    again = BertScorer(minilm_cfg, cache=tmp_path)
    assert np.array_equal(again.f1_matrix(SUMMARIES[:2], SUMMARIES[4:7]), matrix)
    assert not again.model_loaded
    assert np.array_equal(
        again.pairwise_f1(SUMMARIES[:4])[np.triu_indices(4, 1)], first.pairwise_f1(SUMMARIES[:4])[np.triu_indices(4, 1)]
    )


def test_unusable_cache_file_fails_clearly(tmp_path: Path) -> None:
    (tmp_path / "bertscore.sqlite").write_text("not a database")
    with pytest.raises(ValueError, match="bertscore.sqlite: not a usable score cache"):
        ScoreCache.in_dir(tmp_path)


def test_scores_read_once_come_from_memory_until_the_file_is_replaced(tmp_path: Path) -> None:
    """A sweep's jobs read the same pairs: once read, a score is served from memory (an entry
    never changes once stored), while a cache file moved aside and made again is read afresh."""
    import shutil
    import sqlite3

    path = tmp_path / "bertscore.sqlite"
    keys = [pair_key("spec", "a", "b"), pair_key("spec", "a", "c")]
    with ScoreCache(path) as cache:
        cache.put_scores([(keys[0], 0.5), (keys[1], 0.25)])
        assert cache.get_scores(keys) == {keys[0]: 0.5, keys[1]: 0.25}
    with sqlite3.connect(path) as db:  # behind the cache's back: not how entries ever change
        db.execute("DELETE FROM pair_scores")
    with ScoreCache(path) as cache:
        assert cache.get_scores(keys) == {keys[0]: 0.5, keys[1]: 0.25}  # no query for what was read
    shutil.move(path, tmp_path / "aside.sqlite")
    with ScoreCache(path) as cache:
        assert cache.get_scores(keys) == {}
