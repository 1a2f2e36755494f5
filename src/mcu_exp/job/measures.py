"""A job's decision-free tables: the uncertainty measures and code-metric baselines against
the human labels, the prediction-rejection curve of the proxy's score, and the humans' ceiling.

None of it depends on ε, the threshold or the reader group, so with a cache folder each value
is computed once per input and read back by a sweep's other jobs
(:func:`mcu_exp.result_cache.cached_result`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mcu_exp import names
from mcu_exp.config import EvaluationConfig, LabelsConfig
from mcu_exp.data import Dataset, HumanLabels
from mcu_exp.evaluation import AlignmentReport
from mcu_exp.job.alignment import align
from mcu_exp.proxies.base import ProxyOutcome

SHOWN_PREFIXES = (names.MEASURE_PREFIX, names.CODE_PREFIX)  # rows printed; dataset.* only in the CSV
MEASURE_CODE = (
    "mcu_exp.evaluation.measure_table",
    "mcu_exp.evaluation.rejection",
    "mcu_exp.evaluation.bootstrap",
    "mcu_exp.evaluation.registry",
    "mcu_exp.evaluation.definitions",
    "mcu_exp.evaluation.metrics",
    "mcu_exp.evaluation.significance",
    "mcu_exp.data.code_metrics",
)  # the measure table's code
CEILING_CODE = (
    "mcu_exp.ceiling.split_half",
    "mcu_exp.ceiling.bounds",
    "mcu_exp.ceiling.program_bootstrap",
    "mcu_exp.ceiling.versus",
    "mcu_exp.data.labels",
    "mcu_exp.evaluation.bootstrap",
    "mcu_exp.evaluation.registry",
    "mcu_exp.evaluation.definitions",
    "mcu_exp.evaluation.metrics",
)  # the ceiling's code: both bounds, the program bootstrap


def measures_and_baselines(
    outcome: ProxyOutcome, dataset: Any, labels: HumanLabels, ev: EvaluationConfig, cache_dir: Path | None = None
) -> pd.DataFrame | None:
    """AUC(score), Spearman and PRR, with bootstrap CIs (and PRR's permutation p), of each of the
    proxy's uncertainty measures (P1's ``measure.*`` columns) and of the code-metric baselines
    ``evaluation.baselines`` asks for (``code.*``, in their declared direction; with ``all``
    also the dataset's own ``dataset.*`` metrics, raw), against the human labels; None when
    there is nothing to score. None of it depends on the decision: with ``cache_dir`` the table
    is computed once per input and read back by the sweep's other jobs
    (:func:`mcu_exp.result_cache.cached_result`)."""
    from mcu_exp.data.code_metrics import code_metrics, program_metrics
    from mcu_exp.evaluation.measure_table import measure_columns, measure_table
    from mcu_exp.result_cache import cached_result

    frame = outcome.table[[c for c in outcome.table.columns if str(c).startswith(names.MEASURE_PREFIX)]]
    if ev.baselines != "none":
        metrics = program_metrics(dataset) if ev.baselines == "all" else code_metrics(dataset)
        frame = frame.join(metrics, how="left")
    if not measure_columns(frame):
        return None
    args = (frame, labels.labels, labels.correctness, ev.bootstrap_resamples, ev.confidence, ev.seed, ev.permutations)
    return cached_result(
        cache_dir, "measure_table", args, lambda: measure_table(*args), code=MEASURE_CODE, kind=pd.DataFrame
    )


def write_rejection(
    outcome: ProxyOutcome, labels: HumanLabels, results: Path, ev: EvaluationConfig, cache_dir: Path | None = None
) -> dict[str, float] | None:
    """For a proxy with a score on every labelled program: the prediction-rejection curves
    against all readers' labels (``rejection.csv``; its figure is drawn from it); return the PRR with its
    stratified bootstrap interval and two-sided permutation p against 0 (``prr``,
    ``prr_ci_low``, ``prr_ci_high``, ``prr_perm_p``), as the measure table computes them (the
    interval and p once per score and labels with ``cache_dir``: the score is decision-free)."""
    from mcu_exp.evaluation.bootstrap import stratified_indices
    from mcu_exp.evaluation.rejection import prediction_rejection, prr_interval_and_p
    from mcu_exp.result_cache import cached_result, floats

    truth, _, score = align(outcome.table, labels.labels)
    if len(truth) < 2 or not np.isfinite(score.to_numpy()).all():
        return None
    y, s = truth.to_numpy(), score.to_numpy()
    found = prediction_rejection(y, s)
    found.curves.to_csv(results / names.REJECTION_FILE, index=False)
    low = high = p = float("nan")
    if np.isfinite(found.prr):

        def interval_and_p() -> tuple[float, float, float]:
            indices = stratified_indices(y, ev.bootstrap_resamples, np.random.default_rng(ev.seed))
            return prr_interval_and_p(y, s, indices, ev.confidence, ev.permutations, ev.seed)

        key = (y, s, ev.bootstrap_resamples, ev.confidence, ev.seed, ev.permutations)
        low, high, p = cached_result(cache_dir, "prr_interval", key, interval_and_p, code=MEASURE_CODE, kind=floats(3))
    return {"prr": float(found.prr), "prr_ci_low": low, "prr_ci_high": high, "prr_perm_p": p}


def render_measures(table: pd.DataFrame) -> str:
    """The measure table as printed: the proxy's measures and the code metrics; how many of
    the dataset's own metrics are in ``measures.csv``. The table is decision-free, so a sweep's
    jobs print the same text: rendered once per content in a process."""
    from mcu_exp.result_cache import content_hash

    try:
        key = content_hash(table, dict(table.attrs))
    except TypeError:  # attrs a plugin's measure left that have no content hash
        return _render_measures(table)
    if key not in _RENDERED:
        if len(_RENDERED) >= 16:
            _RENDERED.clear()
        _RENDERED[key] = _render_measures(table)
    return _RENDERED[key]


_RENDERED: dict[str, str] = {}  # rendered measure tables by content


def _render_measures(table: pd.DataFrame) -> str:
    from mcu_exp.evaluation.measure_table import render_measure_table

    shown = table[[str(i).startswith(SHOWN_PREFIXES) for i in table.index]]
    shown.attrs.update(table.attrs)
    text = render_measure_table(shown, title="Uncertainty measures and code-metric baselines vs human labels")
    rest = len(table) - len(shown)
    if rest:
        text += f"  and {rest} of the dataset's own metrics (dataset.*): {names.MEASURES_FILE}\n"
    return text


def attach_ceilings(
    reports: dict[str, AlignmentReport],
    dataset: Dataset,
    labels: LabelsConfig,
    ev: EvaluationConfig,
    results: Path,
    cache_dir: Path | None = None,
    score: pd.Series | None = None,
    latent: Mapping[str, Mapping[str, float]] | None = None,
) -> dict[str, AlignmentReport]:
    """The job's reports, each with its own label set's humans' ceiling (all readers under the
    ``labels`` config, each subgroup its readers alone) and, with the proxy's per-program
    ``score``, the proxy against it on the same programs (:mod:`mcu_exp.ceiling.versus`);
    ``reliability.csv`` written to ``results``. None of it depends on the decision (ε, τ): with
    ``cache_dir`` it is computed once per input (:func:`mcu_exp.result_cache.cached_result`).
    Under ``labels.target=latent`` the bounds, which describe the observed labels, give way to
    each label set's ``latent`` model figures."""
    from mcu_exp.ceiling.versus import ceiling_table, ceilings, with_ceilings
    from mcu_exp.result_cache import cached_result, mapping_of

    if latent is not None:
        ceiling_table(latent).to_csv(results / names.RELIABILITY_FILE, index=False)
        return with_ceilings(reports, latent)

    groups = [g for g in reports if g != names.ALL_READERS]
    key = (
        dataset.evaluations,
        dataset.program_ids,
        labels.rule,
        float(labels.min_fraction),
        labels.group,
        labels.readers,
        groups,
        ev.ceiling_splits,
        ev.ceiling_resamples,
        ev.ceiling_inner_splits,
        ev.seed,
        ev.confidence,
        score,
    )
    found = cached_result(
        cache_dir,
        "ceiling_bounds",
        key,
        lambda: ceilings(dataset, score, labels, ev, groups, cache_dir),
        code=CEILING_CODE,
        kind=mapping_of(dict),
    )
    ceiling_table(found).to_csv(results / names.RELIABILITY_FILE, index=False)
    return with_ceilings(reports, found)
