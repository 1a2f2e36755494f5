"""A job's proxy labels scored against each human label set and the reference proxy's labels."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from mcu_exp import names
from mcu_exp.calibration import get_rule
from mcu_exp.config import EvaluationConfig
from mcu_exp.data import HumanLabels
from mcu_exp.data.labels import class_size_warning
from mcu_exp.evaluation import AlignmentReport, DegenerateMetricWarning, evaluate
from mcu_exp.evaluation.alignment_report import CI_RECALIBRATE, Reuse
from mcu_exp.evaluation.bootstrap import Calibration, Relabel
from mcu_exp.evaluation.groups_table import class_counts
from mcu_exp.proxies.base import Proxy, ProxyOutcome
from mcu_exp.proxies.stages import Generators, run_stages

log = logging.getLogger("mcu_exp")


def align(table: pd.DataFrame, labels: pd.Series) -> tuple[pd.Series, pd.Series, pd.Series]:
    """Reference label, proxy label and proxy score on the programs both have."""
    common = [pid for pid in table.index if pid in labels.index]
    rows = table.loc[common]
    return labels.loc[common].astype(int), rows[names.LABEL].astype(int), rows[names.SCORE].astype(float)


def relabeller(proxy: Proxy, outcome: ProxyOutcome, ev: EvaluationConfig) -> Relabel | None:
    """For ``evaluation.ci=recalibrate`` and a proxy whose decision rule calibrates on the
    programs: a function giving the labels of bootstrap resamples of ``outcome.table``'s
    programs (by position) after recalibrating on each. None: labels stay fixed."""
    if ev.ci != CI_RECALIBRATE or not proxy.calibrated or outcome.scores is None:
        return None
    decision = proxy.ctx.decision
    rule = get_rule(decision.rule)
    if rule.relabel is None:
        return None
    scores, relabel = outcome.scores, rule.relabel
    return lambda positions: relabel(scores, decision, positions)


SCORE_CODE = (
    "mcu_exp.evaluation.alignment_report",
    "mcu_exp.evaluation.bootstrap",
    "mcu_exp.evaluation.registry",
    "mcu_exp.evaluation.definitions",
    "mcu_exp.evaluation.metrics",
    "mcu_exp.evaluation.significance",
)  # the score metrics' bootstrap and permutation test (and any plugin metric's module, added)


def score_reuse(cache_dir: Path | None) -> Reuse | None:
    """The result cache under ``cache_dir`` for :func:`~mcu_exp.evaluation.evaluate`'s
    decision-free parts (None: computed in every job), keyed also on the registered score
    metrics and the source of the modules that define them."""
    if cache_dir is None:
        return None
    from mcu_exp.evaluation.registry import INTERVAL_KINDS, registered
    from mcu_exp.result_cache import Kind, cached_result, mapping_of

    chosen = registered(INTERVAL_KINDS, score=True)
    code = tuple(dict.fromkeys([*SCORE_CODE, *sorted({m.compute.__module__ for m in chosen})]))
    names = tuple(m.name for m in chosen)
    kinds: dict[str, Kind] = {"score_bootstrap": mapping_of(np.ndarray), "auc_permutation_p": (float, np.floating)}
    return lambda name, key, compute: cached_result(
        cache_dir, name, (names, *key), compute, code=code, kind=kinds.get(name)
    )


def alignment(
    table: pd.DataFrame,
    labels: pd.Series,
    ev: EvaluationConfig,
    relabel: Relabel | None = None,
    human: pd.Series | None = None,
    panel: pd.Series | None = None,
    cache_dir: Path | None = None,
) -> AlignmentReport | None:
    """Metrics, CIs, baselines and tests of the proxy's labels against ``labels`` (None: no
    overlap). ``relabel`` works on positions in ``table``: each resample recalibrates τ on a
    draw of *all* the table's programs (stratified by ``panel``, the whole panel's labels;
    ``labels`` when not given) and scores the drawn programs that ``labels`` covers, so a
    subgroup's or a reference's interval belongs to the estimator its point value comes from.
    ``human`` is the humans' continuous per-program value for the rank correlations. With
    ``cache_dir`` the score metrics' intervals and test, which the decision does not change,
    are computed once per input (:func:`score_reuse`)."""
    y_true, y_pred, score = align(table, labels)
    if len(y_true) == 0:
        return None
    calibration = None
    if relabel is not None:
        strata = (labels if panel is None else panel).reindex(table.index)
        calibration = Calibration(
            strata=strata.fillna(-1).to_numpy(dtype=int), scored=table.index.get_indexer(y_true.index), relabel=relabel
        )
    continuous = None
    if human is not None:
        values = human.reindex(y_true.index).to_numpy(dtype=float)
        continuous = values if np.isfinite(values).all() else None
    with warnings.catch_warnings():  # kept in report.warnings and printed under the table
        warnings.simplefilter("ignore", DegenerateMetricWarning)
        return evaluate(
            y_true.to_numpy(),
            y_pred.to_numpy(),
            score.to_numpy(),
            resamples=ev.bootstrap_resamples,
            confidence=ev.confidence,
            seed=ev.seed,
            human=continuous,
            calibration=calibration,
            permutations=ev.permutations,
            reuse=score_reuse(cache_dir),
        )


def evaluate_groups(
    outcome: ProxyOutcome,
    groups: dict[str, HumanLabels],
    ev: EvaluationConfig,
    relabel: Relabel | None = None,
    cache_dir: Path | None = None,
) -> dict[str, AlignmentReport]:
    """The alignment report against each human label set (all readers and each subgroup);
    recalibrating intervals draw τ from all programs, stratified by all readers' labels. With
    ``cache_dir`` the decision-free parts are computed once per input (:func:`alignment`)."""
    panel = groups[names.ALL_READERS].labels if names.ALL_READERS in groups else None
    reports = {}
    for name, labels in groups.items():
        report = alignment(outcome.table, labels.labels, ev, relabel, labels.correctness, panel, cache_dir)
        if report is None:
            log.warning("label set %r shares no program with the proxy's output; skipped", name)
            continue
        reports[name] = report
    return reports


def reference_report(
    proxy: Proxy,
    reference: Proxy | None,
    outcome: ProxyOutcome,
    ev: EvaluationConfig,
    relabel: Relabel | None = None,
    max_failed_share: float = 0.0,
    panel: pd.Series | None = None,
    cache_dir: Path | None = None,
) -> AlignmentReport | None:
    """The proxy's labels scored against the reference proxy's (cross-proxy reliability, P0 by
    default), when the reference applies to these programs; None otherwise. What generating
    the reference cost goes into ``outcome.metrics`` as ``reference.*``; its stages stop the
    job above ``max_failed_share`` failed samples, like the proxy's own."""
    if reference is None or not reference.applies():
        return None
    generators = Generators(reference.ctx.cache_dir, reference.ctx.progress, max_failed_share, reference.ctx.cache_url)
    labels = reference.outcome(run_stages(reference, generators)).table[names.LABEL]
    outcome.metrics.update({f"reference.{k}": v for k, v in {**generators.stats(), **generators.usage()}.items()})
    report = alignment(outcome.table, labels, ev, relabel, panel=panel, cache_dir=cache_dir)
    if report is None:
        log.warning(
            "no program has both %s labels and %s labels; cross-proxy report skipped", reference.name, proxy.name
        )
    return report


def class_warnings(
    reports: dict[str, AlignmentReport], vs_ref: AlignmentReport | None, min_per_class: int
) -> dict[str, str | None]:
    """The class-size warning of every label set evaluated: each reader group's and, as
    ``reference``, the reference proxy's labels (None where both classes are large enough)."""
    found = {name: class_size_warning(*class_counts(rep), min_per_class) for name, rep in reports.items()}
    if vs_ref is not None:
        found["reference"] = class_size_warning(*class_counts(vs_ref), min_per_class)
    return found
