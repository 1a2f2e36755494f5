"""Measures on one scale when programs' response subsets differ in size.

EigV lies in [1, m], Deg is (1 − 1/m)(1 − SSC) and Ecc lies in [0, √(m − 1)]: their values
move with the number m of responses. A threshold τ calibrated on k_cal calibration summaries
then does not carry over to k − k_cal test summaries, nor to a program that lost failed
samples. Every value a run compares is therefore taken at one **common size** m₀, the
smallest subset of the run (:func:`common_size`), as the measure's mean over the subsets of
m₀ responses (a U-statistic of order m₀):

    U⁽ᵐ⁰⁾(S) = mean over C ⊆ {1, …, m}, |C| = m₀, of U(S_CC),

S_CC the similarities among the responses in C. Its expectation for m exchangeable responses
is the expectation of U on m₀ of them, so a calibration and a test value have the same scale
whatever their sizes. For m = m₀ it is U(S) itself, so runs whose subsets all have the same
size (the default k = 20, k_cal = 10) are unchanged to the last bit. Up to
:data:`MAX_SUBSETS` subsets are all enumerated; beyond that the mean is over
:data:`MAX_SUBSETS` subsets drawn from a stream seeded by (m, m₀), the same for every
program. A size-free measure (SSC, a mean over pairs, whose mean over subsets is itself) is
always taken on the whole matrix.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mcu_exp.measures.registry import as_similarity, measure

MAX_SUBSETS = 32  # subsets averaged when there are more than this many of size m₀


def common_size(matrices: Sequence[np.ndarray]) -> int:
    """m₀: the fewest responses among ``matrices`` (every subset of a run, calibration and test)."""
    if not matrices:
        raise ValueError("no similarity matrix to size")
    return min(len(m) for m in matrices)


def subsets(m: int, size: int) -> np.ndarray:
    """The (count, size) response indices whose measures are averaged: every subset of
    ``size`` of ``m`` responses when there are at most :data:`MAX_SUBSETS`, else
    :data:`MAX_SUBSETS` of them drawn from the stream seeded by (m, size)."""
    if not 1 <= size <= m:
        raise ValueError(f"a subset of {size} responses out of {m} does not exist")
    if math.comb(m, size) <= MAX_SUBSETS:
        return np.array(list(itertools.combinations(range(m), size)), dtype=int).reshape(-1, size)
    rng = np.random.default_rng([m, size])
    drawn = rng.permuted(np.broadcast_to(np.arange(m), (MAX_SUBSETS, m)), axis=1)[:, :size]
    return np.sort(drawn, axis=1)


def at_size(name: str, similarity: np.ndarray, size: int, params: Mapping[str, Any] | None = None) -> float:
    """Measure ``name`` (with ``params``) of one matrix at common size ``size``: U⁽ˢⁱᶻᵉ⁾(S),
    the mean of the measure over subsets of ``size`` responses (the whole matrix when it has
    ``size`` rows or the measure is size-free)."""
    fn = measure(name)
    settings = fn.settings(params)
    s = as_similarity(similarity)
    if len(s) == size or fn.size_free:
        if len(s) < size:
            raise ValueError(f"a subset of {size} responses out of {len(s)} does not exist")
        return fn(s, **settings)
    chosen = subsets(len(s), size)
    stack = s[chosen[:, :, None], chosen[:, None, :]]  # (count, size, size): each subset's similarities
    if fn.batched is not None:
        return float(np.mean(fn.many(stack, **settings)))
    return float(np.mean([fn(sub, **settings) for sub in stack]))


def sized(name: str, matrices: Sequence[np.ndarray], size: int, params: Mapping[str, Any] | None = None) -> np.ndarray:
    """:func:`at_size` of each matrix; a batched measure's subsets of all the matrices that
    have the same number of responses are scored in one call."""
    fn = measure(name)
    settings = fn.settings(params)
    out = np.empty(len(matrices), dtype=float)
    by_length: dict[int, list[int]] = {}
    for i, matrix in enumerate(matrices):
        by_length.setdefault(len(matrix), []).append(i)
    for m, members in by_length.items():
        if m == size or fn.size_free or fn.batched is None:
            out[members] = [at_size(name, matrices[i], size, settings) for i in members]
            continue
        chosen = subsets(m, size)
        stack = np.stack([as_similarity(matrices[i]) for i in members])
        subs = stack[:, chosen[:, :, None], chosen[:, None, :]]  # (members, count, size, size)
        values = fn.many(subs.reshape(-1, size, size), **settings).reshape(len(members), len(chosen))
        out[members] = values.mean(axis=1)
    return out
