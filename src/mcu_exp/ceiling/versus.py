"""The humans' ceiling of each label set a job evaluates, and its proxy read against it.

For each label set (all readers under the ``labels`` config, each reader subgroup its readers
alone) :func:`ceilings` computes, on the same programs (those with a finite proxy score and at
least two of the set's readers), every figure of
:func:`mcu_exp.ceiling.program_bootstrap.compare_to_bounds`: the two bounds (lower: half panel
against half panel; upper: the beta-binomial reader model), their intervals over programs, the
proxy's paired differences to each bound and its disattenuated ρ. Without a score it is the
ceiling alone (:func:`~mcu_exp.ceiling.program_bootstrap.ceiling_bootstrap`).

The figures come back flat, under the key prefixes of :mod:`mcu_exp.evaluation.ceiling_lines`:

* ``ceiling.<figure>`` for every figure of the program bootstrap (``auc_score``, ``f1``,
  ``split_half_rho``: the lower bound; ``reliability``, ``spearman``: Spearman–Brown;
  ``upper_auc_score``, ``second_panel_auc_score``, ``upper_spearman``, ``model_icc``: the
  reader model), each with ``_ci_low``/``_ci_high`` (percentile interval over programs) and, for
  the split averages, ``_mc`` (Monte Carlo error); ``ceiling.krippendorff_alpha`` (of the
  per-evaluation ABU50; with a score, of the scored programs), ``ceiling.programs``,
  ``ceiling.programs_left_out`` (scored programs with one reader),
  ``ceiling.resamples``, ``ceiling.splits``, ``ceiling.inner_splits``;
* ``vs_ceiling.auc_score`` (the proxy's AUC on these programs) and ``vs_ceiling.<bound>``
  (``lower``, ``second_panel``, ``upper``: AUC_proxy − AUC_bound, paired), each with its
  interval, and ``vs_ceiling.<bound>_p_below`` (P(proxy < bound));
* ``disattenuated.spearman`` (ρ / √reliability, clipped to [−1, 1]) with its interval, and
  ``disattenuated.flagged`` (1: the reliability's interval reaches 0);
* for all readers only (it costs ~0.3 s a label set), ``concordance.proxy``: the proxy's
  within-reader pairwise concordance, ``concordance.ceiling``: how often another reader of both
  programs orders a pair the same way, ``concordance.gap``, each with its program-and-reader
  bootstrap interval (:mod:`mcu_exp.ceiling.concordance`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from mcu_exp.evaluation.ceiling_lines import BOUND_KEYS, CEILING, CONCORDANCE, DISATTENUATED, HIGH, LOW, MC, VS
from mcu_exp.names import ALL_READERS

if TYPE_CHECKING:
    from pathlib import Path

    import pandas as pd

    from mcu_exp.ceiling.program_bootstrap import BoundComparison, CeilingBootstrap
    from mcu_exp.config import EvaluationConfig, LabelsConfig
    from mcu_exp.data.types import Dataset
    from mcu_exp.evaluation.alignment_report import AlignmentReport

SPLIT_AVERAGES = ("auc_score", "f1", "split_half_rho")  # figures with a Monte Carlo error over splits


def ceiling_figures(ceiling: CeilingBootstrap, alpha: float) -> dict[str, float]:
    """``ceiling.*``: every figure with its interval over programs, the split averages' Monte
    Carlo error, Krippendorff's α and the counts behind them."""
    out: dict[str, float] = {}
    for name, est in ceiling.figures.items():
        out[f"{CEILING}{name}"] = est.point
        out[f"{CEILING}{name}{LOW}"], out[f"{CEILING}{name}{HIGH}"] = est.ci_low, est.ci_high
        if name in SPLIT_AVERAGES:
            out[f"{CEILING}{name}{MC}"] = est.mc_error
    out[f"{CEILING}krippendorff_alpha"] = alpha
    out[f"{CEILING}programs"] = float(ceiling.programs)
    out[f"{CEILING}programs_left_out"] = float(ceiling.programs_left_out)
    out[f"{CEILING}resamples"] = float(ceiling.resamples)
    out[f"{CEILING}splits"] = float(ceiling.splits)
    out[f"{CEILING}inner_splits"] = float(ceiling.inner_splits)
    return out


def comparison_figures(found: BoundComparison, alpha: float) -> dict[str, float]:
    """:func:`ceiling_figures` and the proxy against them (``vs_ceiling.*``, ``disattenuated.*``)."""
    out = ceiling_figures(found.ceiling, alpha)
    auc = found.proxy_auc
    out[f"{VS}auc_score"], out[f"{VS}auc_score{LOW}"], out[f"{VS}auc_score{HIGH}"] = auc.point, auc.ci_low, auc.ci_high
    for bound, diff in found.differences.items():
        key = f"{VS}{BOUND_KEYS[bound]}"
        out[key], out[f"{key}{LOW}"], out[f"{key}{HIGH}"] = diff.point, diff.ci_low, diff.ci_high
        out[f"{key}_p_below"] = diff.p_below
    dis = found.disattenuated
    key = f"{DISATTENUATED}spearman"
    out[key], out[f"{key}{LOW}"], out[f"{key}{HIGH}"] = dis.point, dis.ci_low, dis.ci_high
    out[f"{DISATTENUATED}flagged"] = float(dis.flagged)
    return out


def label_set_ceiling(
    dataset: Dataset,
    score: pd.Series | None,
    labels: LabelsConfig,
    ev: EvaluationConfig,
    group: str,
    cache_dir: str | Path | None = None,
) -> dict[str, float]:
    """The flat figures of one label set (module docstring): the ceiling, and with a ``score``
    (per program, higher = more understandable; none finite: the ceiling alone) the proxy against
    it on the same programs; ``cache_dir``: where the humans' side is kept for other scores on
    the same programs (:func:`~mcu_exp.ceiling.program_bootstrap.compare_to_bounds`)."""
    from mcu_exp.ceiling.program_bootstrap import ceiling_bootstrap, compare_to_bounds
    from mcu_exp.ceiling.split_half import krippendorff_alpha
    from mcu_exp.data.labels import label_evaluations

    rule, fraction, readers = labels.rule, float(labels.min_fraction), labels.readers
    resamples, splits, inner = ev.ceiling_resamples, ev.ceiling_splits, ev.ceiling_inner_splits
    if score is None or not np.isfinite(score.to_numpy(dtype=float)).any():
        alone = ceiling_bootstrap(
            dataset, rule, fraction, group, readers, resamples, splits, ev.seed, ev.confidence, inner
        )
        return ceiling_figures(alone, krippendorff_alpha(label_evaluations(dataset, group, readers)))
    # α on the programs every other figure uses: the scored ones (one reader adds nothing to α)
    scored = set(score.index[np.isfinite(score.to_numpy(dtype=float))])
    on_scored = dataset.subset(pid for pid in dataset.program_ids if pid in scored)
    alpha = krippendorff_alpha(label_evaluations(on_scored, group, readers))
    found = compare_to_bounds(
        dataset, score, rule, fraction, group, readers, resamples, splits, ev.seed, ev.confidence, inner, cache_dir
    )
    return comparison_figures(found, alpha)


def concordance_figures(
    dataset: Dataset, score: pd.Series, labels: LabelsConfig, ev: EvaluationConfig
) -> dict[str, float]:
    """``concordance.*``: the proxy's within-reader pairwise concordance over the label set's
    evaluations, the reader-pair ceiling and their gap, with program-and-reader bootstrap
    intervals (:func:`mcu_exp.ceiling.concordance.concordance`)."""
    from mcu_exp.ceiling.concordance import concordance
    from mcu_exp.data.labels import label_evaluations

    evaluations = label_evaluations(dataset, labels.group, labels.readers)
    found = concordance(evaluations, score, resamples=ev.ceiling_resamples, confidence=ev.confidence, seed=ev.seed)
    return found.figures(CONCORDANCE)


def ceilings(
    dataset: Dataset,
    score: pd.Series | None,
    labels: LabelsConfig,
    ev: EvaluationConfig,
    groups: list[str],
    cache_dir: str | Path | None = None,
) -> dict[str, dict[str, float]]:
    """:func:`label_set_ceiling` of ``all`` (the ``labels`` config's own group) and each subgroup;
    with a score, ``all`` also carries :func:`concordance_figures`."""
    found = {
        name: label_set_ceiling(dataset, score, labels, ev, labels.group if name == ALL_READERS else name, cache_dir)
        for name in [ALL_READERS, *groups]
    }
    if score is not None and np.isfinite(score.to_numpy(dtype=float)).any():
        found[ALL_READERS].update(concordance_figures(dataset, score, labels, ev))
    return found


def ceiling_table(found: Mapping[str, Mapping[str, float]]) -> pd.DataFrame:
    """``reliability.csv``: one row per label set (``group``), every figure by its key."""
    import pandas as pd

    return pd.DataFrame([{"group": name, **figures} for name, figures in found.items()])


def with_ceilings(
    reports: Mapping[str, AlignmentReport], found: Mapping[str, Mapping[str, float]]
) -> dict[str, AlignmentReport]:
    """Each report with its own label set's figures attached (``report.ceiling``)."""
    return {
        name: dataclasses.replace(rep, ceiling={k: float(v) for k, v in found[name].items()}) if name in found else rep
        for name, rep in reports.items()
    }
