"""The humans' own noise ceiling: how well one half of a program's readers agrees with the other.

No proxy can align with the human panel better than the panel aligns with itself. For ``R``
seeded random splits of each program's evaluations into two halves A and B (sizes ⌊n/2⌋ and
⌈n/2⌉, the larger half drawn at random), each half's per-program statistics are computed
under the run's label rule (``labels.rule``, ``min_fraction``, ``group``, ``readers``: the
rule functions of :mod:`mcu_exp.data.labels`, applied to every half at once):

* **half-panel** figures: AUC of A's rule score (e.g. mean ABU50) against B's label, F1 of
  A's label against B's label, and Spearman's ρ between A's and B's mean correctness (the
  humans' continuous value a proxy's ρ is computed against);
* **extrapolated** figures: the full panel's reliability by Spearman–Brown,
  ``2ρ/(1 + ρ)`` of the mean split-half ρ, and the ceiling on any predictor's correlation
  with the full-panel mean, ``√reliability`` (classical test theory; 0 when the reliability
  is negative).

Each figure is the mean over splits, with the central ``confidence`` interval of its spread
over splits. Krippendorff's α (nominal, on the per-evaluation ABU50; the ``krippendorff``
package) is the agreement coefficient annotation studies report. Programs with a single
evaluation cannot be split: they are left out and counted; below :data:`MIN_PROGRAMS`
splittable programs every ceiling figure is undefined (NaN).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from mcu_exp.data.labels import ALL, RULES, TOLERANCE, abu50, check_settings, label_evaluations, share_correct
from mcu_exp.data.types import Dataset

if TYPE_CHECKING:
    from mcu_exp.config import EvaluationConfig, LabelsConfig

MIN_PROGRAMS = 10
"""Fewest programs with at least two evaluations for which the ceiling is a number."""
CEILING = "ceiling."
"""Prefix of the ceiling's metric keys (after any ``group.<name>.`` prefix)."""
SPREAD = ("auc_score", "f1", "split_half_rho", "reliability", "spearman")
"""The figures that carry an interval over splits (``<figure>_ci_low`` / ``_ci_high``)."""
FIGURES = (*SPREAD, "krippendorff_alpha", "programs", "programs_left_out")
HALF_PANEL = ("auc_score", "f1", "split_half_rho")  # estimated on half panels
EXTRAPOLATED = ("reliability", "spearman")  # the full panel, by Spearman–Brown


@dataclass(frozen=True)
class Reliability:
    """The split-half ceiling of one label set (all readers or a reader subgroup).

    ``figures`` maps each name of :data:`FIGURES` (and ``<name>_ci_low``/``_ci_high`` for
    :data:`SPREAD`) to its value, NaN when undefined; ``splits`` and ``confidence`` say how the
    intervals over splits were taken.
    """

    group: str
    figures: dict[str, float]
    splits: int
    confidence: float
    seed: int

    @property
    def defined(self) -> bool:
        """Whether enough programs could be split for the ceiling to be a number."""
        return self.figures["programs"] >= MIN_PROGRAMS

    def interval(self, name: str) -> tuple[float, float]:
        """The interval over splits of figure ``name``."""
        return self.figures[f"{name}_ci_low"], self.figures[f"{name}_ci_high"]

    def metrics(self, prefix: str = "") -> dict[str, float]:
        """``<prefix>ceiling.<figure>`` → value, for metrics.json and MLflow."""
        return {f"{prefix}{CEILING}{k}": float(v) for k, v in self.figures.items()}

    def row(self) -> dict[str, object]:
        """One row of ``reliability.csv``: the group, then every figure."""
        return {"group": self.group, **self.figures, "splits": self.splits, "confidence": self.confidence}


def _split_halves(programs: np.ndarray, splits: int, rng: np.random.Generator) -> np.ndarray:
    """(splits, evaluations) booleans: True where an evaluation falls in half A. Each program's
    evaluations (``programs``: sorted program codes, each code at least twice) are shuffled;
    the first ⌊n/2⌋ go to A, plus one more for half of the splits when n is odd."""
    sizes = np.bincount(programs)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    order = np.argsort(programs[None, :] + rng.random((splits, programs.size)), axis=1)
    extra = rng.integers(0, 2, size=(splits, sizes.size)) * (sizes % 2)
    cut = sizes // 2 + extra  # (splits, programs): how many of each program's evaluations go to A
    rank = np.arange(programs.size) - starts[programs]  # position within its program after sorting
    in_a = np.empty((splits, programs.size), dtype=bool)
    np.put_along_axis(in_a, order, rank[None, :] < cut[:, programs], axis=1)
    return in_a


def _half_statistics(
    evaluations: pd.DataFrame, programs: np.ndarray, in_a: np.ndarray, rule: str
) -> tuple[np.ndarray, np.ndarray]:
    """The rule's score and the mean correctness of each (split, half, program), as two
    (splits, 2, programs) arrays; the rule runs once on every half of every split at once
    (it sees the evaluations' numeric columns: ``correct``, ``total``…)."""
    splits = in_a.shape[0]
    n_programs = int(programs.max()) + 1
    cell = ((np.arange(splits)[:, None] * 2 + (~in_a)) * n_programs + programs[None, :]).ravel()
    numeric = evaluations.drop(columns="program_id").select_dtypes(include=["number", "bool"])
    stacked = pd.DataFrame(
        {column: np.tile(numeric[column].to_numpy(dtype=float, na_value=np.nan), splits) for column in numeric.columns}
    )
    cells = splits * 2 * n_programs
    stacked["program_id"] = pd.Categorical.from_codes(cell, categories=pd.RangeIndex(cells))  # no hashing
    score = RULES[rule](stacked).reindex(np.arange(cells)).to_numpy(dtype=float)
    share = np.tile(share_correct(evaluations).to_numpy(dtype=float), splits)
    correctness = np.bincount(cell, weights=share, minlength=cells) / np.bincount(cell, minlength=cells)
    shape = (splits, 2, n_programs)
    return score.reshape(shape), correctness.reshape(shape)


def krippendorff_alpha(evaluations: pd.DataFrame) -> float:
    """Krippendorff's α (nominal) of the per-evaluation ABU50, participants × programs
    (``krippendorff`` package); NaN when fewer than two values can be paired."""
    import krippendorff

    values = abu50(evaluations).astype(float)
    matrix = pd.DataFrame(
        {
            "participant": evaluations["participant_id"].astype(str).to_numpy(),
            "program": evaluations["program_id"].astype(str).to_numpy(),
            "value": values.to_numpy(),
        }
    ).pivot_table(index="participant", columns="program", values="value", aggfunc="first")
    if (matrix.notna().sum(axis=0) >= 2).sum() == 0 or np.unique(values).size < 2:
        return math.nan
    return float(krippendorff.alpha(reliability_data=matrix.to_numpy(dtype=float), level_of_measurement="nominal"))


def _spread(values: np.ndarray, confidence: float) -> tuple[float, float, float]:
    """Mean over the defined splits and the central ``confidence`` interval of their spread."""
    from mcu_exp.evaluation.bootstrap import percentile_interval

    defined = values[np.isfinite(values)]
    if defined.size == 0:
        return math.nan, math.nan, math.nan
    return (float(defined.mean()), *percentile_interval(defined, confidence))


def _ceiling(score: np.ndarray, correctness: np.ndarray, min_fraction: float, confidence: float) -> dict[str, float]:
    """The figures of :data:`SPREAD` from the per-split half statistics."""
    from mcu_exp.evaluation import definitions
    from mcu_exp.evaluation.metrics import batch_metrics
    from mcu_exp.evaluation.registry import Ranking

    splits, _, n = score.shape
    labels = (score >= min_fraction - TOLERANCE).astype(int)
    rows = np.arange(splits * n).reshape(splits, n)
    auc = definitions.auc_score(Ranking(score=score[:, 0].ravel(), indices=rows, truth=labels[:, 1]))
    f1 = batch_metrics(labels[:, 1], labels[:, 0])["f1"]
    rho = definitions.spearman(
        Ranking(score=correctness[:, 0].ravel(), indices=rows, truth=labels[:, 1], human=correctness[:, 1].ravel())
    )
    out: dict[str, float] = {}
    for name, values in (("auc_score", auc), ("f1", f1), ("split_half_rho", rho)):
        out[name], out[f"{name}_ci_low"], out[f"{name}_ci_high"] = _spread(np.asarray(values, float), confidence)
    for name, transform in (("reliability", spearman_brown), ("spearman", ceiling_rho)):
        for suffix in ("", "_ci_low", "_ci_high"):  # monotone maps of ρ: its interval maps too
            out[f"{name}{suffix}"] = float(transform(out[f"split_half_rho{suffix}"]))
    return out


def spearman_brown(rho: float | np.ndarray) -> float | np.ndarray:
    """The full panel's reliability from a split-half correlation: ``2ρ / (1 + ρ)``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return 2.0 * np.asarray(rho, dtype=float) / (1.0 + np.asarray(rho, dtype=float))


def ceiling_rho(rho: float | np.ndarray) -> float | np.ndarray:
    """The ceiling on a predictor's correlation with the full-panel mean: √(Spearman–Brown of
    ``rho``), 0 where that reliability is negative."""
    ceiling: np.ndarray = np.sqrt(np.clip(spearman_brown(rho), 0.0, None))
    return ceiling


def split_half(
    dataset: Dataset,
    rule: str = "mean_abu50",
    min_fraction: float = 0.5,
    group: str = ALL,
    readers: str = ALL,
    splits: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> Reliability:
    """The split-half ceiling of the label set ``rule ≥ min_fraction`` over ``group``'s
    evaluations (``readers``: all, or only those asked questions), over ``splits`` splits."""
    check_settings(rule, min_fraction, group, readers)
    evaluations = label_evaluations(dataset, group, readers)
    counts = evaluations.groupby("program_id").size()
    splittable = [pid for pid in dataset.program_ids if counts.get(pid, 0) >= 2]
    figures: dict[str, float] = {f"{k}{s}": math.nan for k in SPREAD for s in ("", "_ci_low", "_ci_high")}
    figures["krippendorff_alpha"] = krippendorff_alpha(evaluations)
    figures["programs"] = float(len(splittable))
    figures["programs_left_out"] = float(int((counts == 1).sum()))
    if len(splittable) >= MIN_PROGRAMS:
        code = pd.Series(np.arange(len(splittable)), index=splittable)
        kept = evaluations[evaluations["program_id"].isin(splittable)]
        kept = kept.assign(_code=code.reindex(kept["program_id"]).to_numpy()).sort_values("_code", kind="stable")
        programs = kept.pop("_code").to_numpy()
        in_a = _split_halves(programs, splits, np.random.default_rng(seed))
        score, correctness = _half_statistics(kept, programs, in_a, rule)
        figures.update(_ceiling(score, correctness, min_fraction, confidence))
    return Reliability(group=group, figures=figures, splits=splits, confidence=confidence, seed=seed)


def reliabilities(
    dataset: Dataset, labels: LabelsConfig, ev: EvaluationConfig, groups: list[str]
) -> dict[str, Reliability]:
    """The ceiling of each label set the job evaluates: ``all`` (the ``labels`` config's own
    group) and each subgroup in ``groups`` (its readers alone), with ``evaluation.ceiling_splits``
    splits seeded by ``evaluation.seed``."""
    out = {}
    for name in [ALL, *groups]:
        group = labels.group if name == ALL else name
        out[name] = split_half(
            dataset,
            labels.rule,
            float(labels.min_fraction),
            group,
            labels.readers,
            ev.ceiling_splits,
            ev.seed,
            ev.confidence,
        )
    return out


def reliability_table(found: dict[str, Reliability]) -> pd.DataFrame:
    """``reliability.csv``: one row per label set (``group``), every figure."""
    return pd.DataFrame([{**rel.row(), "group": name} for name, rel in found.items()])
