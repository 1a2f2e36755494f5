"""Compare the results of two runs (or two sweeps) file by file: did a change keep behaviour?

    python scripts/compare_runs.py BEFORE AFTER [--tolerance T] [--ignore-metric NAME ...]

BEFORE and AFTER are run folders (holding ``results/``) or sweep folders (holding numbered
job folders, paired by name). Every CSV under BEFORE's ``results/`` must be byte-identical in
AFTER (files only AFTER has are listed, as new outputs, not differences); the
metrics of ``metrics.json`` must be equal (timing, cache counters and generation usage left
out, since a cached rerun differs there by design). With ``--tolerance T`` a file or metric
whose numbers differ by at most T (and whose text cells are equal) counts as the same, and
the largest difference is printed: for a change that moves results in the last bit only.
Prints one line per file and a PASS/FAIL line; exits 1 on any difference beyond T.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import pandas as pd

VOLATILE = ("job_seconds", "generation_cache_hits", "generation_cache_misses", "model_loaded", "scorer_loaded")
VOLATILE_PREFIXES = ("usage.",)  # what generation spent: nothing when every sample is cached


def run_dirs(root: Path) -> dict[str, Path]:
    """``{"": root}`` for a run folder, ``{job name: folder}`` for a sweep folder."""
    if (root / "results").is_dir():
        return {"": root}
    return {p.name: p for p in sorted(root.iterdir()) if (p / "results").is_dir()}


def numeric_gap(a: Path, b: Path) -> float:
    """The largest |difference| between two CSVs' numbers (inf when their shape or any text
    cell differs)."""
    left, right = pd.read_csv(a), pd.read_csv(b)
    if left.shape != right.shape or list(left.columns) != list(right.columns):
        return math.inf
    gap = 0.0
    for column in left.columns:
        x, y = left[column], right[column]
        if pd.api.types.is_numeric_dtype(x) and pd.api.types.is_numeric_dtype(y):
            if not (x.isna() == y.isna()).all():
                return math.inf
            diff = (x - y).abs().max(skipna=True)
            gap = max(gap, 0.0 if pd.isna(diff) else float(diff))
        elif not x.equals(y):
            return math.inf
    return gap


def metrics_file(run: Path) -> Path:
    """A run's ``metrics.json``: in ``results/`` (logged with the artifacts), or beside it
    (runs made before it moved there)."""
    inside = run / "results" / "metrics.json"
    return inside if inside.is_file() else run / "metrics.json"


def compare_run(before: Path, after: Path, ignore: set[str], tolerance: float = 0.0) -> tuple[list[str], list[str]]:
    """(differences, differences within ``tolerance``) between two run folders, one line each."""
    problems: list[str] = []
    close: list[str] = []
    for a in sorted((before / "results").glob("*.csv")):
        b = after / "results" / a.name
        name = a.name
        if not b.is_file():
            problems.append(f"{name}: missing after")
        elif a.read_bytes() != b.read_bytes():
            gap = numeric_gap(a, b)
            line = f"{name}: contents differ (largest numeric difference {gap:.3g})"
            (close if gap <= tolerance else problems).append(line)
    ma = json.loads(metrics_file(before).read_text())
    mb = json.loads(metrics_file(after).read_text())
    skip = set(VOLATILE) | ignore
    for key in sorted(set(ma) | set(mb)):
        bare = key.removeprefix("reference.")  # what generating the cross-proxy reference cost
        if bare in skip or bare.startswith(VOLATILE_PREFIXES):
            continue
        x, y = ma.get(key), mb.get(key)
        if x != y:
            line = f"metrics.json {key}: {x!r} -> {y!r}"
            near = isinstance(x, (int, float)) and isinstance(y, (int, float)) and abs(x - y) <= tolerance
            (close if near else problems).append(line)
    return problems, close


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--ignore-metric", action="append", default=[], help="metric name to leave out")
    parser.add_argument(
        "--tolerance",
        type=float,
        default=0.0,
        help="numbers differing by at most this count as equal (default 0: byte for byte)",
    )
    args = parser.parse_args(argv)
    left, right = run_dirs(args.before), run_dirs(args.after)
    if set(left) != set(right) or not left:
        print(f"FAIL: runs differ: before {sorted(left)}, after {sorted(right)}")
        return 1
    failed = within = 0
    for name in left:
        problems, close = compare_run(left[name], right[name], set(args.ignore_metric), args.tolerance)
        files = len(list((left[name] / "results").glob("*.csv")))
        new = sorted(
            {p.name for p in (right[name] / "results").glob("*.csv")}
            - {p.name for p in (left[name] / "results").glob("*.csv")}
        )
        label = name or args.before.name
        if new:
            print(f"{label}: new outputs {', '.join(new)}")
        if problems:
            failed += 1
            print(f"{label}: {len(problems)} difference(s)")
            for line in problems:
                print(f"  {line}")
        elif close:
            within += 1
            print(f"{label}: {files} CSV files and the metrics equal within {args.tolerance:g}; not byte for byte:")
            for line in close:
                print(f"  {line}")
        else:
            print(f"{label}: {files} CSV files identical, metrics equal")
    same = len(left) - failed - within
    print(
        f"{'FAIL' if failed else 'PASS'}: of {len(left)} runs, {same} identical, {within} equal within "
        f"{args.tolerance:g}, {failed} different"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
