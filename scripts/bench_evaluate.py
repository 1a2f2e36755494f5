"""How fast is one alignment report, and how does it compare with scikit-learn in a loop?

Times ``evaluate()`` as a job calls it (point metrics, baselines, the rank correlations with
the humans' correctness, a 2000-resample stratified bootstrap that recalibrates τ in every
resample, and a 10,000-permutation test of AUC(score)) on 50 programs, best of
``--repeats`` after a warm-up, and, in the same run, the scikit-learn baseline: accuracy,
precision, recall, F1 and both ROC AUCs (``zero_division=nan``) called in a Python loop over the same resamples
(the first ``--sklearn-rows`` of them, timed and scaled to all: the loop costs milliseconds
per row). Prints wall and CPU seconds, the ratio, the largest difference between the two on
those rows, and whether each target is met (exit status 1 if not).

    .venv/bin/python scripts/bench_evaluate.py [--programs 50] [--resamples 2000] [--sklearn-rows 100]
"""

from __future__ import annotations

import argparse
import os
import warnings
from collections.abc import Callable

import numpy as np
from benchlib import timed

MAX_SECONDS = 0.5  # evaluate() on 50 programs with 2000 recalibrating resamples and 10,000 permutations
MIN_SPEEDUP = 10.0  # against scikit-learn in a loop over the same resamples
TOL = 1e-12


def case(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Human labels (prevalence ≈ 0.6), α_cal, α_test, the labels τ (ε = 0.1) gives, and the
    humans' mean correctness."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.6).astype(int)
    alpha_cal = np.clip(0.5 - 0.1 * y + rng.normal(0.0, 0.1, n), 0, 1)
    alpha_test = np.clip(0.5 - 0.1 * y + rng.normal(0.0, 0.1, n), 0, 1)
    pred = (alpha_test <= np.sort(alpha_cal)[int(np.ceil(0.9 * n)) - 1]).astype(int)
    human = np.clip(0.4 + 0.3 * y + rng.normal(0.0, 0.15, n), 0, 1)
    return y, alpha_cal, alpha_test, pred, human


def sklearn_loop(y: np.ndarray, pred: np.ndarray, score: np.ndarray, indices: np.ndarray) -> dict[str, np.ndarray]:
    """The metrics of every resample row, one scikit-learn call per metric and row."""
    from sklearn.metrics import accuracy_score, f1_score, precision_score, recall_score, roc_auc_score

    calls: dict[str, Callable[[np.ndarray, np.ndarray, np.ndarray], float]] = {
        "accuracy": lambda t, p, s: accuracy_score(t, p),
        "precision": lambda t, p, s: precision_score(t, p, zero_division=np.nan),
        "recall": lambda t, p, s: recall_score(t, p, zero_division=np.nan),
        "f1": lambda t, p, s: f1_score(t, p, zero_division=np.nan),
        "auc_binary": lambda t, p, s: roc_auc_score(t, p),
        "auc_score": lambda t, p, s: roc_auc_score(t, s),
    }
    out = {name: np.empty(len(indices)) for name in calls}
    for r, row in enumerate(indices):
        t, p, s = y[row], pred[row], score[row]
        for name, call in calls.items():
            out[name][r] = call(t, p, s)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--programs", type=int, default=50, help="programs (default 50)")
    parser.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples (default 2000)")
    parser.add_argument("--repeats", type=int, default=5, help="timed repeats of evaluate(); best kept")
    parser.add_argument(
        "--sklearn-rows",
        type=int,
        default=100,
        help="resamples the scikit-learn loop scores (default 100; scaled to all)",
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    from mcu_exp.calibration import Scores, get_rule
    from mcu_exp.config import DecisionConfig
    from mcu_exp.evaluation import DegenerateMetricWarning, evaluate, resample_metrics, stratified_indices

    y, alpha_cal, alpha_test, pred, human = case(args.programs, args.seed)
    score = -alpha_test
    scores, decision = Scores(alpha_cal=alpha_cal, alpha_test=alpha_test), DecisionConfig(epsilon=0.1)
    rule = get_rule("conformal")

    def relabel(indices: np.ndarray) -> np.ndarray:
        return rule.relabel(scores, decision, indices)  # type: ignore[misc]

    def job_evaluate() -> object:
        return evaluate(
            y, pred, score, resamples=args.resamples, seed=args.seed, human=human, relabel=relabel, permutations=10_000
        )

    times: dict[str, tuple[float, float]] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error", DegenerateMetricWarning)
        job_evaluate()  # warm-up (imports, caches)
        for _ in range(args.repeats):
            with timed(times, "evaluate()"):
                job_evaluate()
    indices = stratified_indices(y, args.resamples, np.random.default_rng(args.seed))
    with timed(times, "resample_metrics() on the same rows"):
        ours = resample_metrics(y, pred, indices, score)
    rows = min(args.sklearn_rows, args.resamples)
    with timed(times, f"scikit-learn loop over {rows} of the rows"):
        reference = sklearn_loop(y, pred, score, indices[:rows])
    scale = args.resamples / rows
    wall, cpu = times[f"scikit-learn loop over {rows} of the rows"]
    times["scikit-learn loop, scaled to every row"] = (wall * scale, cpu * scale)
    diff = max(float(np.nanmax(np.abs(ours[name][:rows] - reference[name]), initial=0.0)) for name in reference)
    same_nan = all(np.array_equal(np.isnan(ours[name][:rows]), np.isnan(reference[name])) for name in reference)

    print(
        f"{args.programs} programs, {args.resamples} stratified resamples; load average (1 min) "
        f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs"
    )
    for name, (wall, cpu) in times.items():
        print(f"{name:40s} wall {wall:8.4f} s   cpu {cpu:8.4f} s")
    ratio = times["scikit-learn loop, scaled to every row"][1] / times["evaluate()"][1]
    print(f"scikit-learn loop (scaled) / evaluate(), CPU: {ratio:.0f}x")
    print(f"max |vectorised - scikit-learn| over {len(reference)} metrics x {rows} rows: {diff:.2e}")
    seconds = times["evaluate()"][0]
    checks = [
        (f"evaluate() <= {MAX_SECONDS} s wall: {seconds:.3f} s", seconds <= MAX_SECONDS),
        (f"evaluate() >= {MIN_SPEEDUP:g}x faster than the scikit-learn loop (CPU): {ratio:.0f}x", ratio >= MIN_SPEEDUP),
        (
            f"vectorised metrics equal scikit-learn within {TOL:g}, undefined in the same rows: {diff:.2e}",
            diff <= TOL and same_nan,
        ),
    ]
    for label, ok in checks:
        print(f"  [{'PASS' if ok else 'FAIL'}] {label}")
    return 0 if all(ok for _, ok in checks) else 1


if __name__ == "__main__":
    raise SystemExit(main())
