"""One alignment result with everything a table needs: metrics, bootstrap CIs, baselines.

:func:`evaluate` bundles :mod:`~mcu_exp.evaluation.metrics`,
:mod:`~mcu_exp.evaluation.bootstrap` and :mod:`~mcu_exp.evaluation.baselines`;
:func:`render_table` prints it for a terminal or log, :func:`metrics_for_mlflow` flattens it
for tracking.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from rich.console import Console
from rich.table import Table

from mcu_exp.evaluation.baselines import ALWAYS, RANDOM, always_positive, random_expected
from mcu_exp.evaluation.bootstrap import (
    Calibration,
    Relabel,
    bootstrap_distribution,
    percentile_interval,
    undefined_shares,
)
from mcu_exp.evaluation.metrics import ArrayLike, alignment_metrics, unique_warnings
from mcu_exp.evaluation.registry import DEFAULT_FORMAT, INTERVAL_KINDS, header, metric, metric_names
from mcu_exp.evaluation.significance import auc_permutation_p
from mcu_exp.evaluation.verdict import verdict
from mcu_exp.names import UNDEFINED

Reuse = Callable[[str, tuple[Any, ...], Callable[[], Any]], Any]
"""How :func:`evaluate` may reuse its decision-free parts across calls: ``(name, key parts,
compute) -> value`` (e.g. :func:`mcu_exp.result_cache.cached_result` on a cache folder)."""

BASELINE_SHORT = {ALWAYS: "always", RANDOM: "random"}  # in the MLflow keys
CI_LOW, CI_HIGH = "_ci_low", "_ci_high"  # suffixes of a metric's interval bounds in MLflow
AUC_PERMUTATION_P = "auc_score_perm_p"  # two-sided permutation p-value of AUC(score) vs 0.5
CI_RECALIBRATE, CI_CONDITIONAL = "recalibrate", "conditional"
CI_METHODS = (CI_RECALIBRATE, CI_CONDITIONAL)
CI_DESCRIPTIONS = {
    CI_RECALIBRATE: "stratified bootstrap resamples, τ recalibrated in each",
    CI_CONDITIONAL: "stratified bootstrap resamples, each program's label fixed",
}


def baseline_key(baseline: str, name: str) -> str:
    """MLflow key of metric ``name`` of ``baseline`` (ALWAYS or RANDOM):
    ``baseline_always_<m>`` or ``baseline_random_<m>``."""
    return f"baseline_{BASELINE_SHORT[baseline]}_{name}"


@dataclass(frozen=True)
class AlignmentReport:
    """Metrics of one labelling against human labels, with CIs and the trivial baselines.

    ``ci`` maps each rate, AUC and correlation to its stratified bootstrap percentile
    interval, computed as ``ci_method`` says (see :mod:`mcu_exp.evaluation.bootstrap`);
    ``baselines`` maps "always_positive" and "random_expected" to their metrics;
    ``tests`` holds significance tests (``auc_score_perm_p``); ``warnings`` holds the
    degenerate-input messages raised while computing them. An undefined metric is NaN.
    """

    metrics: dict[str, float]
    ci: dict[str, tuple[float, float]]
    baselines: dict[str, dict[str, float]]
    warnings: tuple[str, ...]
    n: int
    confidence: float
    resamples: int
    seed: int
    ci_method: str = CI_CONDITIONAL
    tests: dict[str, float] = field(default_factory=dict)
    permutations: int = 0
    ceiling: dict[str, float] = field(default_factory=dict)
    """The humans' ceiling and the proxy against it (``ceiling.*``, ``vs_ceiling.*``,
    ``disattenuated.*``: :mod:`mcu_exp.evaluation.ceiling_lines`); empty when not computed."""

    @property
    def undefined(self) -> list[str]:
        """The metrics without a value on these programs (NaN), in table order."""
        return [name for name in self.metric_names if math.isnan(self.metrics[name])]

    @property
    def verdict(self) -> str:
        """The plain-sentence verdict (:func:`mcu_exp.evaluation.verdict.verdict`)."""
        return verdict(self)

    @property
    def metric_names(self) -> list[str]:
        """The registered metrics in table order (score metrics such as ``auc_score`` only
        when a score was given)."""
        return [name for name in metric_names() if name in self.metrics]

    def rows(self) -> list[dict[str, object]]:
        """One dict per metric: metric, value, ci_low, ci_high, always_positive,
        random_expected (None where a column does not apply)."""
        out: list[dict[str, object]] = []
        for name in self.metric_names:
            low, high = self.ci.get(name, (None, None))
            out.append(
                {
                    "metric": name,
                    "value": self.metrics[name],
                    "ci_low": low,
                    "ci_high": high,
                    ALWAYS: self.baselines[ALWAYS].get(name),
                    RANDOM: self.baselines[RANDOM].get(name),
                }
            )
        return out

    def to_frame(self) -> pd.DataFrame:
        """:meth:`rows` as a DataFrame indexed by metric."""
        return pd.DataFrame(self.rows()).set_index("metric")


def evaluate(
    y_true: ArrayLike,
    y_pred: ArrayLike,
    score: ArrayLike | None = None,
    resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
    human: ArrayLike | None = None,
    relabel: Relabel | None = None,
    permutations: int = 10_000,
    calibration: Calibration | None = None,
    reuse: Reuse | None = None,
) -> AlignmentReport:
    """Metrics, stratified bootstrap CIs and baselines of ``y_pred`` (and ``score``, higher =
    more understandable; ``human``, the humans' continuous per-program value for the rank
    correlations) against ``y_true``, and the permutation test of AUC(score) (``permutations``
    0: none). With ``relabel`` the CIs recalibrate the decision in every resample
    (:mod:`mcu_exp.evaluation.bootstrap`); with ``calibration`` they recalibrate on all the
    programs it names and score these, a subset of them. Degenerate-input warnings are emitted once each and
    kept in the report. With ``reuse``, the score metrics' bootstrap distributions and the
    permutation test, which do not depend on ``y_pred`` (the decision), go through it: a sweep
    over ε computes them once (the same numbers; :func:`score_part_key`)."""
    with unique_warnings() as messages:
        metrics = alignment_metrics(y_true, y_pred, score, human)
        baselines = {ALWAYS: always_positive(y_true, human), RANDOM: random_expected(y_true)}
    if reuse is None or score is None:
        dist = bootstrap_distribution(y_true, y_pred, score, resamples, seed, human, relabel, calibration)
    else:
        key = score_part_key(y_true, score, human, resamples, seed, calibration)
        scored = reuse(
            "score_bootstrap",
            key,
            lambda: bootstrap_distribution(y_true, y_pred, score, resamples, seed, human, None, calibration, part=True),
        )
        labelled = bootstrap_distribution(
            y_true, y_pred, score, resamples, seed, human, relabel, calibration, part=False
        )
        merged = {**labelled, **scored}
        dist = {name: merged[name] for name in metric_names(INTERVAL_KINDS) if name in merged}  # compute()'s order
    ci = {key: percentile_interval(values, confidence) for key, values in dist.items()}
    notes = list(messages)
    if "mcc" in ci and np.unique(np.asarray(y_pred)).size == 1 and not math.isnan(metrics["mcc"]):
        # A constant labelling's MCC is 0 by convention (0/0); an interval around it would be a
        # point that says nothing, and its lower bound 0 would outrank every informative labeller.
        ci["mcc"] = (math.nan, math.nan)
        notes.append("MCC's interval is undefined: the labelling is constant, its MCC 0 is a convention (0/0)")
    for name, share in undefined_shares(dist).items():
        if not math.isnan(metrics[name]):
            notes.append(
                f"{header(name)} is undefined in {100.0 * share:.1f}% of the resamples; its CI is over the others"
            )
    tests = {}
    if score is not None and permutations:
        if reuse is None:
            tests[AUC_PERMUTATION_P] = auc_permutation_p(y_true, score, permutations, seed)
        else:
            key = (np.asarray(y_true), np.asarray(score, dtype=float), permutations, seed)
            tests[AUC_PERMUTATION_P] = reuse("auc_permutation_p", key, lambda: auc_permutation_p(*key))
    return AlignmentReport(
        metrics=metrics,
        ci=ci,
        baselines=baselines,
        warnings=tuple(notes),
        n=int(metrics["n"]),
        confidence=confidence,
        resamples=resamples,
        seed=seed,
        ci_method=CI_CONDITIONAL if relabel is None and calibration is None else CI_RECALIBRATE,
        tests=tests,
        permutations=permutations if tests else 0,
    )


def score_part_key(
    y_true: ArrayLike,
    score: ArrayLike,
    human: ArrayLike | None,
    resamples: int,
    seed: int,
    calibration: Calibration | None,
) -> tuple[Any, ...]:
    """Everything the score metrics' bootstrap distributions are a function of: the labels and
    the score, the humans' values, the resamples and seed, and the calibration draw's programs
    (never the proxy's labels or how they were recalibrated)."""
    draw = None if calibration is None else (np.asarray(calibration.strata), np.asarray(calibration.scored))
    values = None if human is None else np.asarray(human, dtype=float)
    return (np.asarray(y_true), np.asarray(score, dtype=float), values, resamples, seed, draw)


def format_value(name: str, value: float | None, expected: bool = False) -> str:
    """A metric for display in its registered format: rates as percentages (1 decimal),
    AUCs and correlations with 3 decimals, counts as integers (expected counts with 1
    decimal); other numbers with 3 decimals; "—" when missing, "undefined" when NaN."""
    if value is None:
        return "—"
    if isinstance(value, float) and math.isnan(value):
        return UNDEFINED
    try:
        return metric(name).format(value, expected)
    except KeyError:
        return format(value, DEFAULT_FORMAT)


def format_interval(name: str, interval: tuple[float, float] | None) -> str:
    """A confidence interval for display, in the unit of :func:`format_value`."""
    if interval is None:
        return "—"
    if all(math.isnan(bound) for bound in interval):
        return UNDEFINED
    low, high = (format_value(name, bound) for bound in interval)
    return f"[{low}, {high}]"


def render_table(report: AlignmentReport, title: str = "Alignment with human labels") -> str:
    """The report as a text table (metric | value | CI | always-1 | random baseline), rendered
    with rich into a string 100 columns wide, without colour or a TTY; the humans' ceiling and
    the proxy against it under it when the report has them."""
    table = Table(
        title=title,
        caption=(
            f"n = {report.n}, prevalence = {100.0 * report.metrics['prevalence']:.1f}%; "
            f"CIs: {report.resamples} {CI_DESCRIPTIONS[report.ci_method]}, seed {report.seed}"
        ),
    )
    for column, justify in (
        ("metric", "left"),
        ("value", "right"),
        (f"{100.0 * report.confidence:g} % CI", "right"),
        ("always-1 baseline", "right"),
        ("random baseline", "right"),
    ):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for row in report.rows():
        name = str(row["metric"])
        interval = report.ci.get(name)
        table.add_row(
            name,
            format_value(name, report.metrics[name]),
            format_interval(name, interval),
            format_value(name, report.baselines[ALWAYS].get(name)),
            format_value(name, report.baselines[RANDOM].get(name), expected=True),
        )
    buffer = io.StringIO()
    console = Console(
        file=buffer, width=100, color_system=None, force_terminal=False, force_jupyter=False, soft_wrap=False
    )
    console.print(table)
    p_value = report.tests.get(AUC_PERMUTATION_P)
    if p_value is not None:
        shown = UNDEFINED if math.isnan(p_value) else f"{p_value:.4f}"
        console.print(
            f"AUC (score) vs 0.5: two-sided permutation p = {shown} ({report.permutations:,} permutations)",
            markup=False,
            highlight=False,
        )
    high = labelled_high_line(report)
    if high:
        console.print(high, markup=False, highlight=False)
    if report.ceiling:
        from mcu_exp.evaluation.ceiling_lines import ceiling_lines

        for line in ceiling_lines(report.ceiling):
            console.print(line, markup=False, highlight=False)
    for message in report.warnings:
        console.print(f"warning: {message}", markup=False, highlight=False)
    console.print(report.verdict, markup=False, highlight=False)
    return buffer.getvalue()


NEAR_CONSTANT = 2  # programs: a labelling with at most this many on one side is nearly constant


def near_constant(high: float, n: float) -> bool:
    """Whether a labelling with ``high`` of ``n`` programs High has at most :data:`NEAR_CONSTANT`
    on one side (False when either is undefined): flagged everywhere, ranked last by the sweeps."""
    if not (math.isfinite(high) and math.isfinite(n)):
        return False
    return min(round(high), round(n) - round(high)) <= NEAR_CONSTANT


def labelled_high_line(report: AlignmentReport) -> str:
    """How many programs the proxy labelled High beside the humans' count, and a warning when
    all but :data:`NEAR_CONSTANT` programs are labelled alike (F1 then mostly copies always-1)."""
    m = report.metrics
    if not all(k in m for k in ("tp", "fp", "fn", "tn")) or not report.n:
        return ""
    high, humans = int(m["tp"] + m["fp"]), int(m["tp"] + m["fn"])
    line = (
        f"Labelled High: {high} of {report.n} programs ({high / report.n:.1%}); "
        f"the humans: {humans} ({humans / report.n:.1%})"
    )
    if near_constant(high, report.n):
        line += "; nearly constant: F1 mostly repeats the always-understandable baseline, read MCC and AUC"
    return line


def metrics_for_mlflow(report: AlignmentReport, prefix: str = "") -> dict[str, float]:
    """Flat name → value for ``mlflow.log_metrics``: each metric (with n and prevalence),
    ``<m>_ci_low``/``<m>_ci_high``, ``baseline_always_<m>`` and ``baseline_random_<m>`` for
    the registered rates, AUCs and correlations, the tests' p-values, and the humans' ceiling
    with the proxy against it (``ceiling.*``, ``vs_ceiling.*``, ``disattenuated.*``) when the
    report has them. Undefined values
    stay NaN (MLflow stores NaN); missing ones are left out."""
    flat: dict[str, float | None] = {**report.metrics, **report.tests, **report.ceiling}
    for name, (low, high) in report.ci.items():
        flat[f"{name}{CI_LOW}"] = low
        flat[f"{name}{CI_HIGH}"] = high
    for baseline in (ALWAYS, RANDOM):
        for name in metric_names(INTERVAL_KINDS):
            if name in report.metrics:
                flat[baseline_key(baseline, name)] = report.baselines[baseline].get(name)
    return {
        f"{prefix}{name}": float(value) for name, value in flat.items() if value is not None and not math.isinf(value)
    }
