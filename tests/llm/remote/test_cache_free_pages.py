"""The SQLite caches keep no free pages once closed: a remote stage leases every sample it
generates and drops the leases at its end, which left a third of the file on SQLite's free
list (the remote bench's cache: 457 bytes a judge sample, 200 without them). The cache is
filled as the bench's stage (a) fills it: the real OpenAI client against the fake API,
through :class:`CachedGenerator`."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from mcu_exp.llm import CachedGenerator, request_for
from mcu_exp.llm.cache import CACHE_FILE, GenerationCache
from mcu_exp.llm.claims import ClaimOwner
from mcu_exp.llm.contract import Sample
from mcu_exp.proxies.prompts import judge_messages
from mcu_exp.scoring.score_cache import ScoreCache
from support.fake_api import FakeServer, model_cfg

MAX_FREE_SHARE = 0.01


def free_share(path: Path) -> tuple[int, int]:
    """(free-list pages, pages) of the SQLite file at ``path``, its WAL folded in."""
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return conn.execute("PRAGMA freelist_count").fetchone()[0], conn.execute("PRAGMA page_count").fetchone()[0]


def test_a_remote_stage_leaves_no_free_pages_in_its_cache(
    fake_server: FakeServer, planted_keys: str, tmp_path: Path
) -> None:
    cfg = model_cfg("openai", fake_server, n_per_request=10, max_concurrency=8)
    requests = [
        request_for(cfg, judge_messages("int f() { return 1; }", "Java", f"Returns one (summary {i})."), n=10, seed=0)
        for i in range(150)
    ]
    generator = CachedGenerator(cfg, tmp_path, progress=False)
    results = generator.generate(requests)
    generator.close()
    assert sum(len(r.texts) for r in results) == 1500
    free, pages = free_share(tmp_path / CACHE_FILE)
    assert free <= MAX_FREE_SHARE * pages, f"{free} of {pages} pages free"
    with GenerationCache(tmp_path / CACHE_FILE) as cache:  # every sample is still there
        assert len(cache) == 1500


def test_dropped_leases_are_given_back_on_close_and_a_cache_made_before_still_opens(tmp_path: Path) -> None:
    path = tmp_path / CACHE_FILE
    owner = ClaimOwner()
    keys = [f"{i:064x}" for i in range(5000)]
    with GenerationCache(path) as cache:
        cache.put_many([(key, Sample("x", "stop", 1, 1), {"i": key}) for key in keys[:10]])
        assert cache.claim(keys, owner, 60.0, 0.0) == set(keys[10:])  # the stage's leases
        cache.release(owner)  # its end
    free, pages = free_share(path)
    assert free <= MAX_FREE_SHARE * pages, f"{free} of {pages} pages free"
    legacy = tmp_path / "legacy" / CACHE_FILE  # a file made without auto_vacuum: opened and closed as before
    legacy.parent.mkdir()
    with sqlite3.connect(legacy) as conn:
        conn.execute("CREATE TABLE t (v)")
    with GenerationCache(legacy) as cache:
        cache.put_many([(key, Sample("x", "stop", 1, 1), {"i": key}) for key in keys[:10]])
        assert len(cache) == 10
    with ScoreCache(tmp_path / "bertscore.sqlite") as scores:
        assert len(scores) == 0
