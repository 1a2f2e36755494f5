"""The measure registry: an uncertainty measure is one function from a similarity matrix to a number.

A measure takes the k × k matrix ``S`` of pairwise similarities between one program's
responses (any square float matrix; ``S[i, j]`` compares responses i and j, the diagonal is
ignored or taken as 1) and returns an **uncertainty**: higher = the responses agree less.
Adding a measure is one function::

    @register_measure("mean_min")
    def mean_min(similarity: np.ndarray) -> float:
        w = affinity(similarity)
        return float(1.0 - np.where(np.eye(len(w), dtype=bool), np.inf, w).min(axis=1).mean())

It then reaches ``proxy.measure=<name>`` (P1's α), the ``measure.<name>`` column of P1's
per-program table and :func:`mcu_exp.evaluation.measure_table.measure_table`. The decorator
checks the input (square, finite, at least one response) before the function sees it.
``size_free=True`` declares that the value does not move with the number of responses (a
mean over pairs, like SSC); any other measure is compared across subsets of different sizes
at a common size (:mod:`mcu_exp.measures.sizing`). ``params={"name": default}`` declares
keyword parameters the function takes; a run sets them from YAML as
``proxy.measure_params.<name>`` (checked against the declaration before anything runs).
The built-ins live in :mod:`mcu_exp.measures.definitions`; the measures are entries of
:data:`MEASURES`, one :class:`~mcu_exp.registry.Registry`, so a plugin package adds one with
the same decorator.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mcu_exp import names
from mcu_exp.plugin_guard import guard_fields
from mcu_exp.registry import Registry
from mcu_exp.settings import with_defaults

MeasureFn = Callable[..., float]  # (similarity, **params) -> uncertainty
BatchFn = Callable[..., np.ndarray]  # ((count, m, m) checked matrices, **params) -> (count,) uncertainties
ParamValue = float | int | str | bool
COLUMN_PREFIX = names.MEASURE_PREFIX  # per-program column of a measure's score (−uncertainty)


def measure_column(name: str) -> str:
    """The per-program column ``measure.<name>`` holding measure ``name``'s score
    (higher = more understandable: the negated uncertainty)."""
    return f"{COLUMN_PREFIX}{name}"


def as_similarity(matrix: np.ndarray) -> np.ndarray:
    """``matrix`` as a square, finite float array with at least one row, or a ValueError."""
    s = np.asarray(matrix, dtype=float)
    if s.ndim != 2 or s.shape[0] != s.shape[1] or s.shape[0] == 0:
        raise ValueError(f"a similarity matrix must be square k x k with k >= 1, got shape {s.shape}")
    if not np.isfinite(s).all():
        raise ValueError("the similarity matrix holds a non-finite value")
    return s


def affinity(similarity: np.ndarray) -> np.ndarray:
    """The graph's weights W = (S + Sᵀ)/2 clipped to [0, 1], diagonal 1 (each response is
    fully similar to itself), as the graph measures use them."""
    s = as_similarity(similarity)
    w = np.clip((s + s.T) / 2.0, 0.0, 1.0)
    np.fill_diagonal(w, 1.0)
    out: np.ndarray = w
    return out


@dataclass(frozen=True)
class Measure:
    """A registered measure: calling it checks the matrix and returns the uncertainty.

    ``params`` maps each keyword parameter the function takes to its default; ``batched`` is
    an optional vectorised version over a (count, m, m) stack taking the same parameters."""

    name: str
    fn: MeasureFn
    size_free: bool = False
    batched: BatchFn | None = None
    params: Mapping[str, ParamValue] = field(default_factory=dict)

    def settings(self, given: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The parameters a call uses: the defaults with ``given`` over them; an unknown
        parameter is a one-line ValueError naming the known ones."""
        return with_defaults(self.params, given, "proxy.measure_params", f"measure {self.name!r}")

    def __call__(self, similarity: np.ndarray, **params: Any) -> float:
        return float(self.fn(as_similarity(similarity), **self.settings(params)))

    def many(self, stack: np.ndarray, **params: Any) -> np.ndarray:
        """The measure of each matrix of a (count, m, m) stack (the batched version)."""
        if self.batched is None:
            raise ValueError(f"measure {self.name!r} has no batched version")
        return np.asarray(self.batched(stack, **self.settings(params)), dtype=float)


MEASURES: Registry[Measure] = Registry(
    "measure", key="proxy.measure", guard=lambda m, wrap: guard_fields(m, wrap, "fn", "batched")
)


def register_measure(
    name: str, size_free: bool = False, batched: BatchFn | None = None, params: Mapping[str, ParamValue] | None = None
) -> Callable[[MeasureFn], Measure]:
    """Decorator registering ``fn(similarity, **params) -> uncertainty`` as measure ``name``;
    returns the registered :class:`Measure`, which checks its input with
    :func:`as_similarity`. ``size_free``: its expected value is the same for any number of
    responses (a mean over pairs), so it needs no rescaling between subsets of different
    sizes. ``batched``: an optional vectorised version over a (count, m, m) stack, used to
    average the measure over many subsets at once (:mod:`mcu_exp.measures.sizing`); it must
    agree with ``fn``. ``params``: the keyword parameters ``fn`` takes, with defaults."""
    if name in MEASURES:
        raise ValueError(f"measure {name!r} is already registered; unregister it first")

    def add(fn: MeasureFn) -> Measure:
        return MEASURES.add(name, Measure(name, fn, size_free, batched, dict(params or {})))

    return add


def unregister_measure(name: str) -> Measure:
    """Remove measure ``name`` (e.g. one a test registered) and return it."""
    return MEASURES.remove(name)


def measure(name: str) -> Measure:
    """The measure registered as ``name``, or the registry's one-line error (a KeyError and a
    ValueError) with the closest known name."""
    return MEASURES[name]


def measure_names() -> list[str]:
    """The registered measures, in registration order."""
    return list(MEASURES.names())


def uncertainties(similarity: np.ndarray) -> dict[str, float]:
    """Every registered measure's uncertainty of one matrix (default parameters), by name."""
    return {name: fn(similarity) for name, fn in MEASURES.items()}
