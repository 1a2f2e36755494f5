"""Compare the results of two runs (or two sweeps) file by file: did a change keep behaviour?

    python scripts/compare_runs.py BEFORE AFTER [--ignore-metric NAME ...]

BEFORE and AFTER are run folders (holding ``results/``) or sweep folders (holding numbered
job folders, paired by name). Every CSV under BEFORE's ``results/`` must be byte-identical in
AFTER (files only AFTER has are listed, as new outputs, not differences); the
metrics of ``metrics.json`` must be equal (timing, cache counters and generation usage left
out, since a cached rerun differs there by design). Prints one line per file and a PASS/FAIL line;
exits 1 on any difference.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

VOLATILE = ("job_seconds", "generation_cache_hits", "generation_cache_misses", "model_loaded", "scorer_loaded")
VOLATILE_PREFIXES = ("usage.",)  # what generation spent: nothing when every sample is cached


def run_dirs(root: Path) -> dict[str, Path]:
    """``{"": root}`` for a run folder, ``{job name: folder}`` for a sweep folder."""
    if (root / "results").is_dir():
        return {"": root}
    return {p.name: p for p in sorted(root.iterdir()) if (p / "results").is_dir()}


def compare_run(before: Path, after: Path, ignore: set[str]) -> list[str]:
    """The differences between two run folders, one line each."""
    problems = []
    for a in sorted((before / "results").glob("*.csv")):
        b = after / "results" / a.name
        name = a.name
        if not b.is_file():
            problems.append(f"{name}: missing after")
        elif a.read_bytes() != b.read_bytes():
            problems.append(f"{name}: contents differ")
    ma = json.loads((before / "metrics.json").read_text())
    mb = json.loads((after / "metrics.json").read_text())
    skip = set(VOLATILE) | ignore
    for key in sorted(set(ma) | set(mb)):
        bare = key.removeprefix("reference.")  # what generating the cross-proxy reference cost
        if bare in skip or bare.startswith(VOLATILE_PREFIXES):
            continue
        if ma.get(key) != mb.get(key):
            problems.append(f"metrics.json {key}: {ma.get(key)!r} -> {mb.get(key)!r}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--ignore-metric", action="append", default=[], help="metric name to leave out")
    args = parser.parse_args(argv)
    left, right = run_dirs(args.before), run_dirs(args.after)
    if set(left) != set(right) or not left:
        print(f"FAIL: runs differ: before {sorted(left)}, after {sorted(right)}")
        return 1
    failed = 0
    for name in left:
        problems = compare_run(left[name], right[name], set(args.ignore_metric))
        files = len(list((left[name] / "results").glob("*.csv")))
        new = sorted({p.name for p in (right[name] / "results").glob("*.csv")}
                     - {p.name for p in (left[name] / "results").glob("*.csv")})
        label = name or args.before.name
        if new:
            print(f"{label}: new outputs {', '.join(new)}")
        if problems:
            failed += 1
            print(f"{label}: {len(problems)} difference(s)")
            for line in problems:
                print(f"  {line}")
        else:
            print(f"{label}: {files} CSV files identical, metrics equal")
    print(f"{'FAIL' if failed else 'PASS'}: {len(left) - failed} of {len(left)} runs identical")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
