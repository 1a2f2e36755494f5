"""The shared generation and score cache on a real PostgreSQL (``cache.url``): the same entries
and leases as the SQLite file, processes that share one request set paying for each request
once, a SIGKILLed run resumed without losing or redoing anything, ``mcu-exp cache
import/export`` between a SQLite folder and the store, and a whole job on a second "machine"
(another cache.dir) served from the store. The fake OpenAI server is the one of
tests/llm/remote, driven by the real ``openai`` client."""

from __future__ import annotations

import dataclasses
import itertools
import json
import multiprocessing as mp
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from mcu_exp.config import ModelConfig
from mcu_exp.llm import CachedGenerator, GenerationRequest, Message
from mcu_exp.llm.cache import CACHE_FILE, ClaimOwner, GenerationCache, request_parts, sample_keys
from mcu_exp.llm.contract import Sample
from mcu_exp.scoring.score_cache import ScoreCache
from support import fake_api
from support.postgres import PostgresCluster

REPO = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).with_name("cache_worker.py")
_names = itertools.count()


@pytest.fixture
def store(postgres_cluster: PostgresCluster) -> str:
    """The URL of a new, empty database on the session's cluster."""
    return postgres_cluster.database(f"cache_{os.getpid()}_{next(_names)}")


@pytest.fixture
def server() -> Any:
    api = fake_api.FakeServer().start()
    try:
        yield api
    finally:
        api.stop()


def cfg_for(server: Any) -> ModelConfig:
    return ModelConfig(
        name="fake-openai",
        backend="openai",
        model_id="fake-model",
        base_url=server.url + "/v1",
        timeout_s=30.0,
        max_concurrency=2,
        n_per_request=1,
        max_new_tokens=16,
        max_retries=2,
        backoff_initial_s=0.01,
        backoff_max_s=0.02,
    )


def spec(count: int, n: int = 2) -> list[list[Any]]:
    return [[f"program {i}", n, 7] for i in range(count)]


def requests_of(spec_: list[list[Any]]) -> list[GenerationRequest]:
    return [GenerationRequest(messages=(Message("user", p),), n=n, seed=s, max_new_tokens=16) for p, n, s in spec_]


def worker(server: Any, cache_dir: Path, url: str, spec_: list[list[Any]]) -> subprocess.Popen[str]:
    env = {**os.environ, "OPENAI_API_KEY": fake_api.PLANTED_KEY}
    return subprocess.Popen(
        [sys.executable, str(WORKER), server.url + "/v1", str(cache_dir), url, json.dumps(spec_)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def prompts_sent(server: Any) -> Counter[str]:
    """How many sample requests the server received per (prompt, sample index)."""
    return Counter((fake_api._prompt_of(r.path, r.body), json.dumps(r.body.get("seed"))) for r in server.log)


def exercise(cache: GenerationCache) -> dict[str, Any]:
    """The same writes on any store, and everything they leave behind."""
    ident = {"backend": "fake", "model": "m"}
    req = GenerationRequest(messages=(Message("user", "hi é\n\t"),), n=4, seed=3)
    keys = sample_keys(ident, req, range(4))
    written = cache.put_responses(
        [
            (
                request_parts(ident, req),
                [
                    (keys[0], 0, Sample("first", "stop", 5, 2)),
                    (keys[0], 0, Sample("second put of one key", "stop", 5, 2)),
                    (keys[1], 1, Sample(" \t\n", "stop", 5, 2)),  # empty: a failure, never a hit
                    (keys[2], 2, Sample("", "error", 0, 0)),
                ],
            )
        ]
    )
    again = cache.put(keys[0], Sample("a later put", "stop", 1, 1))
    fixed = cache.put(keys[1], Sample("retried fine", "length", 5, 9))
    return {
        "written": (written, again, fixed),
        "found": {keys.index(k): s for k, s in cache.get_many(keys).items()},
        "failures": {keys.index(k): s for k, s in cache.failures_since(keys, 0.0).items()},
        "len": len(cache),
        "samples": sorted((keys.index(r[0]), r[1], r[6]) for rows in cache.rows("samples") for r in rows),
        "requests": [r for rows in cache.rows("requests") for r in rows],
    }


def test_the_postgresql_store_keeps_exactly_what_the_sqlite_file_keeps(store: str, tmp_path: Path) -> None:
    with GenerationCache(tmp_path / CACHE_FILE) as sqlite, GenerationCache(store) as shared:
        assert (sqlite.dialect, shared.dialect) == ("sqlite", "postgresql")
        on_sqlite, on_postgres = exercise(sqlite), exercise(shared)
    assert on_postgres == on_sqlite
    assert on_postgres["written"] == (1, False, True)
    assert on_postgres["found"][0].text == "first" and on_postgres["found"][1].text == "retried fine"
    assert set(on_postgres["failures"]) == {2}
    with ScoreCache(tmp_path / "bertscore.sqlite") as sqlite_scores, ScoreCache(store) as shared_scores:
        for scores in (sqlite_scores, shared_scores):
            scores.put_scores([(b"\x00pair", 0.25), (b"\xffpair", 0.75)])
            scores.put_scores([(b"\x00pair", 0.99)])  # a key present keeps its value
            scores.put_lengths([(b"text", 12, True)])
        assert shared_scores.get_scores([b"\x00pair", b"\xffpair", b"absent"]) == {b"\x00pair": 0.25, b"\xffpair": 0.75}
        assert shared_scores.get_scores([b"\x00pair", b"\xffpair"]) == sqlite_scores.get_scores(
            [b"\x00pair", b"\xffpair"]
        )
        assert shared_scores.get_lengths([b"text"]) == sqlite_scores.get_lengths([b"text"]) == {b"text": (12, True)}


def test_leases_hold_across_hosts_until_they_expire(store: str) -> None:
    keys = [f"{i:064x}" for i in range(6)]
    here, elsewhere, later = ClaimOwner(), ClaimOwner(host="node-b", pid=1), ClaimOwner()
    dead_here = ClaimOwner(pid=2**22 + 12345)  # no such process on this host
    with GenerationCache(store) as cache:
        assert cache.claim(keys[:2], elsewhere, ttl_s=60, since=0) == set(keys[:2])
        assert cache.claim(keys[2:4], dead_here, ttl_s=60, since=0) == set(keys[2:4])
        assert cache.claim(keys[4:], elsewhere, ttl_s=0.2, since=0) == set(keys[4:])
        time.sleep(0.3)
        # Another host's live lease holds (its pid means nothing here); a dead process of this
        # host frees its leases at once; an expired lease is free whoever held it.
        assert cache.claim(keys, here, ttl_s=60, since=0) == set(keys[2:])
        assert cache.holders(keys) == sorted({"node-b:1", f"{socket.gethostname()}:{here.pid}"})
        cache.put(keys[2], Sample("done", "stop", 1, 1))
        cache.release(here)
        assert cache.claim(keys, later, ttl_s=60, since=0) == set(keys[3:])  # a stored sample is never leased


def _claim_all(url: str, keys: list[str], start: Any, out: Any) -> None:
    with GenerationCache(url) as cache:
        owner = ClaimOwner()
        start.wait()
        mine: set[str] = set()
        for i in range(0, len(keys), 50):
            mine |= cache.claim(keys[i : i + 50], owner, ttl_s=60, since=0)
        out.put(sorted(mine))


def test_processes_claiming_the_same_keys_at_once_split_them(store: str) -> None:
    keys = [f"{i:064x}" for i in range(1500)]
    ctx = mp.get_context("fork")
    start, out = ctx.Event(), ctx.Queue()
    procs = [
        ctx.Process(target=_claim_all, args=(store, list(reversed(keys)) if i % 2 else keys, start, out))
        for i in range(3)
    ]
    for proc in procs:
        proc.start()
    start.set()
    got = [set(out.get(timeout=120)) for _ in procs]
    for proc in procs:
        proc.join(timeout=30)
        assert proc.exitcode == 0
    assert sum(len(g) for g in got) == len(keys)  # nobody leased a key another holds
    assert set().union(*got) == set(keys)
    assert sum(1 for g in got if g) >= 2  # they really ran at the same time


def test_two_processes_on_one_request_set_send_each_request_once(store: str, server: Any, tmp_path: Path) -> None:
    work = spec(12)
    server.push(*[fake_api.Action(delay_s=0.15) for _ in range(4)])  # slow first answers: the runs overlap
    first = worker(server, tmp_path / "node-a", store, work)
    time.sleep(0.3)
    second = worker(server, tmp_path / "node-b", store, work)
    outs = [proc.communicate(timeout=120) for proc in (first, second)]
    for proc, (_stdout, stderr) in zip((first, second), outs, strict=True):
        assert proc.returncode == 0, stderr[-3000:]
    a, b = (json.loads(stdout.splitlines()[-1]) for stdout, _ in outs)
    assert a["texts"] == b["texts"] and len(a["texts"]) == 12 and all(len(t) == 2 for t in a["texts"])
    sent = prompts_sent(server)
    assert len(server.log) == 24 and set(sent.values()) == {1}  # n_per_request=1: 12 prompts x 2 samples
    assert a["stats"]["generated"] + b["stats"]["generated"] == 24
    assert b["stats"]["from_peers"] > 0 or a["stats"]["from_peers"] > 0
    assert not (tmp_path / "node-a" / CACHE_FILE).exists()  # no SQLite file beside the shared store


def test_a_killed_run_resumes_from_the_store_without_losing_or_redoing_a_sample(
    store: str, server: Any, tmp_path: Path
) -> None:
    work = spec(20)
    server.push(*[fake_api.Action(delay_s=0.1) for _ in range(40)])
    proc = worker(server, tmp_path, store, work)
    deadline = time.monotonic() + 60
    with GenerationCache(store) as cache:
        while len(cache) < 10 and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        kept = {r[0]: (r[1], r[5]) for rows in cache.rows("samples") for r in rows}
        assert 10 <= len(kept) < 40
        answered_before = len(server.answered())
        sent_before = len(server.log)

        rerun = worker(server, tmp_path, store, work)
        stdout, stderr = rerun.communicate(timeout=120)
        assert rerun.returncode == 0, stderr[-3000:]
        result = json.loads(stdout.splitlines()[-1])
        after = {r[0]: (r[1], r[5]) for rows in cache.rows("samples") for r in rows}
    assert len(after) == 40 == cache_total(work)
    assert {k: after[k] for k in kept} == kept  # every stored sample kept as it was (text and time)
    assert result["stats"]["hits"] == len(kept)
    # The rerun asked only for what was not stored: at most the answers in flight at the kill again.
    assert len(server.log) - sent_before == 40 - len(kept)
    assert answered_before >= len(kept)


def cache_total(spec_: list[list[Any]]) -> int:
    return sum(n for _, n, _ in spec_)


def mcu_exp(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcu_exp", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )


def cache_command(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``mcu-exp cache ARGS`` run in this process (its parser, copy and messages): exit code, stdout, stderr."""
    from mcu_exp.cli.cache import main

    capsys.readouterr()
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_import_then_export_moves_every_entry_and_a_second_copy_adds_nothing(
    store: str, server: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    laptop, cluster_copy = tmp_path / "laptop", tmp_path / "back"
    generator = CachedGenerator(cfg_for(server), laptop, progress=False)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_API_KEY", fake_api.PLANTED_KEY)
        texts = [r.texts for r in generator.generate(requests_of(spec(5)))]
    generator.close()
    with ScoreCache.in_dir(laptop) as scores:
        scores.put_scores([(bytes([i]) * 32, i / 10) for i in range(7)])
        scores.put_lengths([(b"t" * 32, 40, False)])
        scores.put_spec("spec-hash", {"model": "m"})

    code, out, err = cache_command(capsys, "import", str(laptop), "--url", store)
    assert code == 0, err
    assert out.startswith(f"imported {laptop} -> {store}:")
    assert "samples: 10 (10 new, 0 there already)" in out
    assert "pair scores: 7 (7 new, 0 there already)" in out and "requests: 5 (5 new" in out
    monkeypatch.setenv("MCU_EXP_CACHE_URL", store)
    code, out, err = cache_command(capsys, "import", str(laptop))
    assert code == 0 and "samples: 10 (0 new, 10 there already)" in out, err

    code, out, err = cache_command(capsys, "export", str(cluster_copy))
    assert code == 0 and "samples: 10 (10 new, 0 there already)" in out, err
    with GenerationCache(laptop / CACHE_FILE) as a, GenerationCache(cluster_copy / CACHE_FILE) as b:
        for table in ("samples", "requests"):
            assert sorted(r for rows in a.rows(table) for r in rows) == sorted(
                r for rows in b.rows(table) for r in rows
            )
    with ScoreCache.in_dir(laptop) as a_scores, ScoreCache.in_dir(cluster_copy) as b_scores:
        for table in ("pair_scores", "text_lengths", "specs"):
            assert sorted(r for rows in a_scores.rows(table) for r in rows) == sorted(
                r for rows in b_scores.rows(table) for r in rows
            )
    sent = len(server.log)
    again = CachedGenerator(cfg_for(server), cluster_copy, progress=False)
    assert [r.texts for r in again.generate(requests_of(spec(5)))] == texts
    assert len(server.log) == sent and again.stats["hits"] == 10
    again.close()


def test_cache_command_errors_are_one_line(
    tmp_path: Path, store: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MCU_EXP_CACHE_URL", raising=False)
    cases = [
        (["import", str(tmp_path)], "no shared store given"),
        (["import", str(tmp_path), "--url", store], "no generations.sqlite nor bertscore.sqlite"),
        (["export", str(tmp_path), "--url", store.replace("mcu@", "mcu:hunter2@")], "holds a password"),
        (["export", str(tmp_path), "--url", store.rsplit("/", 1)[0] + "/absent"], "cannot connect"),
    ]
    for args, needle in cases:
        code, out, err = cache_command(capsys, *args)
        assert code == 1 and err.startswith(f"mcu-exp cache {args[0]}: error: "), err
        assert err.strip().count("\n") == 0 and needle in err, err
        assert "hunter2" not in err + out
    res = mcu_exp("cache", "import", str(tmp_path), env={"MCU_EXP_CACHE_URL": ""})  # through the console entry
    assert res.returncode == 1 and res.stderr.strip() == (
        "mcu-exp cache import: error: no shared store given: pass --url postgresql://user@host:port/database "
        "or set MCU_EXP_CACHE_URL"
    ), res.stderr


def test_cache_import_of_text_that_is_not_utf8_is_one_line_with_the_commands_advice(
    tmp_path: Path, store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import sqlite3

    from mcu_exp.llm.cache import GenerationCache

    source = tmp_path / "laptop"
    GenerationCache(source / "generations.sqlite").close()
    with sqlite3.connect(source / "generations.sqlite") as conn:  # a row another tool wrote
        conn.execute("INSERT INTO samples VALUES ('k', CAST(x'ff61' AS TEXT), 'stop', 1, 1, 0, '{}')")
    code, out, err = cache_command(capsys, "import", str(source), "--url", store, "--quiet")
    assert code == 1 and err.count("\n") == 1, err
    assert err.startswith(
        f"mcu-exp cache import: error: generation cache {source / 'generations.sqlite'} holds text that is not UTF-8"
    ), err
    assert "run the command again" in err and "generated again" not in err, err


QUICK = [
    "model=gpt-4o",
    "debug=quick",
    "scorer=rougel",
    "dataset.limit=3",
    "proxy.k=4",
    "proxy.k_cal=2",
    "quiet=true",
    "evaluation.plots=false",
    "model.requests_per_minute=null",
    "model.tokens_per_minute=null",
]


def test_a_job_on_another_machine_is_served_from_the_shared_store(store: str, server: Any, tmp_path: Path) -> None:
    env = {"OPENAI_API_KEY": fake_api.PLANTED_KEY, "MLFLOW_TRACKING_URI": ""}

    def job(machine: str) -> dict[str, Any]:
        res = mcu_exp(
            *QUICK,
            f"model.base_url={server.url}/v1",
            f"cache.url={store}",
            env={**env, "MCU_EXP_OUTPUTS": str(tmp_path / machine)},
        )
        assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
        found = list((tmp_path / machine / "runs").rglob("metrics.json"))
        assert len(found) == 1
        return json.loads(found[0].read_text())

    first = job("node-a")
    sent = len(server.log)
    assert sent > 0 and first["generation_cache_misses"] > 0
    second = job("node-b")
    assert len(server.log) == sent  # nothing asked again
    assert (
        second["generation_cache_misses"] == 0 and second["generation_cache_hits"] == first["generation_cache_misses"]
    )
    assert (first["scorer_loaded"], second["scorer_loaded"]) == (1.0, 0.0)  # every score from the store too
    skip = {"job_seconds", "generation_cache_hits", "generation_cache_misses", "model_loaded", "scorer_loaded"}
    assert {k: v for k, v in first.items() if k not in skip and not k.startswith("usage.")} == {
        k: v for k, v in second.items() if k not in skip and not k.startswith("usage.")
    }
    assert not list((tmp_path / "node-a").rglob(CACHE_FILE))  # generations went to the store only
    with GenerationCache(store) as cache:
        assert len(cache) == first["generation_cache_misses"]


def test_a_server_that_drops_the_connection_mid_run_is_one_line_and_keeps_what_was_stored(
    store: str, postgres_cluster: PostgresCluster
) -> None:
    from mcu_exp.llm.errors import CacheCorrupt

    key = "ab" * 32
    with GenerationCache(store) as cache:
        cache.put(key, Sample("kept", "stop", 1, 1))
        database = store.rsplit("/", 1)[1]
        postgres_cluster.query(
            "postgres",
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            database,
        )
        with pytest.raises(CacheCorrupt) as caught:
            cache.get_many([key])
    message = str(caught.value)
    assert message.startswith(f"generation cache {store}: the database failed (") and "\n" not in message
    assert message.endswith("rerun to resume once it is reachable")
    with GenerationCache(store) as again:
        assert again.get_many([key])[key].text == "kept"


ODD = ["a\x00b", "c\ud800d", "plain"]  # a NUL byte (no PostgreSQL TEXT holds it), a lone surrogate


def test_outputs_postgresql_cannot_hold_are_stored_once_and_served_back(
    store: str, server: Any, tmp_path: Path
) -> None:
    cfg = dataclasses.replace(cfg_for(server), n_per_request=3)
    server.push(
        fake_api.Action(
            body={
                "id": "c",
                "object": "chat.completion",
                "created": 0,
                "model": "fake-model",
                "usage": {"prompt_tokens": 1, "completion_tokens": 3, "total_tokens": 4},
                "choices": [
                    {"index": k, "message": {"role": "assistant", "content": t}, "finish_reason": "stop"}
                    for k, t in enumerate(ODD)
                ],
            }
        )
    )
    request = GenerationRequest(messages=(Message("user", "odd"),), n=3, max_new_tokens=16)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_API_KEY", fake_api.PLANTED_KEY)
        first = CachedGenerator(cfg, tmp_path, progress=False, cache_url=store)
        texts = first.generate([request])[0].texts
        again = CachedGenerator(cfg, tmp_path, progress=False, cache_url=store)
        assert again.generate([request])[0].texts == texts == ["a\x00b", "c\ufffdd", "plain"]
    assert len(server.log) == 1 and again.stats["hits"] == 3
    keys = sample_keys(first.identity(), request, range(3))
    with GenerationCache(store) as cache:
        assert [cache.get_many(keys)[k].text for k in keys] == ODD


def test_import_and_export_carry_texts_postgresql_cannot_hold(
    store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    laptop, back = tmp_path / "laptop", tmp_path / "back"
    with GenerationCache(laptop / CACHE_FILE) as cache:
        cache.put("k-surrogate", Sample(ODD[1], "stop", 1, 1), {"messages": "p\ud800"})
    with sqlite3.connect(laptop / CACHE_FILE) as conn:  # as older versions wrote them: a NUL text unescaped
        conn.execute("INSERT INTO samples VALUES ('k-nul', ?, 'stop', 1, 1, 0, ?)", (ODD[0], '{"messages":"p\\u0000"}'))
        conn.execute("INSERT INTO requests VALUES ('r-nul', ?)", ('{"messages":"q\\u0000"}',))
    conn.close()
    code, out, err = cache_command(capsys, "import", str(laptop), "--url", store)
    assert code == 0 and "samples: 2 (2 new" in out and "requests: 1 (1 new" in out, err
    with GenerationCache(store) as shared:
        assert {k: s.text for k, s in shared.get_many(["k-nul", "k-surrogate"]).items()} == {
            "k-nul": ODD[0],
            "k-surrogate": ODD[1],
        }
        assert [json.loads(r[1]) for rows in shared.rows("requests") for r in rows] == [{"messages": "q\x00"}]
    code, out, err = cache_command(capsys, "export", str(back), "--url", store)
    assert code == 0 and "samples: 2 (2 new" in out, err
    with GenerationCache(back / CACHE_FILE) as copy:
        assert {k: s.text for k, s in copy.get_many(["k-nul", "k-surrogate"]).items()} == {
            "k-nul": ODD[0],
            "k-surrogate": ODD[1],
        }
