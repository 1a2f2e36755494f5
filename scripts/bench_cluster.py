"""Benchmark N parallel jobs that need the same generations: one shared PostgreSQL cache
(``cache.url``) against a SQLite file per job (what nodes without a shared cache do).

The jobs are joblib (loky) worker processes, as ``hydra/launcher=joblib`` starts them; each
runs :class:`CachedGenerator` over the same P3-style judge requests (the work a sweep's jobs
share) through the real OpenAI client against the fake API of ``bench_remote.py`` (its own
process, ``--latency-ms`` per request). The fake API counts the requests it answered and the
distinct request bodies among them: every request past the first of its body is duplicate
work (paid twice). A single job on its own SQLite file is the baseline of the same run.

With ``--sweep`` the jobs are instead a real ``mcu-exp -m hydra/launcher=joblib`` sweep (P1 on
the fake API, ROUGE-L, a decision-only grid of ``--jobs`` ε values) run twice: with
``cache.url`` and with a cache folder per job.

PostgreSQL: ``--url`` names a server; without it a throwaway cluster is started on 127.0.0.1
from Debian's ``postgresql`` binaries (as ``make test-services`` does) and deleted after.

    .venv/bin/python scripts/bench_cluster.py [--jobs 4] [--requests 300] [--n 10]
        [--latency-ms 50] [--concurrency 16] [--url postgresql://…] [--sweep]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from bench_remote import FakeAPI, judge_requests, model_cfg
from benchlib import show

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))  # the throwaway PostgreSQL of the service tests


def job(
    url: str | None, cache_dir: str, api_url: str, requests: int, n: int, concurrency: int, seed: int
) -> dict[str, Any]:
    """One job (in a worker process): every sample of the shared request set through the cache."""
    from mcu_exp.llm import CachedGenerator

    cfg = model_cfg("openai", api_url, n, concurrency)
    start = time.perf_counter()
    generator = CachedGenerator(cfg, cache_dir, progress=False, cache_url=url)
    results = generator.generate(judge_requests(cfg, requests, n, seed=seed))
    generator.close()
    usable = sum(len(r.texts) for r in results)
    return {"wall": time.perf_counter() - start, "usable": usable, **generator.stats}


def run_jobs(
    args: argparse.Namespace,
    api: FakeAPI,
    work: Path,
    url: str | None,
    count: int,
    seed: int,
    requests: int | None = None,
) -> dict[str, Any]:
    """``count`` jobs at once (shared store when ``url``, else a SQLite file each); the figures.
    Each scenario has its own ``seed``, so its request bodies are new to the fake API."""
    from joblib import Parallel, delayed

    before = api.stats()
    start = time.perf_counter()
    tag = uuid.uuid4().hex[:6]
    outs = Parallel(n_jobs=args.jobs, backend="loky")(  # one pool for every scenario: its workers stay warm
        delayed(job)(
            url, str(work / f"{tag}-job{i}"), api.url, requests or args.requests, args.n, args.concurrency, seed
        )
        for i in range(count)
    )
    wall = time.perf_counter() - start
    after = api.stats()
    served, distinct = after["requests"] - before["requests"], after["distinct"] - before["distinct"]
    return {"wall": wall, "served": served, "distinct": distinct, "jobs": outs}


def report(name: str, args: argparse.Namespace, got: dict[str, Any], baseline: float | None) -> int:
    """Print one scenario's lines; return its duplicate requests."""
    samples = args.requests * args.n
    duplicates = got["served"] - got["distinct"]
    per_job = ", ".join(f"{o['generated']}/{o['from_peers']}/{o['hits']}" for o in got["jobs"])
    ratio = f" ({got['wall'] / baseline:.2f}x the single job)" if baseline else ""
    print(
        f"{name}: {len(got['jobs'])} jobs x {args.requests} requests x n={args.n}: wall {got['wall']:.1f} s{ratio}; "
        f"server answered {got['served']:,} requests ({got['distinct']:,} distinct) -> duplicate requests "
        f"{duplicates:,}, duplicate samples {duplicates * args.n:,}; {samples / got['wall']:,.0f} unique samples/s, "
        f"{len(got['jobs']) * samples / got['wall']:,.0f} samples delivered to jobs/s"
    )
    print(
        f"  per job generated/from peers/cache hits: {per_job}; usable samples per job: "
        f"{sorted({o['usable'] for o in got['jobs']})}; slowest job {max(o['wall'] for o in got['jobs']):.1f} s"
    )
    return duplicates


def sweep(args: argparse.Namespace, api: FakeAPI, work: Path, url: str | None, seed: int) -> dict[str, Any]:
    """A real ``mcu-exp -m hydra/launcher=joblib`` sweep of ``--jobs`` ε values (``proxy.sample_seed``
    new to the fake API); its figures."""
    epsilons = ",".join(f"{0.05 + 0.05 * i:.2f}" for i in range(args.jobs))
    cache = [f"cache.url={url}"] if url else ["cache.dir=${paths.outputs}/cache/job${hydra:job.num}"]
    outputs = work / ("sweep-shared" if url else "sweep-sqlite")
    env = {
        **os.environ,
        "MCU_EXP_OUTPUTS": str(outputs),
        "OPENAI_API_KEY": "sk-bench-not-a-real-key",
        "MCU_EXP_CACHE_URL": "",
        "OMP_NUM_THREADS": "1",
    }
    env.pop("MLFLOW_TRACKING_URI", None)
    cmd = [
        sys.executable,
        "-m",
        "mcu_exp",
        "-m",
        "hydra/launcher=joblib",
        f"hydra.launcher.n_jobs={args.jobs}",
        "model=gpt-4o",
        f"model.base_url={api.url}/v1",
        "model.requests_per_minute=null",
        "model.tokens_per_minute=null",
        f"model.max_concurrency={args.concurrency}",
        "scorer=rougel",
        f"dataset.limit={args.sweep_programs}",
        "proxy.k=10",
        "proxy.k_cal=5",
        "evaluation.plots=false",
        "quiet=true",
        f"proxy.sample_seed={seed}",
        f"decision.epsilon={epsilons}",
        *cache,
    ]
    before = api.stats()
    start = time.perf_counter()
    res = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if res.returncode:
        raise SystemExit(f"sweep failed:\n{(res.stdout + res.stderr)[-3000:]}")
    after = api.stats()
    return {
        "wall": wall,
        "served": after["requests"] - before["requests"],
        "distinct": after["distinct"] - before["distinct"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--requests", type=int, default=300, help="requests every job needs (the same set)")
    parser.add_argument("--n", type=int, default=10, help="samples per request")
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--concurrency", type=int, default=16, help="model.max_concurrency of each job")
    parser.add_argument("--url", default=None, help="a PostgreSQL database (default: a throwaway cluster)")
    parser.add_argument("--sweep", action="store_true", help="also run a real mcu-exp joblib sweep both ways")
    parser.add_argument("--sweep-programs", type=int, default=10, help="dataset.limit of the --sweep jobs")
    args = parser.parse_args()
    show("load", Path("/proc/loadavg").read_text().strip())
    cluster = None
    url = args.url
    if url is None:
        from support.postgres import PostgresCluster

        cluster = PostgresCluster().start()
    api = FakeAPI(args.latency_ms)
    ok = True
    try:
        with tempfile.TemporaryDirectory(prefix="bench-cluster-") as tmp:
            work = Path(tmp)
            run_jobs(args, api, work, None, args.jobs, seed=0, requests=4)  # warm-up: the workers start, import
            one = run_jobs(args, api, work, None, 1, seed=1)
            base = report("baseline, one job, its own SQLite file", args, one, None)
            db = url or cluster.database(f"bench_{uuid.uuid4().hex[:8]}")  # type: ignore[union-attr]
            shared = report(
                "shared PostgreSQL cache", args, run_jobs(args, api, work, db, args.jobs, seed=2), one["wall"]
            )
            per_job = report(
                "a SQLite file per job", args, run_jobs(args, api, work, None, args.jobs, seed=3), one["wall"]
            )
            ok = shared == 0 and base == 0
            print(
                f"  [{'PASS' if ok else 'FAIL'}] shared store: duplicate work {shared} (must be 0); "
                f"per-job SQLite files: {per_job:,} duplicate requests "
                f"({per_job / max(args.requests, 1):.1f}x the requests of one job, paid again)"
            )
            if args.sweep:
                sweep_db = url or cluster.database(f"sweep_{uuid.uuid4().hex[:8]}")  # type: ignore[union-attr]
                for seed, (name, where) in enumerate(
                    (("shared PostgreSQL cache", sweep_db), ("a cache folder per job", None)), start=11
                ):
                    got = sweep(args, api, work, where, seed)
                    dup = got["served"] - got["distinct"]
                    print(
                        f"mcu-exp joblib sweep, {args.jobs} jobs (decision.epsilon), {name}: wall {got['wall']:.1f} s; "
                        f"server answered {got['served']:,} requests ({got['distinct']:,} distinct) -> "
                        f"duplicate requests {dup:,}"
                    )
                    if where is not None:
                        ok = ok and dup == 0
                        print(f"  [{'PASS' if dup == 0 else 'FAIL'}] sweep on the shared store: duplicate work {dup}")
    finally:
        api.close()
        if cluster is not None:
            cluster.stop()
    show("load", Path("/proc/loadavg").read_text().strip())
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
