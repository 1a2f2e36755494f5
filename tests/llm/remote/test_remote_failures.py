"""Failed generations (filtered, empty), two processes on one cache, and a corrupt cache file,
against the fake server with the real ``openai`` client."""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcu_exp.llm import CachedGenerator, GenerationRequest, Message
from mcu_exp.llm.cache import sample_key
from mcu_exp.llm.errors import CacheCorrupt, GenerationFailed
from mcu_exp.proxies.stages import TARGET_SUMMARIES, Generators, Stage, StageResults, run_stages

pytestmark = pytest.mark.slow  # whole jobs, stores or encoders: scheduled first under xdist

WORKER = Path(__file__).with_name("gen_worker.py")


def requests(count: int, n: int = 2) -> list[GenerationRequest]:
    return [
        GenerationRequest(messages=(Message("user", f"program {i}"),), n=n, max_new_tokens=16) for i in range(count)
    ]


class OneStage:
    """A proxy with one stage: the target's summaries of ``reqs``."""

    def __init__(self, model: Any, reqs: list[GenerationRequest]) -> None:
        self.model, self.reqs = model, reqs

    def stages(self, done: StageResults) -> Iterator[Stage]:
        yield Stage(TARGET_SUMMARIES, TARGET_SUMMARIES, self.model.name, self.model, self.reqs)


def choices_body(content: str | None, finish: str, n: int = 1) -> dict[str, Any]:
    return {
        "id": "x",
        "object": "chat.completion",
        "created": 0,
        "model": "fake-model",
        "choices": [
            {"index": k, "message": {"role": "assistant", "content": content}, "finish_reason": finish}
            for k in range(n)
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11},
    }


def table(cache_dir: Path, name: str) -> int:
    with sqlite3.connect(cache_dir / "generations.sqlite") as conn:
        return int(conn.execute(f"SELECT COUNT(*) FROM {name}").fetchone()[0])


@pytest.mark.parametrize(
    ("content", "finish", "counts"),
    [
        (None, "content_filter", "(0 errors, 20 filtered, 0 empty)"),  # the provider maps content_filter to filtered
        ("", "stop", "(0 errors, 0 filtered, 20 empty)"),
        (" \n", "length", "(0 errors, 0 filtered, 20 empty)"),
    ],
)
def test_a_stage_of_failed_samples_stops_unscored_and_the_rerun_retries_them(
    remote: Any, tmp_path: Path, content: str | None, finish: str, counts: str
) -> None:
    cfg = remote.cfg("openai", name="gpt-4o", max_concurrency=2)
    reqs = requests(10)
    remote.server.push(*[remote.action(body=choices_body(content, finish))] * 20)
    with pytest.raises(GenerationFailed) as caught:
        run_stages(OneStage(cfg, reqs), Generators(tmp_path, progress=False))
    message = str(caught.value)
    assert isinstance(caught.value, ValueError) and "\n" not in message
    assert message == (
        f"stage 'target summaries' (gpt-4o): 20 of 20 samples failed {counts}, above "
        "generation.max_failed_share=0; nothing was scored; rerun to retry them, "
        "or raise generation.max_failed_share"
    )
    assert table(tmp_path, "samples") == 0 and table(tmp_path, "failures") == 20

    done = run_stages(OneStage(cfg, reqs), Generators(tmp_path, progress=False))
    assert len(remote.server.log) == 40  # every failed sample asked again, once
    texts = done.texts(TARGET_SUMMARIES)
    assert all(len(t) == 2 and all(s.startswith("answer to [program") for s in t) for t in texts)
    assert table(tmp_path, "samples") == 20 and table(tmp_path, "failures") == 0


def test_failures_within_the_allowed_share_are_left_out_of_the_texts(
    remote: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cfg = remote.cfg("openai", name="gpt-4o", max_concurrency=1)
    remote.server.push(remote.action(body=choices_body("", "stop")))
    with caplog.at_level(logging.WARNING, logger="mcu_exp.proxies.stages"):
        done = run_stages(OneStage(cfg, requests(2)), Generators(tmp_path, progress=False, max_failed_share=0.25))
    assert sorted(len(t) for t in done.texts(TARGET_SUMMARIES)) == [1, 2]
    assert "1 of 4 samples failed (0 errors, 0 filtered, 1 empty), within" in caplog.text
    with pytest.raises(GenerationFailed, match="1 of 4 samples failed"):
        remote.server.push(remote.action(body=choices_body(None, "content_filter")))
        run_stages(OneStage(cfg, requests(2)), Generators(tmp_path / "strict", progress=False))


def test_an_empty_text_cached_by_an_older_version_is_not_a_hit(remote: Any, tmp_path: Path) -> None:
    cfg = remote.cfg("openai")
    reqs = requests(1, n=1)
    gen = CachedGenerator(cfg, tmp_path, progress=False)
    key = sample_key(gen.identity(), reqs[0], 0)
    with sqlite3.connect(tmp_path / "generations.sqlite") as conn:
        conn.execute("INSERT INTO samples VALUES (?, '', 'stop', 1, 0, 0, '{}')", (key,))
    [result] = gen.generate(reqs)
    assert len(remote.server.log) == 1 and result.texts[0].startswith("answer to [program 0]")
    [again] = CachedGenerator(cfg, tmp_path, progress=False).generate(reqs)
    assert again.texts == result.texts and len(remote.server.log) == 1


def test_two_processes_on_one_cache_never_ask_for_the_same_sample(remote: Any, tmp_path: Path) -> None:
    spec = [[f"program {i}", 3, 0] for i in range(6)]  # 18 samples, one request each
    remote.server.push(*[remote.action(delay_s=0.15)] * 18)
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), remote.server.url + "/v1", str(tmp_path), json.dumps(spec)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(2)
    ]
    outs = [proc.communicate(timeout=60) for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], [err.decode()[-2000:] for _, err in outs]
    sent = [(e.body["messages"][-1]["content"], e.body["seed"]) for e in remote.server.log]
    assert len(sent) == 18 and len(set(sent)) == 18  # each sample asked once, by one of the two
    texts = [json.loads(out.decode().strip().splitlines()[-1]) for out, _ in outs]
    assert texts[0] == texts[1] and all(len(t) == 3 for t in texts[0])
    assert table(tmp_path, "samples") == 18 and table(tmp_path, "claims") == 0


def test_leases_of_a_dead_process_are_taken_over_at_once(remote: Any, tmp_path: Path) -> None:
    cfg = remote.cfg("openai")
    reqs = requests(2, n=1)
    gen = CachedGenerator(cfg, tmp_path, progress=False, claim_ttl_s=3600)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    keys = [sample_key(gen.identity(), r, 0) for r in reqs]
    with sqlite3.connect(tmp_path / "generations.sqlite") as conn:
        conn.execute("INSERT INTO claims VALUES (?, 'gone', ?, ?, 1e12)", (keys[0], gen.owner.host, dead.pid))
        conn.execute("INSERT INTO claims VALUES (?, 'old', 'elsewhere', 1, 0)", (keys[1],))  # expired
    assert [len(r.texts) for r in gen.generate(reqs)] == [1, 1] and len(remote.server.log) == 2


def test_a_corrupt_cache_file_is_one_line_naming_it_and_the_way_out(tmp_path: Path) -> None:
    path = tmp_path / "generations.sqlite"
    path.write_bytes(os.urandom(8192))
    with pytest.raises(CacheCorrupt) as caught:
        CachedGenerator(None, tmp_path, progress=False)
    message = str(caught.value)
    assert isinstance(caught.value, ValueError) and "\n" not in message
    assert str(path) in message and "move it aside" in message and "rerun" in message
