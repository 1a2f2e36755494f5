"""What does one more job of a decision-only sweep cost?

Runs a warm-up job (creates the MLflow store and, with ``--real``, fills the generation and
score caches), then a 1-job and an N-job multirun over ε, and prints the added seconds per
job, (t_N − t_1) / (N − 1): the price of a sweep once the expensive stages are cached.
Target: at most 0.5 s of CPU per job (``--target``), printed as a PASS/FAIL line; CPU time,
because wall time grows with whatever else shares the machine. On a shared machine even a
process's CPU time grows with its neighbours' work (caches and memory bandwidth are shared),
by ±0.15 s a job here from one run to the next, so the pair of sweeps runs ``--rounds`` times
(default 3): each round's figure is printed, and the verdict uses the least CPU each sweep
took over the rounds (other work only ever adds time, as ``timeit`` reasons).

Then it runs a 1-job and a K-job sweep (``--breakdown-jobs``, default 5) under cProfile and
prints where the added time per job goes, by the same difference: Hydra (composing each
job's config, launching), the sweep callbacks, the job wrapper, the pipeline's stages, and
MLflow. The profiler slows pure-Python code more than NumPy, so the shares are approximate;
the last column scales them to the unprofiled CPU figure. ``--profile`` keeps the K-job
profile and prints its hotspots.

    .venv/bin/python scripts/bench_sweep.py                # stand-in proxy, no model
    .venv/bin/python scripts/bench_sweep.py --real --jobs 20 cache.dir=/path/to/warm/cache
    .venv/bin/python scripts/bench_sweep.py --profile /tmp/sweep.prof
    .venv/bin/python scripts/bench_sweep.py --real --jobs 20 --tree /tmp/c6d77f2 cache.dir=$PWD/outputs/cache

``--tree`` runs the jobs from another checkout of this repository (its ``src`` and ``conf``, this
virtualenv), so an older commit is measured on the same machine in the same session: e.g.
``git worktree add /tmp/c6d77f2 c6d77f2``. Its breakdown needs the pipeline's ``run_job`` and
the app's ``_job``; a checkout without them prints the totals only.
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


# ``python -m mcu_exp`` under cProfile with a CPU-time clock (cProfile's default is wall time,
# which counts whatever else runs on the machine): argv[1] is the profile file.
PROFILED = """import cProfile, runpy, sys, time
out, sys.argv = sys.argv[1], ["mcu_exp", *sys.argv[2:]]
profiler = cProfile.Profile(time.process_time)
profiler.enable()
try:
    runpy.run_module("mcu_exp", run_name="__main__", alter_sys=True)
finally:
    profiler.disable()
    profiler.dump_stats(out)
"""


def epsilons(n: int) -> str:
    """``n`` distinct ε values in (0, 0.6), comma-separated for a Hydra sweep."""
    return ",".join(f"{0.01 + i * (0.58 / max(1, n - 1)):.4f}" for i in range(n))


def children_cpu() -> float:
    """CPU seconds (user + system) used so far by finished child processes."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(args: list[str], env: dict[str, str], profile: Path | None = None, cwd: Path = REPO) -> tuple[float, float]:
    """Wall and CPU seconds of ``python -m mcu_exp ARGS`` (fails loudly with the tail of
    stderr), under cProfile into ``profile`` when given. CPU time does not grow when other work
    shares the machine; wall time does."""
    prefix = [sys.executable, *(["-c", PROFILED, str(profile)] if profile else ["-m", "mcu_exp"])]
    cpu, started = children_cpu(), time.perf_counter()
    res = subprocess.run([*prefix, *args], cwd=cwd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if res.returncode != 0:
        raise SystemExit(f"bench_sweep: `mcu-exp {' '.join(args)}` failed:\n{res.stderr[-3000:]}")
    return elapsed, children_cpu() - cpu


def job_seconds(outputs: Path) -> list[float]:
    """``job_seconds`` (time inside the pipeline) of every job under ``outputs``, from its
    ``metrics.json``."""
    import json

    found = []
    for path in outputs.glob("**/results/metrics.json"):
        value = json.loads(path.read_text()).get("job_seconds")
        if value is not None:
            found.append(float(value))
    return found


STAGES: dict[str, tuple[str, ...]] = {
    "data and human labels": (
        "typed_config",
        "check_config",
        "load_dataset",
        "human_labels",
        "subgroup_labels",
        "class_warning",
        "print_inputs",
    ),
    "proxy (cached stages, scores, decision)": (
        "build_proxies",
        "preview",
        "plan_stages",
        "render_preview",
        "check_models",
        "run_stages",
        "outcome",
        "relabeller",
    ),
    "alignment (bootstrap, tests, ceiling)": (
        "evaluate_groups",
        "reference_report",
        "attach_ceilings",
        "class_warnings",
    ),
    "measure table and PRR": ("measures_and_baselines", "write_rejection"),
    "outputs (CSVs, tables printed)": (
        "write_outputs",
        "save_config",
        "print_results",
        "print_where",
        "render_table",
        "render_group_table",
        "render_measures",
        "measure_line",
        "print_decision",
        "to_csv",
        "write_text",
        "dumps",
        "print",
    ),
    "MLflow (run, params, metrics, tables)": (
        "__enter__",
        "__exit__",
        "log_params",
        "log_inputs",
        "log_metrics_and_series",
        "set_tags",
        "log_artifacts",
        "log_tables",
        "record_results",
        "job_metrics",
        "unused_sections",
        "run_facts",
        "description",
        "flatten_config",
        "dataset_input",
        "source_tags",
        "run_name",
        "run_tags",
        "headline",
        "finish_job",
    ),
}
CALLBACK_METHODS = ("on_multirun_start", "on_multirun_end", "on_job_start", "on_job_end")
HYDRA = "Hydra (compose, launch) and the rest"
CALLBACKS = "sweep callbacks (parent run, report)"
WRAPPER = "job wrapper (secret masking, console)"


def _find(stats: dict, path_end: str, name: str) -> tuple | None:
    return next((key for key in stats if key[0].endswith(path_end) and key[2] == name), None)


def profile_parts(profile: Path) -> dict[str, float]:
    """Seconds of one profiled sweep by part: the pipeline's stages (callees of ``run_job``,
    grouped by :data:`STAGES`), the job wrapper, the sweep callbacks and everything else."""
    stats = pstats.Stats(str(profile)).stats  # type: ignore[attr-defined]
    total = sum(tt for _, _, tt, _, _ in stats.values())
    parts = dict.fromkeys([HYDRA, CALLBACKS, WRAPPER, *STAGES, "pipeline, other"], 0.0)
    job = _find(stats, "mcu_exp/app.py", "_job")
    run_job = _find(stats, "mcu_exp/pipeline.py", "run_job")
    if job is None or run_job is None:
        raise SystemExit(f"bench_sweep: {profile} holds no mcu_exp job")
    parts[WRAPPER] = stats[job][3] - stats[run_job][3]
    parts["pipeline, other"] = stats[run_job][2]
    for key, (_, _, _, _, callers) in stats.items():
        if run_job in callers:
            cumulative = callers[run_job][3]
            stage = next((s for s, functions in STAGES.items() if key[2] in functions), "pipeline, other")
            parts[stage] += cumulative
        if "/mcu_exp/" in key[0] and key[2] in CALLBACK_METHODS:  # the sweep callbacks, wherever they live
            parts[CALLBACKS] += stats[key][3]
    parts[HYDRA] = total - stats[job][3] - parts[CALLBACKS]
    return parts


def breakdown(one: Path, many: Path, jobs: int) -> dict[str, float]:
    """Profiled seconds added per job by part: (K-job sweep − 1-job sweep) / (K − 1)."""
    first, second = profile_parts(one), profile_parts(many)
    return {part: (second[part] - first[part]) / (jobs - 1) for part in first}


def render_breakdown(parts: dict[str, float], cpu_per_job: float) -> str:
    """The breakdown as lines: profiled seconds per job, share, and the share of the measured
    (unprofiled) CPU seconds per job."""
    total = sum(parts.values())
    lines = [f"{'added per job, by part':<42}{'profiled':>10}{'share':>8}{'≈ CPU s':>10}"]
    for part, seconds in parts.items():
        share = seconds / total if total > 0 else float("nan")
        lines.append(f"  {part:<40}{seconds:>9.3f}s{100 * share:>7.1f}%{share * cpu_per_job:>9.3f}s")
    lines.append(f"  {'total':<40}{total:>9.3f}s{100.0:>7.1f}%{cpu_per_job:>9.3f}s")
    return "\n".join(lines)


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
    parser.add_argument(
        "--outputs",
        type=Path,
        default=None,
        help="outputs folder (default: a fresh temp folder; with --real pass the folder whose cache/ is warm)",
    )
    parser.add_argument(
        "--profile", type=Path, default=None, help="keep the K-job profile in this file and print its hotspots"
    )
    parser.add_argument(
        "--breakdown-jobs", type=int, default=5, help="K, jobs of the profiled sweep that gives the breakdown (0: none)"
    )
    parser.add_argument("--target", type=float, default=0.5, help="CPU seconds per job to PASS (default 0.5)")
    parser.add_argument("--rounds", type=int, default=3, help="times the 1-job and N-job sweeps run (default 3)")
    parser.add_argument("--top", type=int, default=25, help="hotspots to print with --profile")
    parser.add_argument(
        "--tree", type=Path, default=REPO, help="checkout whose src/ and conf/ run the jobs (default: this one)"
    )
    parser.add_argument("overrides", nargs="*", help="extra Hydra overrides for every job")
    args = parser.parse_args(argv)
    if args.jobs < 2:
        raise SystemExit("bench_sweep: --jobs must be at least 2")

    tmp = tempfile.TemporaryDirectory(prefix="bench_sweep_")
    outputs = args.outputs or Path(tmp.name) / "outputs"
    tree = args.tree.resolve()
    if not (tree / "src" / "mcu_exp").is_dir():
        raise SystemExit(f"bench_sweep: --tree {tree} holds no src/mcu_exp")
    paths = (str(tree / "src"), str(tree / "tests"), os.environ.get("PYTHONPATH", ""))
    python_path = os.pathsep.join(p for p in paths if p)
    env = {**os.environ, "MCU_EXP_OUTPUTS": str(outputs), "PYTHONPATH": python_path}
    env.pop("MLFLOW_TRACKING_URI", None)
    env.setdefault("MCU_EXP_DATA", str(REPO.parent / "shared" / "data"))
    common = ["quiet=true", *([] if args.real else [STANDIN]), *args.overrides]

    warm, _ = run([*common, "decision.epsilon=0.1"], env, cwd=tree)
    rounds = []
    for _ in range(max(1, args.rounds)):
        t1, c1 = run(["-m", *common, "decision.epsilon=0.1"], env, cwd=tree)
        tn, cn = run(["-m", *common, f"decision.epsilon={epsilons(args.jobs)}"], env, cwd=tree)
        rounds.append((t1, c1, tn, cn, os.getloadavg()[0]))
    t1, c1, tn, cn = (min(r[i] for r in rounds) for i in range(4))
    per_job, cpu_per_job = (tn - t1) / (args.jobs - 1), (cn - c1) / (args.jobs - 1)
    inside = job_seconds(outputs)
    profiles = Path(tmp.name)
    k = args.breakdown_jobs
    if k >= 2:
        run(["-m", *common, "decision.epsilon=0.1"], env, profile=profiles / "one.prof", cwd=tree)
        many = args.profile or profiles / "many.prof"
        run(["-m", *common, f"decision.epsilon={epsilons(k)}"], env, profile=many, cwd=tree)

    print(f"proxy: {'embedded P1 (cached)' if args.real else 'stand-in'}; outputs: {outputs}; tree: {tree}")
    print(f"load average (1 min):      {os.getloadavg()[0]:7.2f}  on {os.cpu_count()} CPUs")
    print(f"warm-up single run:        {warm:7.2f} s")
    for number, (r1, q1, rn, qn, load) in enumerate(rounds, 1):
        print(
            f"round {number}: 1-job sweep {r1:6.2f} s wall, {q1:6.2f} s CPU; {args.jobs}-job sweep {rn:6.2f} s wall, "
            f"{qn:6.2f} s CPU; added per job {(qn - q1) / (args.jobs - 1):.3f} s CPU (load {load:.2f})"
        )
    print(f"1-job sweep (least):       {t1:7.2f} s wall, {c1:6.2f} s CPU")
    print(f"{args.jobs}-job sweep (least):      {tn:7.2f} s wall, {cn:6.2f} s CPU")
    print(f"added seconds per job:     {per_job:7.2f} s wall, {cpu_per_job:6.3f} s CPU")
    if inside:
        inside.sort()
        print(
            f"job_seconds (pipeline):    median {inside[len(inside) // 2]:.2f} s, max {inside[-1]:.2f} s "
            f"over {len(inside)} runs"
        )
    if k >= 2:
        print(
            render_breakdown(breakdown(profiles / "one.prof", args.profile or profiles / "many.prof", k), cpu_per_job)
        )
    if args.profile:
        print(hotspots(args.profile, args.top))
    verdict = "PASS" if cpu_per_job <= args.target else "FAIL"
    print(f"{verdict}: {cpu_per_job:.3f} s of CPU added per decision-only job (target <= {args.target:g} s)")
    tmp.cleanup()
    if verdict == "FAIL":
        raise SystemExit(1)


if __name__ == "__main__":
    main()
