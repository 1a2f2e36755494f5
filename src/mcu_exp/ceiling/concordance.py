"""Within-reader pairwise concordance: does a proxy order two programs as the reader did?

Each reader read several programs; whatever their ability, the programs they did better on
were, for them, the more understandable. For every reader and every pair of programs they
read with **different outcomes**, the proxy (a per-program score, higher = more
understandable) is scored 1 when it puts the reader's better program above the other, 0 when
it puts it below and 0.5 when it ties them. The proxy's **concordance** is the mean over all
such (reader, pair) triples: a reader-stratified Harrell's C, 0.5 for a score unrelated to the
programs. Reader ability cancels within a reader, which a per-program mean over different
readers cannot offer.

The outcome (``outcome``):

* ``"correct"`` (default, the finer): the share of the questions answered right,
  ``correct / total`` (:func:`mcu_exp.data.labels.share_correct`; an untested evaluation,
  ``total`` 0, counts 0 like the labels' ``readers=all``; pass
  ``label_evaluations(dataset, readers="tested")`` to leave those out);
* ``"abu50"``: understood or not (:func:`mcu_exp.data.labels.abu50`), coarser, more ties.

A pair the reader scored equally is a tie and no triple; ``tied_pairs`` counts them.

**The reader-pair ceiling** scores another human in the proxy's place: for every ordered pair
of readers (r, r′) who both read programs p and q, where r's outcomes on p and q differ, r′
is scored 1 when they order p and q as r did, 0 when the other way round and 0.5 when their
own outcomes tie (the proxy's tie rule). Its mean over all such quadruples is how often one
reader of the panel predicts another's within-reader order: the agreement a proxy could
reach by being a typical reader (not an upper bound: a proxy tracking the programs' true
understandability can beat one noisy reader).

**Intervals**: a two-way bootstrap (Owen 2007, "the pigeonhole bootstrap") resamples the
readers and the programs independently, with replacement; a triple (r, p, q) weighs
``w_r·v_p·v_q`` and a quadruple (r, r′, p, q) ``w_r·w_r′·v_p·v_q``, ``w`` and ``v`` the
number of times each reader and program was drawn. The proxy, the ceiling and their
difference are computed on the same draws (a paired difference), the central ``confidence``
percentile interval of each is reported.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from mcu_exp.data.labels import abu50, share_correct
from mcu_exp.evaluation.bootstrap import percentile_interval

OUTCOMES: tuple[str, ...] = ("correct", "abu50")
CHANCE = 0.5
"""The concordance of a score unrelated to the programs (continuous: no ties)."""
_CELLS = 2_000_000
"""Resamples × triples per block of the bootstrap (memory: 8 bytes a cell, a few arrays)."""


@dataclass(frozen=True)
class Outcomes:
    """The readers' outcomes as a matrix: ``values[i, j]`` is reader ``readers[i]``'s outcome
    on program ``programs[j]``, NaN where they did not read it (ids sorted)."""

    readers: list[str]
    programs: list[str]
    values: np.ndarray


@dataclass(frozen=True)
class Triples:
    """The (reader, pair) triples: reader ``reader[t]`` did better on program ``high[t]`` than
    on ``low[t]`` (indices into ``Outcomes.readers``/``programs``); ``tied_pairs`` pairs of
    programs a reader read were left out because the outcomes tied."""

    reader: np.ndarray
    high: np.ndarray
    low: np.ndarray
    tied_pairs: int


@dataclass(frozen=True)
class Quadruples:
    """The reader-pair comparisons: reader ``other[t]`` read both programs of triple
    ``triple[t]`` (another reader than the triple's) and ``agree[t]`` scores their order
    (1 same, 0.5 tie, 0 reversed)."""

    triple: np.ndarray
    other: np.ndarray
    agree: np.ndarray


def outcome_values(evaluations: pd.DataFrame, outcome: str = "correct") -> pd.Series:
    """Each evaluation's outcome under ``outcome`` (see the module doc), as floats."""
    if outcome not in OUTCOMES:
        raise ValueError(f"concordance outcome is {outcome!r}, expected one of: {', '.join(OUTCOMES)}")
    values = share_correct(evaluations) if outcome == "correct" else abu50(evaluations).astype(float)
    return values.astype(float)


def outcome_matrix(evaluations: pd.DataFrame, outcome: str = "correct") -> Outcomes:
    """The reader × program matrix of outcomes (one evaluation per pair, as datasets hold)."""
    values = outcome_values(evaluations, outcome).to_numpy()
    readers_of = evaluations["participant_id"].astype(str).to_numpy()
    programs_of = evaluations["program_id"].astype(str).to_numpy()
    readers = sorted(set(readers_of))
    programs = sorted(set(programs_of))
    matrix = np.full((len(readers), len(programs)), np.nan)
    matrix[pd.Index(readers).get_indexer(readers_of), pd.Index(programs).get_indexer(programs_of)] = values
    return Outcomes(readers=readers, programs=programs, values=matrix)


def triples(outcomes: Outcomes) -> Triples:
    """Every (reader, pair of programs they read with different outcomes), better one first."""
    readers, highs, lows, tied = [], [], [], 0
    for i, row in enumerate(outcomes.values):
        read = np.flatnonzero(~np.isnan(row))
        a, b = np.triu_indices(read.size, k=1)
        ya, yb = row[read[a]], row[read[b]]
        differ = ya != yb
        tied += int((~differ).sum())
        first_better = ya > yb
        highs.append(np.where(first_better, read[a], read[b])[differ])
        lows.append(np.where(first_better, read[b], read[a])[differ])
        readers.append(np.full(int(differ.sum()), i))
    empty = np.zeros(0, dtype=int)
    return Triples(
        reader=np.concatenate(readers) if readers else empty,
        high=np.concatenate(highs) if highs else empty,
        low=np.concatenate(lows) if lows else empty,
        tied_pairs=tied,
    )


def reader_pairs(outcomes: Outcomes, found: Triples) -> Quadruples:
    """For every triple, every other reader who read both its programs, and whether they
    order the pair the same way (1), tie it (0.5) or reverse it (0)."""
    high = outcomes.values[:, found.high]  # readers × triples
    low = outcomes.values[:, found.low]
    both = ~np.isnan(high) & ~np.isnan(low)
    both[found.reader, np.arange(found.reader.size)] = False
    other, triple = np.nonzero(both)
    h, lo = high[other, triple], low[other, triple]
    agree = (h > lo).astype(float) + 0.5 * (h == lo)
    return Quadruples(triple=triple, other=other, agree=agree)


def agreement(score: np.ndarray, found: Triples) -> np.ndarray:
    """Per triple: 1 when ``score`` (per program index) puts the reader's better program
    higher, 0.5 on a tie, 0 lower."""
    sh, sl = score[found.high], score[found.low]
    return np.asarray((sh > sl).astype(float) + 0.5 * (sh == sl), dtype=float)


@dataclass(frozen=True)
class Estimate:
    """A concordance (or a difference of two) over ``count`` comparisons, with its interval."""

    value: float
    ci: tuple[float, float]
    count: int


@dataclass(frozen=True)
class ConcordanceReport:
    """The proxy's within-reader concordance (None without a score), the reader-pair ceiling
    and ``gap`` = ceiling − proxy, on the same ``programs`` and ``readers`` and bootstrap
    draws; ``chance`` is :data:`CHANCE`."""

    proxy: Estimate | None
    ceiling: Estimate
    gap: Estimate | None
    readers: int
    programs: int
    tied_pairs: int
    outcome: str
    resamples: int
    confidence: float
    seed: int
    chance: float = CHANCE

    def figures(self, prefix: str = "concordance.") -> dict[str, float]:
        """Flat figures: ``<prefix>proxy``, ``<prefix>proxy_ci_low``/``_ci_high``,
        ``<prefix>proxy_triples``, the same for ``ceiling`` (``_comparisons``) and ``gap``."""
        out: dict[str, float] = {}
        for name, estimate, unit in (
            ("proxy", self.proxy, "triples"),
            ("ceiling", self.ceiling, "comparisons"),
            ("gap", self.gap, None),
        ):
            if estimate is None:
                continue
            out[f"{prefix}{name}"] = estimate.value
            out[f"{prefix}{name}_ci_low"], out[f"{prefix}{name}_ci_high"] = estimate.ci
            if unit:
                out[f"{prefix}{name}_{unit}"] = float(estimate.count)
        out[f"{prefix}chance"] = self.chance
        return out


def weighted_means(weights: list[tuple[np.ndarray, np.ndarray]], values: np.ndarray, resamples: int) -> np.ndarray:
    """Per resample: Σ_t Π_k W_k[b, idx_k[t]] · values[t] / Σ_t Π_k W_k[b, idx_k[t]], by blocks
    of resamples; NaN where every weight is 0."""
    out = np.full(resamples, np.nan)
    step = max(1, _CELLS // max(values.size, 1))
    for start in range(0, resamples, step):
        stop = min(start + step, resamples)
        product = np.ones((stop - start, values.size))
        for matrix, index in weights:
            product *= matrix[start:stop][:, index]
        total = product.sum(axis=1)
        np.divide(product @ values, total, out=out[start:stop], where=total > 0)
    return out


def pair_means(
    w: np.ndarray, v: np.ndarray, found: Triples, pairs: Quadruples, readers: int, cells: int = _CELLS
) -> np.ndarray:
    """Per resample, the reader-pair ceiling's weighted mean: quadruple ``t`` weighs
    ``w[r]·w[r′]·v[p]·v[q]`` (``r, p, q`` its triple's, ``r′`` its other reader); NaN where every
    weight is 0. The same figure as :func:`weighted_means` over the quadruples, factored by triple:
    ``Σ_t w[r′]·agree`` per triple is one matrix product (resamples × readers × triples), so the
    cost grows with the triples, not with the quadruples (readers times more). The weights are
    counts and ``agree`` is 0, ½ or 1, so every partial sum is exact in float64 and both ways give
    the same bits. ``cells`` bounds each block's matrices (triples × readers, resamples × triples)."""
    resamples = w.shape[0]
    out = np.full(resamples, np.nan)
    numerator, denominator = np.zeros(resamples), np.zeros(resamples)
    order = np.argsort(pairs.triple, kind="stable")
    by_triple, other, agree = pairs.triple[order], pairs.other[order], pairs.agree[order]
    chunk = max(1, cells // max(readers, 1))
    for first in range(0, found.reader.size, chunk):
        last = min(first + chunk, found.reader.size)
        lo, hi = np.searchsorted(by_triple, [first, last])
        agrees = np.zeros((readers, last - first))
        counts = np.zeros((readers, last - first))
        agrees[other[lo:hi], by_triple[lo:hi] - first] = agree[lo:hi]
        counts[other[lo:hi], by_triple[lo:hi] - first] = 1.0
        reader, high, low = found.reader[first:last], found.high[first:last], found.low[first:last]
        step = max(1, cells // (last - first))
        for start in range(0, resamples, step):
            stop = min(start + step, resamples)
            wb, vb = w[start:stop], v[start:stop]
            weight = wb[:, reader] * vb[:, high] * vb[:, low]
            numerator[start:stop] += (weight * (wb @ agrees)).sum(axis=1)
            denominator[start:stop] += (weight * (wb @ counts)).sum(axis=1)
    np.divide(numerator, denominator, out=out, where=denominator > 0)
    return out


def concordance(
    evaluations: pd.DataFrame,
    score: pd.Series | None = None,
    outcome: str = "correct",
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> ConcordanceReport:
    """The within-reader concordance of ``score`` (per program id, higher = more
    understandable; None: the ceiling alone) and the reader-pair ceiling, on the evaluations of
    the programs the score defines (all programs without a score), with two-way bootstrap
    intervals (module doc). A figure without any comparison is NaN."""
    if score is not None:
        proxy = pd.Series(score, dtype=float).dropna()
        evaluations = evaluations[evaluations["program_id"].astype(str).isin(set(proxy.index.astype(str)))]
    outcomes = outcome_matrix(evaluations, outcome)
    found = triples(outcomes)
    pairs = reader_pairs(outcomes, found)
    n_r, n_p = len(outcomes.readers), len(outcomes.programs)
    rng = np.random.default_rng(seed)
    w = rng.multinomial(n_r, np.full(n_r, 1.0 / n_r), size=resamples).astype(float) if n_r else np.zeros((resamples, 0))
    v = rng.multinomial(n_p, np.full(n_p, 1.0 / n_p), size=resamples).astype(float) if n_p else np.zeros((resamples, 0))

    def estimate(dist: np.ndarray, value: float, count: int) -> Estimate:
        return Estimate(value=value, ci=percentile_interval(dist, confidence), count=count)

    ceiling_dist = pair_means(w, v, found, pairs, n_r)
    ceiling = estimate(ceiling_dist, _mean(pairs.agree), pairs.agree.size)
    proxy_estimate = gap = None
    if score is not None:
        values = pd.Series(score, dtype=float).rename(index=str).reindex(outcomes.programs).to_numpy()
        agree = agreement(values, found)
        triple_weights = [(w, found.reader), (v, found.high), (v, found.low)]
        proxy_dist = weighted_means(triple_weights, agree, resamples)
        proxy_estimate = estimate(proxy_dist, _mean(agree), agree.size)
        gap = estimate(ceiling_dist - proxy_dist, ceiling.value - proxy_estimate.value, agree.size)
    return ConcordanceReport(
        proxy=proxy_estimate,
        ceiling=ceiling,
        gap=gap,
        readers=n_r,
        programs=n_p,
        tied_pairs=found.tied_pairs,
        outcome=outcome,
        resamples=resamples,
        confidence=confidence,
        seed=seed,
    )


def _mean(values: np.ndarray) -> float:
    return float(values.mean()) if values.size else float("nan")
