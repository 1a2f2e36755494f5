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
at a common size (:mod:`mcu_exp.measures.sizing`). The built-ins live in
:mod:`mcu_exp.measures.definitions`.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

import numpy as np

from mcu_exp import names

MeasureFn = Callable[[np.ndarray], float]
BatchFn = Callable[[np.ndarray], np.ndarray]  # (count, m, m) checked matrices -> (count,) uncertainties

MEASURES: dict[str, MeasureFn] = {}  # name -> checked function, in registration order
SIZE_FREE: set[str] = set()  # measures whose value does not move with the number of responses
BATCHED: dict[str, BatchFn] = {}  # name -> the same measure of a stack of matrices at once (optional)
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
    return w


def register_measure(
    name: str, size_free: bool = False, batched: BatchFn | None = None
) -> Callable[[MeasureFn], MeasureFn]:
    """Decorator registering ``fn(similarity) -> uncertainty`` as measure ``name``; the
    registered (and returned) function checks its input with :func:`as_similarity`.
    ``size_free``: its expected value is the same for any number of responses (a mean over
    pairs), so it needs no rescaling between subsets of different sizes. ``batched``: an
    optional vectorised version over a (count, m, m) stack, used to average the measure over
    many subsets at once (:mod:`mcu_exp.measures.sizing`); it must agree with ``fn``."""
    if name in MEASURES:
        raise ValueError(f"measure {name!r} is already registered; unregister it first")

    def add(fn: MeasureFn) -> MeasureFn:
        @wraps(fn)
        def checked(similarity: np.ndarray) -> float:
            return float(fn(as_similarity(similarity)))

        MEASURES[name] = checked
        if size_free:
            SIZE_FREE.add(name)
        if batched is not None:
            BATCHED[name] = batched
        return checked

    return add


def unregister_measure(name: str) -> MeasureFn:
    """Remove measure ``name`` (e.g. one a test registered) and return it."""
    SIZE_FREE.discard(name)
    BATCHED.pop(name, None)
    return MEASURES.pop(name)


def measure(name: str) -> MeasureFn:
    """The measure registered as ``name``, or a KeyError listing the known names."""
    try:
        return MEASURES[name]
    except KeyError:
        raise KeyError(f"no measure {name!r}; registered: {', '.join(MEASURES)}") from None


def measure_names() -> list[str]:
    """The registered measures, in registration order."""
    return list(MEASURES)


def uncertainties(similarity: np.ndarray) -> dict[str, float]:
    """Every registered measure's uncertainty of one matrix, by name."""
    return {name: fn(similarity) for name, fn in MEASURES.items()}
