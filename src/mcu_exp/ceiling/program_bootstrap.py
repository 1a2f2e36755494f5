"""Intervals over programs for the ceiling's bounds, and a proxy compared with them.

With ~50 programs the dominant uncertainty of every ceiling figure is *which programs* were
studied, not how their readers happened to be split. So each figure gets:

* an **outer program bootstrap**: ``resamples`` resamples of the programs with replacement,
  stratified by the full-panel human label (positives among positives, negatives among
  negatives, in their counts: :func:`mcu_exp.evaluation.bootstrap.stratified_indices`), each
  recomputing the figure, the beta-binomial refitted on every resample; the interval is the
  central ``confidence`` percentile interval of the resampled values (a percentile bootstrap);
* an **inner set of reader splits** for the half-panel figures: ``splits`` random splits of
  every program's readers into halves, drawn once (exactly the splits of
  :func:`mcu_exp.ceiling.split_half.split_half` with the same seed), each program keeping its
  splits in every resample (a program drawn twice brings the same splits: the split is part
  of the inner Monte Carlo average, not of the sample of programs). A figure is the mean over
  the splits; its **Monte Carlo error** is the standard error of that mean over splits on the
  observed programs (sd / √splits; by the delta method for the Spearman–Brown figures). The
  model figures are computed by quadrature: their Monte Carlo error is 0.

A proxy is compared with a bound by the **paired difference** AUC_proxy − AUC_bound, both
terms computed on the same resampled programs in each replicate, with its percentile interval
and ``P(proxy < bound)``, the share of replicates where the difference is negative. Its ρ is
compared by **disattenuation**, ρ_proxy / √reliability, both on the same resampled programs
(ρ against the full panel's mean correctness, reliability the Spearman–Brown split-half
reliability of that mean): a replicate whose reliability is ≤ 0 gives ±∞, and every value is
clipped to [−1, 1]; the result is flagged where the reliability's interval reaches 0 (the
upper end is then not bounded by the data). Never a ratio to the ceiling ("share of ceiling"):
its noisy denominator makes the ratio's interval meaningless.

Edge cases follow :mod:`mcu_exp.ceiling.split_half`: a program with one reader cannot be split
and is left out of the half-panel figures (and counted); it stays in the ceiling's own model fit
(:func:`ceiling_bootstrap`), but against a proxy (:func:`compare_to_bounds`) every figure, the
model fit and the proxy's AUC included, is on the same programs: the scored ones with two or
more readers; a replicate with fewer than ``MIN_PROGRAMS`` splittable programs, or a split whose
half labels have one class, is undefined (NaN) and left out of means and intervals; the
undefined share is reported.
"""

from __future__ import annotations

import dataclasses
import math
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mcu_exp.ceiling.bounds import (
    MODEL_FIGURES,
    MODEL_RULE,
    BetaBinomialFit,
    count_histograms,
    fit_histograms,
    model_figures,
    quadrature,
    reader_counts,
    size_weights,
)
from mcu_exp.ceiling.split_half import MIN_PROGRAMS, _half_statistics, _split_halves, spearman_brown
from mcu_exp.data.labels import ALL, TOLERANCE
from mcu_exp.data.types import Dataset
from mcu_exp.evaluation.registry import RANK_DECIMALS

HALF_PANEL = ("auc_score", "f1", "split_half_rho", "reliability", "spearman")
"""The split-half figures (names as in :mod:`mcu_exp.ceiling.split_half`)."""
FIGURES = (*HALF_PANEL, *MODEL_FIGURES, "model_icc")
BOUNDS = {"half_panel": "auc_score", "second_panel": "second_panel_auc_score", "upper": "upper_auc_score"}
"""The AUC bounds a proxy is compared with, by name: lower, middle, upper."""
INNER_SPLITS = 50
"""Reader splits averaged in each program resample (the observed programs use every split)."""
_STREAM = zlib.crc32(b"program bootstrap")  # the resampling stream, apart from the splits' seed


@dataclass(frozen=True)
class Estimate:
    """A figure on the observed programs (``point``), its percentile interval over program
    resamples, the Monte Carlo error of its split average, and the share of resamples in which
    it was undefined."""

    point: float
    ci_low: float
    ci_high: float
    mc_error: float
    undefined: float


@dataclass(frozen=True)
class CeilingBootstrap:
    """Every ceiling figure (:data:`FIGURES`) with its interval over programs; ``replicates``
    holds each figure's value on every resample (NaN where undefined)."""

    figures: dict[str, Estimate]
    replicates: dict[str, np.ndarray]
    fit: BetaBinomialFit
    programs: int
    programs_left_out: int
    resamples: int
    splits: int
    confidence: float
    seed: int
    inner_splits: int = INNER_SPLITS


@dataclass(frozen=True)
class Difference:
    """AUC_proxy − AUC_bound: on the observed programs, its paired percentile interval, and
    P(proxy < bound) (share of defined replicates with a negative difference)."""

    bound: str
    point: float
    ci_low: float
    ci_high: float
    p_below: float


@dataclass(frozen=True)
class Disattenuated:
    """ρ_proxy / √reliability, clipped to [−1, 1]; ``flagged`` when the reliability's interval
    reaches 0 (the disattenuated value's interval is then not bounded by the data)."""

    point: float
    ci_low: float
    ci_high: float
    clipped: bool
    flagged: bool
    reliability: Estimate


@dataclass(frozen=True)
class BoundComparison:
    """A proxy beside the ceiling on the same programs: its AUC and ρ, the paired differences to
    each bound of :data:`BOUNDS`, and its disattenuated ρ."""

    proxy_auc: Estimate
    proxy_rho: Estimate
    differences: dict[str, Difference]
    disattenuated: Disattenuated
    ceiling: CeilingBootstrap


# --- ranks with multiplicities ---------------------------------------------------------------------


def _codes(values: np.ndarray) -> tuple[np.ndarray, int]:
    """Each value's position among the distinct values (NaN last), and their number; values are
    rounded to :data:`RANK_DECIMALS` first, so sums that differ only by summation order tie."""
    uniques, codes = np.unique(np.round(values, RANK_DECIMALS), return_inverse=True)
    return codes.reshape(values.shape), uniques.size


def _midranks(codes: np.ndarray, m: int, weights: np.ndarray) -> np.ndarray:
    """(rows, P) mid-ranks of each row's values among that row's elements counted ``weights``
    times (0: absent): elements below, plus (ties + 1) / 2."""
    rows = codes.shape[0]
    flat = (codes + m * np.arange(rows)[:, None]).ravel()
    total = np.bincount(flat, weights=weights.ravel(), minlength=rows * m).reshape(rows, m)
    midrank = np.cumsum(total, axis=1) - total + (total + 1.0) / 2.0
    out: np.ndarray = np.take_along_axis(midrank, codes, axis=1)
    return out


def _auc(codes: np.ndarray, m: int, truth: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Weighted rank-sum AUC of each row (ties ½); NaN when a row has one class."""
    ranks = _midranks(codes, m, weights)
    n_pos = (weights * truth).sum(axis=1)
    n_neg = weights.sum(axis=1) - n_pos
    with np.errstate(divide="ignore", invalid="ignore"):
        out: np.ndarray = ((weights * truth * ranks).sum(axis=1) - n_pos * (n_pos + 1.0) / 2.0) / (n_pos * n_neg)
    return np.where((n_pos > 0) & (n_neg > 0), out, np.nan)


def _spearman(x: tuple[np.ndarray, int], y: tuple[np.ndarray, int], weights: np.ndarray) -> np.ndarray:
    """Weighted Spearman ρ (Pearson of mid-ranks) of each row; NaN when a row is constant."""
    rx, ry = _midranks(*x, weights), _midranks(*y, weights)
    total = weights.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        rx = rx - (weights * rx).sum(axis=1, keepdims=True) / total
        ry = ry - (weights * ry).sum(axis=1, keepdims=True) / total
        den = np.sqrt((weights * rx * rx).sum(axis=1) * (weights * ry * ry).sum(axis=1))
        out: np.ndarray = (weights * rx * ry).sum(axis=1) / den
    return np.where(den > 0, out, np.nan)


# --- the replicates --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Panel:
    """The per-program data of one label set: counts, labels, correctness and the half
    statistics of every split ((splits, 2, P), NaN for programs that cannot be split)."""

    counts: pd.DataFrame
    score: np.ndarray
    correctness: np.ndarray
    splittable: np.ndarray
    min_fraction: float


def _panel(
    dataset: Dataset, rule: str, min_fraction: float, group: str, readers: str, splits: int, seed: int
) -> _Panel:
    """Counts and half statistics, the splits exactly those of ``split_half(..., splits, seed)``."""
    from mcu_exp.data.labels import label_evaluations

    counts = reader_counts(dataset, rule, min_fraction, group, readers)
    splittable = (counts["readers"] >= 2).to_numpy()
    ids = counts.index[splittable]
    size = (splits, 2, len(counts))
    score, correctness = np.full(size, np.nan), np.full(size, np.nan)
    if len(ids) >= 1:
        evaluations = label_evaluations(dataset, group, readers)
        code = pd.Series(np.arange(len(ids)), index=ids)
        kept = evaluations[evaluations["program_id"].isin(ids)]
        kept = kept.assign(_code=code.reindex(kept["program_id"]).to_numpy()).sort_values("_code", kind="stable")
        programs = kept.pop("_code").to_numpy()
        in_a = _split_halves(programs, splits, np.random.default_rng(seed))
        half_score, half_correctness = _half_statistics(kept, programs, in_a, rule)
        score[:, :, splittable], correctness[:, :, splittable] = half_score, half_correctness
    return _Panel(counts, score, correctness, splittable, min_fraction)


def _half_panel(panel: _Panel, idx: np.ndarray) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    """The half-panel figures of every row of ``idx`` ((rows,) each, the mean over splits) and
    the Monte Carlo error of row 0's split average."""
    splits, rows = panel.score.shape[0], idx.shape[0]
    mask = panel.splittable[idx].astype(float)  # (rows, P)
    weights = np.broadcast_to(mask, (splits, *mask.shape)).reshape(splits * rows, -1)
    filled = np.nan_to_num(panel.score, nan=-1.0)
    labels = (filled >= panel.min_fraction - TOLERANCE).astype(float)

    def gather(values: np.ndarray) -> np.ndarray:
        """(splits, P) → (splits·rows, P): each split's values on each row's programs."""
        out: np.ndarray = values[:, idx].reshape(splits * rows, -1)
        return out

    codes, m = _codes(filled[:, 0])
    auc = _auc(gather(codes), m, gather(labels[:, 1]), weights)
    tp = (weights * gather(labels[:, 0] * labels[:, 1])).sum(axis=1)
    predicted, present = (weights * gather(labels[:, 0])).sum(axis=1), (weights * gather(labels[:, 1])).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        f1 = np.where(present + predicted > 0, 2 * tp / (present + predicted), np.nan)
    corr = np.nan_to_num(panel.correctness, nan=-1.0)
    x, y = _codes(corr[:, 0]), _codes(corr[:, 1])
    rho = _spearman((gather(x[0]), x[1]), (gather(y[0]), y[1]), weights)
    enough = mask.sum(axis=1) >= MIN_PROGRAMS
    out: dict[str, np.ndarray] = {}
    mc: dict[str, float] = {}
    for name, values in (("auc_score", auc), ("f1", f1), ("split_half_rho", rho)):
        per_split = values.reshape(splits, rows)
        finite = np.isfinite(per_split)
        with np.errstate(divide="ignore", invalid="ignore"):
            mean = np.where(finite, per_split, 0.0).sum(axis=0) / finite.sum(axis=0)
        out[name] = np.where(enough, mean, np.nan)
        first = per_split[:, 0][np.isfinite(per_split[:, 0])]
        mc[name] = float(first.std(ddof=1) / math.sqrt(first.size)) if first.size > 1 and enough[0] else math.nan
    rho_mean = out["split_half_rho"]
    out["reliability"] = np.asarray(spearman_brown(rho_mean), dtype=float)
    out["spearman"] = np.sqrt(np.clip(out["reliability"], 0.0, None))
    slope = 2.0 / (1.0 + rho_mean[0]) ** 2  # d reliability / d ρ
    mc["reliability"] = slope * mc["split_half_rho"]
    root = out["spearman"][0]
    mc["spearman"] = slope * mc["split_half_rho"] / (2 * root) if root > 0 else math.nan
    return out, mc


def _model(panel: _Panel, idx: np.ndarray, weights: np.ndarray) -> tuple[dict[str, np.ndarray], BetaBinomialFit]:
    """The beta-binomial refitted on every row and its figures, with the observed-programs fit."""
    k, n = panel.counts["successes"].to_numpy(), panel.counts["readers"].to_numpy()
    a, b, loglik = fit_histograms(count_histograms(k, n, weights))
    fit = BetaBinomialFit(a=float(a[0]), b=float(b[0]), loglik=float(loglik[0]), programs=int(n.size))
    quad = quadrature(n, panel.min_fraction, fit.a, fit.b)
    found = model_figures(a, b, size_weights(n, quad.sizes, weights), quad)
    labels = panel.counts["label"].to_numpy()[idx]
    defined = (
        (panel.splittable[idx].sum(axis=1) >= MIN_PROGRAMS) & (labels.min(axis=1) == 0) & (labels.max(axis=1) == 1)
    )
    out = {name: np.where(defined, values, np.nan) for name, values in found.items()}
    out["model_icc"] = 1.0 / (a + b + 1.0)
    return out, fit


def _indices(labels: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """(1 + resamples, P): the observed programs, then the stratified resamples."""
    from mcu_exp.evaluation.bootstrap import stratified_indices

    rng = np.random.default_rng([int(seed) % 2**64, _STREAM])
    drawn = stratified_indices(labels, resamples, rng) if resamples else np.empty((0, labels.size), dtype=int)
    return np.vstack([np.arange(labels.size)[None, :], drawn])


def _estimate(values: np.ndarray, confidence: float, mc_error: float = 0.0) -> Estimate:
    from mcu_exp.evaluation.bootstrap import percentile_interval

    low, high = percentile_interval(values[1:], confidence)
    undefined = float(np.isnan(values[1:]).mean()) if values.size > 1 else math.nan
    return Estimate(float(values[0]), low, high, mc_error, undefined)


def _check(resamples: int, splits: int, inner_splits: int) -> None:
    if resamples < 1 or splits < 2 or inner_splits < 2:
        raise ValueError(
            f"need at least 1 resample and 2 splits (and inner splits), got {resamples}, {splits} and {inner_splits}"
        )


HUMAN_SIDE_CODE = (
    "mcu_exp.ceiling.program_bootstrap",
    "mcu_exp.ceiling.bounds",
    "mcu_exp.ceiling.split_half",
    "mcu_exp.data.labels",
    "mcu_exp.evaluation.bootstrap",
)  # what the humans' side of :func:`compare_to_bounds` computes with


def _is_bootstrap(value: Any) -> bool:
    """A cached humans' side: (ceiling, resample indices, stacked replicates)."""
    return isinstance(value, tuple) and len(value) == 3 and isinstance(value[0], CeilingBootstrap)


def _bootstrap(
    panel: _Panel, resamples: int, seed: int, confidence: float, inner_splits: int, rule: str
) -> tuple[CeilingBootstrap, np.ndarray, np.ndarray]:
    labels = panel.counts["label"].to_numpy()
    idx = _indices(labels, resamples, seed)
    weights = np.stack([np.bincount(row, minlength=labels.size) for row in idx]).astype(float)
    half, mc = _half_panel(panel, idx[:1])  # the observed programs: every split
    if resamples:
        inner = dataclasses.replace(
            panel, score=panel.score[:inner_splits], correctness=panel.correctness[:inner_splits]
        )
        rest, _ = _half_panel(inner, idx[1:])
        half = {name: np.concatenate([values, rest[name]]) for name, values in half.items()}
    if rule == MODEL_RULE:
        model, fit = _model(panel, idx, weights)
    else:  # the reader model describes counts of readers who understood: mean_abu50 alone
        model = {name: np.full(idx.shape[0], np.nan) for name in (*MODEL_FIGURES, "model_icc")}
        fit = BetaBinomialFit(math.nan, math.nan, math.nan, labels.size)
    replicates = {**half, **model}
    figures = {name: _estimate(replicates[name], confidence, mc.get(name, 0.0)) for name in FIGURES}
    ceiling = CeilingBootstrap(
        figures=figures,
        replicates={name: values[1:] for name, values in replicates.items()},
        fit=fit,
        programs=int(panel.splittable.sum()),
        programs_left_out=int((panel.counts["readers"] == 1).sum()),
        resamples=resamples,
        splits=panel.score.shape[0],
        confidence=confidence,
        seed=seed,
        inner_splits=min(inner_splits, panel.score.shape[0]),
    )
    return ceiling, idx, np.vstack([replicates[name] for name in FIGURES])


def ceiling_bootstrap(
    dataset: Dataset,
    rule: str = MODEL_RULE,
    min_fraction: float = 0.5,
    group: str = ALL,
    readers: str = ALL,
    resamples: int = 1000,
    splits: int = 50,
    seed: int = 0,
    confidence: float = 0.95,
    inner_splits: int = INNER_SPLITS,
) -> CeilingBootstrap:
    """Every ceiling figure of the label set ``rule ≥ min_fraction`` over ``group``'s
    evaluations: on the observed programs the mean over ``splits`` reader splits, with its
    percentile interval over ``resamples`` stratified program resamples (each averaging the
    first ``inner_splits`` of those splits) and its Monte Carlo error (module docstring). The
    model figures are NaN unless ``rule`` is :data:`~mcu_exp.ceiling.bounds.MODEL_RULE`; below
    ``MIN_PROGRAMS`` splittable programs every figure is NaN."""
    _check(resamples, splits, inner_splits)
    panel = _panel(dataset, rule, min_fraction, group, readers, splits, seed)
    if panel.splittable.sum() < MIN_PROGRAMS or panel.counts["label"].nunique() < 2:
        return _undefined(panel, resamples, splits, seed, confidence)
    return _bootstrap(panel, resamples, seed, confidence, inner_splits, rule)[0]


def _undefined(panel: _Panel, resamples: int, splits: int, seed: int, confidence: float) -> CeilingBootstrap:
    nan = Estimate(math.nan, math.nan, math.nan, math.nan, 1.0)
    return CeilingBootstrap(
        figures=dict.fromkeys(FIGURES, nan),
        replicates={name: np.full(resamples, np.nan) for name in FIGURES},
        fit=BetaBinomialFit(math.nan, math.nan, math.nan, len(panel.counts)),
        programs=int(panel.splittable.sum()),
        programs_left_out=int((panel.counts["readers"] == 1).sum()),
        resamples=resamples,
        splits=splits,
        confidence=confidence,
        seed=seed,
    )


def compare_to_bounds(
    dataset: Dataset,
    score: pd.Series,
    rule: str = MODEL_RULE,
    min_fraction: float = 0.5,
    group: str = ALL,
    readers: str = ALL,
    resamples: int = 1000,
    splits: int = 50,
    seed: int = 0,
    confidence: float = 0.95,
    inner_splits: int = INNER_SPLITS,
    cache_dir: str | Path | None = None,
) -> BoundComparison:
    """A proxy's per-program ``score`` (indexed by program id; continuous or 0/1, higher = the
    model understands more) against the ceiling, **on the same programs**: those with a finite
    score and at least two of the label set's readers (a program with one reader cannot be
    split; it is left out of every figure here and counted in ``ceiling.programs_left_out``).
    On them: the proxy's AUC against the full-panel label and its Spearman ρ against the
    full-panel mean correctness, the paired differences AUC_proxy − AUC_bound for each bound of
    :data:`BOUNDS`, and ρ_proxy / √reliability, all from the same program resamples (module
    docstring). Undefined parts are NaN.

    The humans' side (the ceiling's replicates on the scored programs and the resamples drawn)
    depends on which programs are scored, not on the scores: with ``cache_dir`` it is computed
    once per set of programs and reused by every proxy and model scored on them
    (:func:`mcu_exp.result_cache.cached_result`), the same bits as computed afresh."""
    from mcu_exp.result_cache import cached_result

    _check(resamples, splits, inner_splits)
    finite = score[np.isfinite(score.astype(float))]
    counts = reader_counts(dataset, rule, min_fraction, group, readers)
    scored = counts[counts.index.isin(finite.index)]
    keep = [pid for pid in scored.index if scored.at[pid, "readers"] >= 2]
    left_out = len(scored) - len(keep)
    kept = dataset.subset(keep)
    panel = _panel(kept, rule, min_fraction, group, readers, splits, seed)
    if panel.splittable.sum() < MIN_PROGRAMS or panel.counts["label"].nunique() < 2:
        ceiling = dataclasses.replace(
            _undefined(panel, resamples, splits, seed, confidence), programs_left_out=left_out
        )
        return _undefined_comparison(ceiling)
    key = [kept.evaluations, kept.program_ids, rule, float(min_fraction), group, readers, splits, seed]
    key += [resamples, float(confidence), inner_splits]
    ceiling, idx, _ = cached_result(
        cache_dir,
        "ceiling_on_scored_programs",
        key,
        lambda: _bootstrap(panel, resamples, seed, confidence, inner_splits, rule),
        code=HUMAN_SIDE_CODE,
        kind=_is_bootstrap,
    )
    ceiling = dataclasses.replace(ceiling, programs_left_out=left_out)
    values = finite.reindex(panel.counts.index).to_numpy(dtype=float)
    ones = np.ones(idx.shape)
    codes, m = _codes(values)
    auc = _auc(codes[idx], m, panel.counts["label"].to_numpy()[idx].astype(float), ones)
    human = _codes(panel.counts["correctness"].to_numpy())
    rho = _spearman((codes[idx], m), (human[0][idx], human[1]), ones)
    full = {name: np.concatenate([[ceiling.figures[name].point], ceiling.replicates[name]]) for name in FIGURES}
    differences = {}
    for bound, figure in BOUNDS.items():
        diff = auc - full[figure]
        est = _estimate(diff, confidence)
        defined = diff[1:][np.isfinite(diff[1:])]
        p_below = float((defined < 0).mean()) if defined.size else math.nan
        differences[bound] = Difference(bound, est.point, est.ci_low, est.ci_high, p_below)
    return BoundComparison(
        proxy_auc=_estimate(auc, confidence),
        proxy_rho=_estimate(rho, confidence),
        differences=differences,
        disattenuated=disattenuate(rho, full["reliability"], confidence),
        ceiling=ceiling,
    )


def disattenuate(rho: np.ndarray, reliability: np.ndarray, confidence: float = 0.95) -> Disattenuated:
    """ρ / √reliability from paired arrays (index 0: the observed programs, then one value per
    resample): a reliability ≤ 0 gives ±∞ (the sign of ρ), every value clipped to [−1, 1], the
    percentile interval over the resamples; ``flagged`` when the reliability's interval
    reaches 0."""
    rho, reliability = np.asarray(rho, dtype=float), np.asarray(reliability, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        raw = np.where(reliability > 0, rho / np.sqrt(np.clip(reliability, 1e-300, None)), np.sign(rho) * np.inf)
    raw = np.where(np.isfinite(rho) & np.isfinite(reliability), raw, np.nan)
    value = np.clip(raw, -1.0, 1.0)
    est = _estimate(value, confidence)
    rel = _estimate(reliability, confidence)
    clipped = bool(np.any(np.abs(raw[np.isfinite(raw) | np.isinf(raw)]) > 1.0))
    flagged = bool(not rel.ci_low > 0)
    return Disattenuated(est.point, est.ci_low, est.ci_high, clipped, flagged, rel)


def _undefined_comparison(ceiling: CeilingBootstrap) -> BoundComparison:
    nan = Estimate(math.nan, math.nan, math.nan, math.nan, 1.0)
    return BoundComparison(
        proxy_auc=nan,
        proxy_rho=nan,
        differences={b: Difference(b, math.nan, math.nan, math.nan, math.nan) for b in BOUNDS},
        disattenuated=Disattenuated(math.nan, math.nan, math.nan, False, True, nan),
        ceiling=ceiling,
    )
