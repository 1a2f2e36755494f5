"""What does one more job of a decision-only sweep cost?

Runs a warm-up job (creates the MLflow store and, with ``--real``, fills the generation and
score caches), then a 1-job and an N-job multirun over ε, and prints the added seconds per
job, (t_N − t_1) / (N − 1): the price of a sweep once the expensive stages are cached.
Target: at most 1 s per job. ``--profile`` runs the N-job sweep under cProfile (one
process: Hydra's basic launcher runs jobs in turn) and prints the top hotspots.

    .venv/bin/python scripts/bench_sweep.py                # stand-in proxy, no model
    .venv/bin/python scripts/bench_sweep.py --real         # embedded P1 on warm caches
    .venv/bin/python scripts/bench_sweep.py --profile /tmp/sweep.prof
"""

from __future__ import annotations

import argparse
import os
import pstats
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STANDIN = "proxy._target_=support.standin_proxy.StandInProxy"


def epsilons(n: int) -> str:
    """``n`` distinct ε values in (0, 0.6), comma-separated for a Hydra sweep."""
    return ",".join(f"{0.01 + i * (0.58 / max(1, n - 1)):.4f}" for i in range(n))


def children_cpu() -> float:
    """CPU seconds (user + system) used so far by finished child processes."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(args: list[str], env: dict[str, str], profile: Path | None = None) -> tuple[float, float]:
    """Wall and CPU seconds of ``python -m mcu_exp ARGS`` (fails loudly with the tail of
    stderr). CPU time does not grow when other work shares the machine; wall time does."""
    prefix = [sys.executable] + (["-m", "cProfile", "-o", str(profile)] if profile else []) + ["-m", "mcu_exp"]
    cpu, started = children_cpu(), time.perf_counter()
    res = subprocess.run([*prefix, *args], cwd=REPO, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if res.returncode != 0:
        raise SystemExit(f"bench_sweep: `mcu-exp {' '.join(args)}` failed:\n{res.stderr[-3000:]}")
    return elapsed, children_cpu() - cpu


def job_seconds(outputs: Path) -> list[float]:
    """``job_seconds`` of every run in the store (time inside the pipeline)."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{outputs / 'mlflow.db'}")
    exp = client.get_experiment_by_name("mcu_exp")
    if exp is None:
        return []
    return [r.data.metrics["job_seconds"] for r in client.search_runs([exp.experiment_id], max_results=5000)
            if "job_seconds" in r.data.metrics]


def hotspots(profile: Path, top: int) -> str:
    """The functions with the most cumulative and own time in a cProfile file."""
    import io

    out = io.StringIO()
    stats = pstats.Stats(str(profile), stream=out).strip_dirs()
    stats.sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)
    return out.getvalue()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=50, help="jobs of the large sweep (default 50)")
    parser.add_argument("--real", action="store_true", help="the embedded P1 (warm caches) instead of the stand-in")
    parser.add_argument("--outputs", type=Path, default=None, help="outputs folder (default: a fresh temp folder; "
                        "with --real pass the folder whose cache/ is warm)")
    parser.add_argument("--profile", type=Path, default=None, help="cProfile the large sweep into this file")
    parser.add_argument("--top", type=int, default=25, help="hotspots to print with --profile")
    parser.add_argument("overrides", nargs="*", help="extra Hydra overrides for every job")
    args = parser.parse_args(argv)
    if args.jobs < 2:
        raise SystemExit("bench_sweep: --jobs must be at least 2")

    tmp = tempfile.TemporaryDirectory(prefix="bench_sweep_")
    outputs = args.outputs or Path(tmp.name) / "outputs"
    python_path = os.pathsep.join(p for p in (str(REPO / "tests"), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "MCU_EXP_OUTPUTS": str(outputs), "PYTHONPATH": python_path}
    env.pop("MLFLOW_TRACKING_URI", None)
    env.setdefault("MCU_EXP_DATA", str(REPO.parent / "shared" / "data"))
    common = ["quiet=true", *([] if args.real else [STANDIN]), *args.overrides]

    warm, _ = run([*common, "decision.epsilon=0.1"], env)
    t1, c1 = run(["-m", *common, "decision.epsilon=0.1"], env)
    tn, cn = run(["-m", *common, f"decision.epsilon={epsilons(args.jobs)}"], env, profile=args.profile)
    per_job, cpu_per_job = (tn - t1) / (args.jobs - 1), (cn - c1) / (args.jobs - 1)
    inside = job_seconds(outputs)

    print(f"proxy: {'embedded P1 (cached)' if args.real else 'stand-in'}; outputs: {outputs}")
    print(f"load average (1 min):      {os.getloadavg()[0]:7.2f}  on {os.cpu_count()} CPUs")
    print(f"warm-up single run:        {warm:7.2f} s")
    print(f"1-job sweep:               {t1:7.2f} s wall, {c1:6.2f} s CPU")
    print(f"{args.jobs}-job sweep:              {tn:7.2f} s wall, {cn:6.2f} s CPU"
          + ("  (under cProfile)" if args.profile else ""))
    print(f"added seconds per job:     {per_job:7.2f} s wall, {cpu_per_job:6.2f} s CPU   "
          f"(target <= 1 s: {'met' if per_job <= 1 else 'NOT met'})")
    if inside:
        inside.sort()
        print(f"job_seconds (pipeline):    median {inside[len(inside) // 2]:.2f} s, max {inside[-1]:.2f} s "
              f"over {len(inside)} runs")
    if args.profile:
        print(hotspots(args.profile, args.top))
    tmp.cleanup()


if __name__ == "__main__":
    main()
