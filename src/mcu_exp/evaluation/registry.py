"""The metric registry: every alignment metric is defined once, by one decorated function.

A :class:`Metric` carries its name, table header, kind, display format, one vectorised
implementation and, optionally, its closed-form expected value under the prevalence-matched
random labeller. Every consumer (point metrics, bootstrap, sensitivity grids, the report
table, MLflow keys, the comparison tables, tuning) asks the registry for names, headers and
implementations, so adding a metric is one function::

    @register("balanced_accuracy", header="balanced accuracy", kind="rate")
    def balanced_accuracy(c: Counts) -> np.ndarray:
        return 0.5 * (safe_ratio(c.tp, c.tp + c.fn, 0.0) + safe_ratio(c.tn, c.tn + c.fp, 0.0))

A label metric takes :class:`Counts` (tp, fp, fn, tn arrays of any shape: one labelling,
a (resamples,) bootstrap or a (grid,) sweep) and returns an array of that shape; a score
metric (``uses_score=True``) takes a :class:`Ranking` (a continuous score and a
(rows, n) index matrix) and returns one value per row; a score metric that also needs the
humans' continuous per-program value (``uses_human=True``, e.g. a rank correlation with mean
correctness) is computed only when the ranking carries one. Kinds: ``rate``, ``auc`` and
``corr`` metrics get bootstrap CIs and baselines (rates shown as percentages, AUCs and
correlations with 3 decimals); ``count`` metrics (the confusion counts) are reported as they
are. Listings follow kind order (rate, auc, corr, count), then registration order. A metric
whose denominator is zero on some input is undefined there and returns NaN, never a
conventional number. ``headline=True`` puts the metric among the few a job logs to MLflow
as metrics (with its CI bounds; every metric is in ``metrics.json`` and the MLflow tables
either way). The built-ins live in :mod:`mcu_exp.evaluation.definitions`; the metrics are
entries of :data:`METRICS`, the project's one :class:`~mcu_exp.registry.Registry` kind for
metrics, so a plugin package registers one with the same decorator (docs/architecture.md).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal, TypeVar

import numpy as np

from mcu_exp.plugin_guard import guard_fields
from mcu_exp.registry import Registry

Kind = Literal["rate", "auc", "corr", "count"]
KINDS: tuple[Kind, ...] = ("rate", "auc", "corr", "count")
INTERVAL_KINDS: tuple[Kind, ...] = ("rate", "auc", "corr")  # bootstrapped, compared with the baselines
FORMATS: dict[str, tuple[str, str]] = {
    "rate": (".1%", ".1%"),
    "auc": (".3f", ".3f"),
    "corr": (".3f", ".3f"),
    "count": (".0f", ".1f"),
}  # (observed, expected value)
DEFAULT_FORMAT = ".3f"  # any other number (n, prevalence, an unregistered name)
UNDEFINED = float("nan")  # the value of a metric whose denominator is zero
CHANCE_AUC = 0.5  # an AUC's value for a ranking independent of the truth
PRIMARY = "f1"  # the headline metric: a job's result, the tuning objective, the baseline columns
HEADLINE = (PRIMARY, "auc_binary")  # shown per reader subgroup and in the θ and ε figures


def safe_ratio(num: np.ndarray, den: np.ndarray, default: float = UNDEFINED) -> np.ndarray:
    """num / den elementwise, ``default`` (NaN: undefined) where den is 0."""
    out = np.full(np.shape(num), default, dtype=float)
    np.divide(num, den, out=out, where=den > 0)
    return out


RANK_DECIMALS = 12
"""Decimals every rank-based figure rounds its values to first (ties within summation error)."""


@dataclass(frozen=True)
class Counts:
    """Confusion counts of one or many labellings (arrays of one shape; positive class = 1)."""

    tp: np.ndarray
    fp: np.ndarray
    fn: np.ndarray
    tn: np.ndarray

    @classmethod
    def from_labels(cls, truth: np.ndarray, pred: np.ndarray) -> Counts:
        """Counts of each row (last axis) of two 0/1 arrays of equal shape."""
        t = np.asarray(truth, dtype=np.int64)
        p = np.asarray(pred, dtype=np.int64)
        tp = (t & p).sum(axis=-1)
        n_pos = t.sum(axis=-1)
        fp = p.sum(axis=-1) - tp
        return cls(tp=tp, fp=fp, fn=n_pos - tp, tn=t.shape[-1] - n_pos - fp)

    @property
    def n_pos(self) -> np.ndarray:
        """Actual positives, tp + fn."""
        out: np.ndarray = self.tp + self.fn
        return out

    @property
    def n_neg(self) -> np.ndarray:
        """Actual negatives, fp + tn."""
        out: np.ndarray = self.fp + self.tn
        return out

    @property
    def predicted(self) -> np.ndarray:
        """Predicted positives, tp + fp."""
        out: np.ndarray = self.tp + self.fp
        return out

    @property
    def n(self) -> np.ndarray:
        """Programs per labelling."""
        out: np.ndarray = self.tp + self.fp + self.fn + self.tn
        return out


@dataclass(frozen=True)
class Ranking:
    """A continuous score (higher = more understandable) and the rows to score it on: row r
    holds programs ``indices[r]`` (e.g. a bootstrap resample) with 0/1 truth ``truth[r]`` and,
    when known, the humans' continuous value of each program (``human``, per program like
    ``score``, e.g. mean correctness)."""

    score: np.ndarray
    indices: np.ndarray
    truth: np.ndarray
    human: np.ndarray | None = None

    def __post_init__(self) -> None:
        # Ranks compare values: two sums of the same numbers in another order can differ by
        # 1e-16 and break a tie, so values are rounded to RANK_DECIMALS before any ranking.
        object.__setattr__(self, "score", np.round(np.asarray(self.score, dtype=float), RANK_DECIMALS))
        if self.human is not None:
            object.__setattr__(self, "human", np.round(np.asarray(self.human, dtype=float), RANK_DECIMALS))

    @classmethod
    def single(cls, score: np.ndarray, truth: np.ndarray, human: np.ndarray | None = None) -> Ranking:
        """One row: every program once, in order."""
        return cls(score=score, indices=np.arange(truth.size)[None, :], truth=truth[None, :], human=human)


@dataclass(frozen=True)
class RandomLabeller:
    """Labels each of ``n`` programs 1 with probability p = n₊/n, independently of the truth.

    The predicted positives are K ~ Binomial(n, p) and, given K = k, TP ~ Hypergeometric(n,
    n₊, k), so E[TP | k] = k·p; closed forms average a metric's value given k over K.
    """

    n: int
    n_pos: int

    @property
    def n_neg(self) -> int:
        """Actual negatives."""
        return self.n - self.n_pos

    @property
    def p(self) -> float:
        """The prevalence, which is also each program's chance of label 1."""
        return self.n_pos / self.n

    @cached_property
    def k(self) -> np.ndarray:
        """Every possible number of predicted positives, 0..n."""
        return np.arange(self.n + 1)

    @cached_property
    def p_k(self) -> np.ndarray:
        """P(K = k) for each k."""
        from scipy import stats  # imported here: SciPy's stats take ~0.8 s to import, a job needs them once

        out: np.ndarray = stats.binom.pmf(self.k, self.n, self.p)
        return out

    @cached_property
    def tp_given_k(self) -> np.ndarray:
        """E[TP | K = k] for each k."""
        from scipy import stats

        with np.errstate(divide="ignore", invalid="ignore"):  # scipy also computes the kurtosis,
            out: np.ndarray = stats.hypergeom.mean(self.n, self.n_pos, self.k)  # which divides by 0 at k = 0, n
            return out


Compute = Callable[[Counts], np.ndarray] | Callable[[Ranking], np.ndarray]
ComputeT = TypeVar("ComputeT", Callable[[Counts], np.ndarray], Callable[[Ranking], np.ndarray])


@dataclass(frozen=True)
class Metric:
    """One registered metric (see the module docstring).

    ``random`` gives the expected value under :class:`RandomLabeller` (None: no baseline);
    ``uses_human`` marks a score metric that needs :attr:`Ranking.human`;
    ``short`` is a compact header (per-group columns); ``series`` puts the metric on the ε
    grid and in the MLflow series; ``headline`` among the metrics a job logs to MLflow;
    ``fmt``/``expected_fmt`` are format specs for an observed and an expected value
    (defaults by kind).
    """

    name: str
    header: str
    kind: Kind
    compute: Compute
    uses_score: bool = False
    uses_human: bool = False
    random: Callable[[RandomLabeller], float] | None = None
    short: str = ""
    series: bool = True
    headline: bool = False
    fmt: str = ""
    expected_fmt: str = ""
    order: int = field(default=0, compare=False)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"metric {self.name!r}: kind must be one of {KINDS}, got {self.kind!r}")
        observed, expected = FORMATS[self.kind]
        object.__setattr__(self, "expected_fmt", self.expected_fmt or self.fmt or expected)
        object.__setattr__(self, "fmt", self.fmt or observed)
        object.__setattr__(self, "short", self.short or self.header)

    def format(self, value: float, expected: bool = False) -> str:
        """``value`` for display (``expected``: a baseline's expected value)."""
        return format(value, self.expected_fmt if expected else self.fmt)


METRICS: Registry[Metric] = Registry(
    "metric", key="metric name", guard=lambda m, wrap: guard_fields(m, wrap, "compute", "random")
)
_ORDER = itertools.count()  # registration order, kept across unregister()


def register(
    name: str,
    *,
    header: str | None = None,
    kind: Kind = "rate",
    uses_score: bool = False,
    uses_human: bool = False,
    random: Callable[[RandomLabeller], float] | None = None,
    short: str = "",
    series: bool = True,
    headline: bool = False,
    fmt: str = "",
    expected_fmt: str = "",
) -> Callable[[ComputeT], ComputeT]:
    """Decorator registering its function as the implementation of metric ``name`` (it
    returns the function unchanged, with its own signature)."""
    if name in METRICS:
        raise ValueError(f"metric {name!r} is already registered; unregister it first")

    def add(compute: ComputeT) -> ComputeT:
        entry = Metric(
            name=name,
            header=header or name,
            kind=kind,
            compute=compute,
            uses_score=uses_score or uses_human,
            uses_human=uses_human,
            random=random,
            short=short,
            series=series,
            headline=headline,
            fmt=fmt,
            expected_fmt=expected_fmt,
            order=next(_ORDER),
        )
        METRICS.add(name, entry)
        return compute

    return add


def unregister(name: str) -> Metric:
    """Remove metric ``name`` (e.g. one a test registered) and return it."""
    return METRICS.remove(name)


def metric(name: str) -> Metric:
    """The metric registered as ``name``, or the registry's one-line error (a KeyError and a
    ValueError) with the closest known name."""
    return METRICS[name]


def registered(kinds: tuple[Kind, ...] = KINDS, score: bool | None = None, series: bool | None = None) -> list[Metric]:
    """Registered metrics of ``kinds`` in kind order, then registration order; ``score``
    True/False keeps only score/label metrics, ``series`` True only those on the ε grid."""
    chosen = [
        m
        for _, m in METRICS.items()
        if m.kind in kinds and (score is None or m.uses_score == score) and (series is None or m.series == series)
    ]
    return sorted(chosen, key=lambda m: (KINDS.index(m.kind), m.order))


def metric_names(kinds: tuple[Kind, ...] = KINDS, score: bool | None = None, series: bool | None = None) -> list[str]:
    """Names of :func:`registered` metrics."""
    return [m.name for m in registered(kinds, score, series)]


def header(name: str) -> str:
    """The table header of ``name`` (the name itself when it is not a registered metric)."""
    return METRICS[name].header if name in METRICS else name


def headline_names() -> list[str]:
    """The metrics declared ``headline=True``, in listing order: what a job logs to MLflow as
    metrics (with their CI bounds) beside the fixed figures of :mod:`mcu_exp.tracking.headline`."""
    return [m.name for m in registered() if m.headline]


def compute(
    counts: Counts | None, ranking: Ranking | None = None, kinds: tuple[Kind, ...] = KINDS, score: bool | None = None
) -> dict[str, np.ndarray]:
    """Every registered metric of ``kinds``, in order: label metrics from ``counts``, score
    metrics from ``ranking`` (left out when it is None, and those needing the humans'
    continuous value when the ranking has none). ``score`` True/False: the score/label
    metrics only (``counts`` may then be None: score metrics never read it)."""
    out: dict[str, np.ndarray] = {}
    for m in registered(kinds, score=score):
        if not m.uses_score:
            if counts is None:
                raise ValueError("label metrics need the counts; pass score=True for the score metrics alone")
            out[m.name] = m.compute(counts)  # type: ignore[arg-type]
        elif ranking is not None and (ranking.human is not None or not m.uses_human):
            out[m.name] = m.compute(ranking)  # type: ignore[arg-type]
    return out
