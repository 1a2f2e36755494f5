"""Coverage of the ceiling's program-bootstrap intervals on datasets simulated from a known
beta-binomial reader model (issue 37): the share of datasets whose 95 % interval of the upper
bound (and of the ICC) contains the generating population value. Prints the coverage, its
binomial standard error, and PASS when the upper bound's coverage is within 3 standard errors
of nominal (or above it), FAIL otherwise.

Usage: python scripts/ceiling_coverage.py [--datasets 200] [--resamples 1000] [--programs 50]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "ceiling"))

from test_ceiling_bounds import bb_dataset

from mcu_exp.ceiling.bounds import model_figures, quadrature, size_weights
from mcu_exp.ceiling.program_bootstrap import ceiling_bootstrap


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=200)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--splits", type=int, default=4, help="inner splits (the model figures do not use them)")
    parser.add_argument("--programs", type=int, default=50)
    parser.add_argument("--a", type=float, default=3.0)
    parser.add_argument("--b", type=float, default=3.0)
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--confidence", type=float, default=0.95)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    sizes = rng.integers(8, 10, size=args.programs)  # Scalabrino's panels: 8–9 readers
    quad = quadrature(sizes, 0.5, args.a, args.b)
    truth = model_figures(np.array([args.a]), np.array([args.b]), size_weights(sizes, quad.sizes), quad)
    target = {"upper_auc_score": float(truth["upper_auc_score"][0]), "model_icc": 1.0 / (args.a + args.b + 1.0)}
    covered = dict.fromkeys(target, 0)
    below = dict.fromkeys(target, 0)
    start = time.perf_counter()
    for _ in range(args.datasets):
        ds, _ = bb_dataset(args.a, args.b, sizes, rng)
        boot = ceiling_bootstrap(
            ds,
            resamples=args.resamples,
            splits=args.splits,
            seed=int(rng.integers(1 << 30)),
            confidence=args.confidence,
        )
        for name, value in target.items():
            est = boot.figures[name]
            covered[name] += int(est.ci_low <= value <= est.ci_high)
            below[name] += int(est.ci_high < value)
    elapsed = time.perf_counter() - start
    print(
        f"{args.datasets} datasets of {args.programs} programs, Beta({args.a}, {args.b}), "
        f"{args.resamples} resamples, {elapsed:.1f} s"
    )
    for name, value in target.items():
        share = covered[name] / args.datasets
        error = math.sqrt(args.confidence * (1 - args.confidence) / args.datasets)
        print(
            f"{name}: generating value {value:.4f}, coverage {share:.3f} ± {error:.3f} (nominal {args.confidence}), "
            f"interval below the value {below[name]}, above {args.datasets - covered[name] - below[name]}"
        )
    share = covered["upper_auc_score"] / args.datasets
    error = math.sqrt(args.confidence * (1 - args.confidence) / args.datasets)
    passed = share >= args.confidence - 3 * error
    print(
        "PASS" if passed else "FAIL",
        f"(upper_auc_score coverage {share:.3f}, threshold {args.confidence - 3 * error:.3f})",
    )
    return 0 if passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
