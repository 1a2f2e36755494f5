"""``mcu-exp figures PATH…``: draw finished jobs' own figures from the files they wrote.

A sweep's jobs leave their figures out by default (``evaluation.plots`` unset: drawn in a single
run's job, not in a sweep's), so a sweep of decision-only jobs stays cheap; this command draws
them for the jobs someone wants to look at (a job folder, its ``results/``, or a sweep folder
for all its jobs): the sensitivity curves against the threshold and ε, coverage, the rejection
curve and the headline figure (:mod:`mcu_exp.report.job_figures`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path


def build_parser(prog: str = "mcu-exp figures") -> argparse.ArgumentParser:
    """The command's arguments."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Draw finished jobs' own figures (sensitivity, coverage, rejection, headline) from their files.",
        epilog="example: mcu-exp figures outputs/multirun/2026-12-05/01-32-06-29657-3043",
    )
    parser.add_argument(
        "paths", nargs="+", type=Path, metavar="PATH", help="a job folder, its results/, or a sweep folder"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point: draw every job's figures under the paths; one line per job, exit 2 when none."""
    from mcu_exp.report.job_figures import draw_job_figures, job_results

    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    missing = [str(p) for p in args.paths if not p.exists()]
    if missing:
        print(f"mcu-exp figures: error: no such folder: {', '.join(missing)}", file=sys.stderr)
        raise SystemExit(2)
    found = job_results(list(args.paths))
    if not found:
        print("mcu-exp figures: error: no finished job (results/metrics.json) under the paths given", file=sys.stderr)
        raise SystemExit(2)
    for results in found:
        drawn = draw_job_figures(results)
        print(f"{results}: {len(drawn)} figures ({', '.join(p.name for p in drawn)})")
