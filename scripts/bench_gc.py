"""What does the garbage collector cost a job, at Python's thresholds and at the command's?

Runs the same stand-in ``debug=quick`` job (no model) in fresh processes, alternating between
Python's default thresholds (700, 10, 10) and :data:`mcu_exp.collector.GC_THRESHOLD`, and prints
for each the seconds the collector ran (summed from ``gc.callbacks``), its full passes and the
process's CPU seconds, the least of ``--rounds`` (other work only ever adds time). PASS when
the command's thresholds at least halve the collector's time.

    .venv/bin/python scripts/bench_gc.py
    .venv/bin/python scripts/bench_gc.py --rounds 5 model=smollm2-135m
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STANDIN = "proxy._target_=support.standin_proxy.StandInProxy"
DEFAULT = (700, 10, 10)

# ``python -m mcu_exp`` with the collector's passes timed; argv[1]: the thresholds to use (JSON,
# or "" for the command's own), argv[2]: where to write the figures.
RUNNER = """import atexit, gc, json, os, runpy, sys, time
import mcu_exp.collector
wanted, out, sys.argv = sys.argv[1], sys.argv[2], ["mcu_exp", *sys.argv[3:]]
if wanted:
    mcu_exp.collector.GC_THRESHOLD = tuple(json.loads(wanted))
seconds, full, started = [0.0], [0], [0.0]
def timed(phase, info):
    if phase == "start":
        started[0] = time.process_time()
    else:
        seconds[0] += time.process_time() - started[0]
        full[0] += info["generation"] == 2
gc.callbacks.append(timed)
def write():
    times = os.times()
    with open(out, "w") as f:
        json.dump({"gc": seconds[0], "full": full[0], "cpu": times.user + times.system,
                   "threshold": gc.get_threshold()}, f)
atexit.register(write)
runpy.run_module("mcu_exp", run_name="__main__", alter_sys=True)
"""


def one_job(threshold: tuple[int, ...] | None, overrides: list[str], folder: Path) -> dict[str, float]:
    """One job in a fresh process; its collector seconds, full passes and CPU seconds."""
    figures = folder / "figures.json"
    env = {**os.environ, "PYTHONPATH": str(REPO / "tests")}
    line = [sys.executable, "-c", RUNNER, json.dumps(threshold) if threshold else "", str(figures)]
    line += [STANDIN, "debug=quick", "quiet=true", f"paths.outputs={folder / 'outputs'}", *overrides]
    done = subprocess.run(line, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        sys.exit(f"the job failed:\n{done.stderr[-3000:]}")
    found: dict[str, float] = json.loads(figures.read_text())
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("overrides", nargs="*", help="job overrides added to the stand-in debug=quick job")
    args = parser.parse_args()
    from mcu_exp.collector import GC_THRESHOLD

    best: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(args.rounds):
            for name, threshold in (("python", DEFAULT), ("mcu-exp", None)):
                folder = Path(tmp) / f"{name}-{round_}"
                folder.mkdir()
                found = one_job(threshold, args.overrides, folder)
                print(
                    f"round {round_ + 1} {name:8s} thresholds {tuple(found['threshold'])}: collector "
                    f"{found['gc']:.2f} s ({found['full']:.0f} full passes), process {found['cpu']:.2f} s CPU",
                    flush=True,
                )
                kept = best.setdefault(name, dict(found))
                for key in ("gc", "cpu", "full"):
                    kept[key] = min(kept[key], found[key])
    base, ours = best["python"], best["mcu-exp"]
    print(
        f"least over {args.rounds} rounds: collector {base['gc']:.2f} s at {DEFAULT}, {ours['gc']:.2f} s at "
        f"{GC_THRESHOLD}; CPU {base['cpu']:.2f} s against {ours['cpu']:.2f} s"
    )
    verdict = "PASS" if ours["gc"] <= 0.5 * base["gc"] else "FAIL"
    print(f"{verdict}: the command's thresholds leave the collector {ours['gc'] / base['gc']:.2f}x its time (<= 0.5x)")


if __name__ == "__main__":
    main()
