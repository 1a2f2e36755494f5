"""Benchmark the remote path: the real OpenAI and Anthropic clients, the runner and the cache.

A fake API (aiohttp, in its own process so it never shares the client's GIL) answers on
127.0.0.1 after ``--latency-ms``; its completions are one-word judge verdicts (CORRECT or
INCORRECT) to P3-style judge prompts. Every run goes through :class:`CachedGenerator` with a
``ModelConfig`` whose ``base_url`` points at the fake server, exactly as a stage does.

Targets (each printed as a PASS/FAIL line):
  (a) zero latency, n samples per request: >= 2,000 samples/s stored end to end;
  (b) 100 ms latency, max_concurrency=64: >= 90 % of the ideal 640 requests/s (per provider);
  (c) a fully cached P3-sized stage (22,500 requests x 50 samples) answered from the cache
      in <= 60 s with <= 1.5 GB peak RSS (measured in a fresh process);
  (d) cache bytes per judge sample (file size / samples; checked without free-list pages) <= 200.

    .venv/bin/python scripts/bench_remote.py [--quick] [--requests 400] [--n 50] [--latency-ms 100]
        [--concurrency 64] [--cached-requests 22500] [--only a b c d]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchlib import rss_gb, show, timed

os.environ.setdefault("OPENAI_API_KEY", "sk-bench-not-a-real-key")
os.environ.setdefault("ANTHROPIC_API_KEY", "sk-ant-bench-not-a-real-key")

CODE = "\n".join(f"    int step{i}(int x) {{ return x * {i} + helper(x, {i}); }}" for i in range(24))


# ---------------------------------------------------------------- the fake API (own process)


def _verdict(seed: int, k: int) -> str:
    return "CORRECT" if (seed + k) % 3 else "INCORRECT"


def _serve(conn: Any, latency_s: float) -> None:
    """Child process: an aiohttp server speaking OpenAI chat completions and Anthropic messages."""
    from aiohttp import web

    counts = {"requests": 0, "distinct": 0}
    seen: set[str] = set()  # request bodies answered so far (a second one is duplicate work)

    def count(body: dict[str, Any]) -> None:
        counts["requests"] += 1
        seen.add(json.dumps(body, sort_keys=True))
        counts["distinct"] = len(seen)

    async def openai(request: web.Request) -> web.Response:
        body = await request.json()
        count(body)
        if latency_s:
            await asyncio.sleep(latency_s)
        n, seed = int(body.get("n") or 1), int(body.get("seed") or 0)
        choices = [
            {
                "index": k,
                "message": {"role": "assistant", "content": _verdict(seed, k)},
                "finish_reason": "stop",
                "logprobs": None,
            }
            for k in range(n)
        ]
        return web.json_response(
            {
                "id": "chatcmpl-bench",
                "object": "chat.completion",
                "created": 0,
                "model": body.get("model"),
                "choices": choices,
                "usage": {"prompt_tokens": 400, "completion_tokens": 2 * n, "total_tokens": 400 + 2 * n},
            }
        )

    async def anthropic(request: web.Request) -> web.Response:
        body = await request.json()
        count(body)
        if latency_s:
            await asyncio.sleep(latency_s)
        return web.json_response(
            {
                "id": "msg_bench",
                "type": "message",
                "role": "assistant",
                "model": body.get("model"),
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "content": [{"type": "text", "text": _verdict(counts["requests"], 0)}],
                "usage": {"input_tokens": 400, "output_tokens": 2},
            }
        )

    async def stats(_: web.Request) -> web.Response:
        return web.json_response(counts)

    async def main() -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", openai)
        app.router.add_post("/v1/messages", anthropic)
        app.router.add_get("/stats", stats)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(2048)
        await web.SockSite(runner, sock, backlog=2048).start()
        conn.send(sock.getsockname()[1])
        await asyncio.get_running_loop().run_in_executor(None, conn.recv)  # until the parent says stop

    asyncio.run(main())


class FakeAPI:
    """The fake server's process, started with a fixed latency; ``url`` and ``requests``."""

    def __init__(self, latency_ms: float) -> None:
        ctx = mp.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(child, latency_ms / 1000.0), daemon=True)
        self._proc.start()
        self.url = f"http://127.0.0.1:{self._conn.recv()}"

    def stats(self) -> dict[str, int]:
        """Requests answered so far, and how many distinct request bodies among them."""
        import urllib.request

        with urllib.request.urlopen(self.url + "/stats") as reply:
            return {k: int(v) for k, v in json.load(reply).items()}

    def requests(self) -> int:
        return self.stats()["requests"]

    def close(self) -> None:
        self._conn.send("stop")
        self._proc.join(5)
        if self._proc.is_alive():
            self._proc.kill()


# ---------------------------------------------------------------- the client side


def model_cfg(provider: str, url: str, n: int, concurrency: int) -> Any:
    from mcu_exp.config import ModelConfig

    return ModelConfig(
        name=f"bench-{provider}",
        backend=provider,
        model_id="bench-judge",
        base_url=url + "/v1" if provider == "openai" else url,
        n_per_request=n,
        max_concurrency=concurrency,
        timeout_s=60.0,
        max_retries=0,
        max_new_tokens=4,
        temperature=1.0,
        top_p=1.0,
        stop=[],
    )


def judge_requests(cfg: Any, count: int, n: int, seed: int = 0) -> list[Any]:
    """``count`` P3-style judge requests (one per summary), each asking ``n`` verdicts."""
    from mcu_exp.llm import request_for
    from mcu_exp.proxies.prompts import judge_messages

    return [
        request_for(
            cfg,
            judge_messages(
                CODE, "Java", f"Computes step {i} of the helper chain for input x and returns it (summary {i})."
            ),
            n=n,
            seed=seed,
        )
        for i in range(count)
    ]


def warm_up(cfg: Any, cache_dir: Path) -> None:
    """A few requests first, so SDK imports and connection set-up stay out of the timings."""
    from mcu_exp.llm import CachedGenerator

    generator = CachedGenerator(cfg, cache_dir, progress=False)
    generator.generate(judge_requests(cfg, 8, 1, seed=99))
    generator.close()


def generate(cfg: Any, cache_dir: Path, requests: list[Any]) -> tuple[float, float, Any]:
    """Wall and CPU seconds of one ``CachedGenerator.generate`` over ``requests``, and the generator."""
    from mcu_exp.llm import CachedGenerator

    record: dict[str, tuple[float, float]] = {}
    generator = CachedGenerator(cfg, cache_dir, progress=False)
    with timed(record, "generate"):
        results = generator.generate(requests)
    generator.close()
    made = sum(len(r.texts) for r in results)
    if made != sum(r.n for r in requests):
        raise SystemExit(f"bench: {made} usable samples of {sum(r.n for r in requests)}")
    return (*record["generate"], generator)


def file_bytes(cache_dir: Path) -> tuple[int, int]:
    """Size of the cache file after a checkpoint folds the WAL into it, and the part of it
    on SQLite's free list (pages a finished stage's leases left, reused by later writes)."""
    import sqlite3

    path = cache_dir / "generations.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        free = conn.execute("PRAGMA freelist_count").fetchone()[0] * conn.execute("PRAGMA page_size").fetchone()[0]
    return sum(p.stat().st_size for p in cache_dir.glob("generations.sqlite*")), int(free)


def bench_store(args: argparse.Namespace, work: Path) -> tuple[bool, tuple[int, int], int]:
    """(a): zero latency, n per request, samples/s stored; returns (pass, cache bytes, samples)."""
    api = FakeAPI(0.0)
    try:
        cfg = model_cfg("openai", api.url, args.n, args.concurrency)
        requests = judge_requests(cfg, args.requests, args.n)
        warm_up(cfg, work / "warm-a")
        first = api.requests()
        wall, cpu, _ = generate(cfg, work / "a", requests)
        served = api.requests() - first
    finally:
        api.close()
    samples = args.requests * args.n
    rate = samples / wall
    print(
        f"(a) openai, latency 0, n={args.n}, {args.requests} requests ({served} served), concurrency "
        f"{args.concurrency}: {samples} samples in {wall:.2f} s = {rate:,.0f} samples/s, "
        f"{served / wall:,.0f} requests/s; CPU {cpu:.2f} s = {1000 * cpu / served:.2f} ms/request, "
        f"{1e6 * cpu / samples:.1f} us/sample"
    )
    ok = rate >= 2000
    print(
        f"  [{'PASS' if ok else 'FAIL'}] (a) >= 2,000 samples/s stored end to end: {rate:,.0f} "
        f"({rate / 2000:.2f}x target)"
    )
    return ok, file_bytes(work / "a"), samples


def bench_latency(args: argparse.Namespace, work: Path, provider: str) -> bool:
    """(b): ``--latency-ms`` latency, ``--concurrency`` workers, one sample per request."""
    api = FakeAPI(args.latency_ms)
    try:
        cfg = model_cfg(provider, api.url, 1, args.concurrency)
        requests = judge_requests(cfg, args.latency_requests, 1, seed=7)
        warm_up(cfg, work / f"warm-b-{provider}")
        first = api.requests()
        wall, cpu, _ = generate(cfg, work / f"b-{provider}", requests)
        served = api.requests() - first
    finally:
        api.close()
    ideal = args.concurrency / (args.latency_ms / 1000.0)
    rate = served / wall
    print(
        f"(b) {provider}, latency {args.latency_ms:.0f} ms, concurrency {args.concurrency}: {served} requests "
        f"in {wall:.2f} s = {rate:,.0f} requests/s (ideal {ideal:,.0f}); CPU {cpu:.2f} s = "
        f"{1000 * cpu / served:.2f} ms/request"
    )
    ok = rate >= 0.9 * ideal
    print(
        f"  [{'PASS' if ok else 'FAIL'}] (b) {provider} >= 90 % of {ideal:,.0f} requests/s: {100 * rate / ideal:.0f} %"
    )
    return ok


def fill_cache(cache_dir: Path, cfg: Any, requests: list[Any]) -> None:
    """Store a verdict for every sample of ``requests`` under the keys a stage would use."""
    from mcu_exp.llm import GenerationCache, Sample
    from mcu_exp.llm.cache import key_parts, sample_key
    from mcu_exp.llm.factory import backend_identity

    identity = backend_identity(cfg)
    with GenerationCache(cache_dir / "generations.sqlite") as cache:
        put_responses = getattr(cache, "put_responses", None)
        for pos, request in enumerate(requests):
            samples = [Sample(_verdict(pos, i), "stop", 400 if i == 0 else 0, 2) for i in range(request.n)]
            if put_responses is not None:  # as the generator stores a response
                from mcu_exp.llm.cache import request_parts, sample_keys

                keys = sample_keys(identity, request, range(request.n))
                put_responses([(request_parts(identity, request), list(zip(keys, range(request.n), samples)))])
            else:
                for i, sample in enumerate(samples):
                    cache.put(sample_key(identity, request, i), sample, key_parts(identity, request, i))


def cached_read(cache_dir: Path, count: int, n: int) -> None:
    """Child process for (c): answer the whole stage from the cache; prints a JSON line."""
    cfg = model_cfg("openai", "http://127.0.0.1:9", n, 64)  # port 9: nothing answers, nothing may be asked
    requests = judge_requests(cfg, count, n)
    base = rss_gb()
    wall, cpu, generator = generate(cfg, cache_dir, requests)
    print(
        json.dumps(
            {
                "wall": wall,
                "cpu": cpu,
                "rss_gb": rss_gb(),
                "base_rss_gb": base,
                "backend": generator.backend_created,
                "hits": generator.stats["hits"],
            }
        )
    )


def bench_cached(args: argparse.Namespace, work: Path) -> tuple[bool, tuple[int, int], int]:
    """(c): a fully cached stage read in a fresh process; returns (pass, cache bytes, samples)."""
    cache_dir = work / "c"
    cfg = model_cfg("openai", "http://127.0.0.1:9", args.n, 64)
    start = time.perf_counter()
    fill_cache(cache_dir, cfg, judge_requests(cfg, args.cached_requests, args.n))
    samples = args.cached_requests * args.n
    size = file_bytes(cache_dir)
    print(f"(c) filled {samples:,} samples in {time.perf_counter() - start:.1f} s; file {size[0] / 2**20:.0f} MiB")
    child = subprocess.run(
        [
            sys.executable,
            __file__,
            "--cached-read",
            str(cache_dir),
            "--n",
            str(args.n),
            "--cached-requests",
            str(args.cached_requests),
        ],
        capture_output=True,
        text=True,
    )
    if child.returncode:
        raise SystemExit(f"(c) reader failed:\n{child.stderr[-3000:]}")
    got = json.loads(child.stdout.strip().splitlines()[-1])
    full = 22_500 * 50
    scale = full / samples
    print(
        f"(c) {args.cached_requests:,} requests x {args.n} = {samples:,} samples from the cache in "
        f"{got['wall']:.2f} s (CPU {got['cpu']:.2f} s, {samples / got['wall']:,.0f} samples/s); peak RSS "
        f"{got['rss_gb']:.2f} GB (imports {got['base_rss_gb']:.2f} GB); hits {got['hits']:,}; "
        f"backend created: {got['backend']}"
    )
    ok = got["hits"] == samples and not got["backend"]
    if scale > 1.01:
        wall = got["wall"] * scale
        rss = got["base_rss_gb"] + (got["rss_gb"] - got["base_rss_gb"]) * scale
        print(f"  (scaled linearly to 1,125,000 samples: ~{wall:.0f} s, ~{rss:.2f} GB; run without --quick to measure)")
    else:
        wall, rss = got["wall"], got["rss_gb"]
    ok = ok and wall <= 60 and rss <= 1.5
    print(
        f"  [{'PASS' if ok else 'FAIL'}] (c) P3-sized cached stage <= 60 s and <= 1.5 GB: {wall:.1f} s, "
        f"{rss:.2f} GB{' (scaled)' if scale > 1.01 else ''}"
    )
    return ok, size, samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (about a minute)")
    parser.add_argument("--requests", type=int, default=None, help="(a) requests (default 400; quick 100)")
    parser.add_argument("--n", type=int, default=50, help="samples per request for (a) and (c)")
    parser.add_argument("--latency-ms", type=float, default=100.0, help="(b) server latency")
    parser.add_argument("--latency-requests", type=int, default=None, help="(b) requests (default 3200; quick 1280)")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--cached-requests", type=int, default=None, help="(c) requests (default 22500; quick 2250)")
    parser.add_argument("--providers", nargs="+", default=["openai", "anthropic"])
    parser.add_argument("--only", nargs="+", default=["a", "b", "c", "d"], choices=["a", "b", "c", "d"])
    parser.add_argument("--cached-read", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cached_read is not None:
        cached_read(args.cached_read, args.cached_requests, args.n)
        return
    args.requests = args.requests or (100 if args.quick else 400)
    args.latency_requests = args.latency_requests or (1280 if args.quick else 3200)
    args.cached_requests = args.cached_requests or (2250 if args.quick else 22_500)
    show("load", Path("/proc/loadavg").read_text().strip())
    verdicts: list[bool] = []
    sizes: list[tuple[str, tuple[int, int], int]] = []
    with tempfile.TemporaryDirectory(prefix="bench-remote-") as tmp:
        work = Path(tmp)
        if "a" in args.only or "d" in args.only:
            ok, size, samples = bench_store(args, work)
            verdicts.append(ok)
            sizes.append(("(a) cache", size, samples))
        if "b" in args.only:
            verdicts += [bench_latency(args, work, provider) for provider in args.providers]
        if "c" in args.only:
            ok, size, samples = bench_cached(args, work)
            verdicts.append(ok)
            sizes.append(("(c) cache", size, samples))
    if "d" in args.only:
        for name, (size, free), samples in sizes:
            per, live = size / samples, (size - free) / samples
            verdicts.append(live <= 200)
            print(
                f"  [{'PASS' if live <= 200 else 'FAIL'}] (d) {name}: {size:,} bytes / {samples:,} judge samples "
                f"= {per:,.0f} bytes per sample; {live:,.0f} without the {free:,} free-list bytes (aim <= 200)"
            )
    show("load", Path("/proc/loadavg").read_text().strip())
    print(
        f"peak RSS of this process {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.2f} GB; "
        f"{sum(verdicts)} of {len(verdicts)} targets met"
    )


if __name__ == "__main__":
    main()
