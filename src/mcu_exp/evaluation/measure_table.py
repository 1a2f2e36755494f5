"""How well each per-program measure column ranks programs as the humans do, one row a column.

A P1 run's per-program table holds a score column ``measure.<name>`` for every uncertainty
measure (:mod:`mcu_exp.measures`: −uncertainty, higher = more understandable) and may hold
code metrics ``code.<name>`` (raw values). A code metric with a declared direction
(:data:`mcu_exp.data.code_metrics.CODE_DIRECTIONS`: higher = harder to understand) is scored
as −value, so its AUC reads like a measure's (above 0.5 = ranks as expected); other columns
(``dataset.*``) are scored raw. ``direction`` says which. :func:`measure_table` gives, for
each such column, in table order:

- ``auc_score``: the ROC AUC of the column against the human labels (the registered
  ``auc_score``: rank sums with mid-ranks, equal to scikit-learn's ``roc_auc_score``);
- ``spearman``: Spearman's ρ of the column with the humans' continuous per-program
  correctness when given, else with the 0/1 labels (the registered ``spearman``, equal to
  SciPy's ``spearmanr``); ``spearman_vs`` says which;
- ``prr``: the prediction rejection ratio of the column against the labels
  (:mod:`mcu_exp.evaluation.rejection`), and ``prr_perm_p``, its two-sided permutation
  p-value against 0 (the AUC test's relabellings);
- each of the three with a stratified bootstrap percentile interval
  (:mod:`mcu_exp.evaluation.bootstrap`: positives resampled among positives, negatives among
  negatives). Every column is scored on the same resamples when it covers the same programs
  (one seeded draw per program set), so columns are compared on paired resamples.

A column that ranks its programs exactly as an earlier row's does (values rounded to
``RANK_DECIMALS`` first: e.g. ``measure.deg`` = (1 − 1/m)(1 − ``ssc``) is a monotone function
of ``measure.ssc``) names that row in ``same_ranking_as``: its figures are the earlier row's, so
the printed table folds it into a caption note and leaves it out of the multiplicity family.

A column is scored on the programs that have a human label (and correctness, when given) and
a finite value in it; ``n`` counts them. Undefined values (one class, a constant column, no
program) are NaN: a constant column ranks nothing, so its AUC, ρ, PRR and their intervals
are undefined, not 0.5 and 0.
"""

from __future__ import annotations

import io
import math

import numpy as np
import pandas as pd
from rich.console import Console
from rich.table import Table

from mcu_exp import names
from mcu_exp.data.code_metrics import CODE_DIRECTIONS, HARDER
from mcu_exp.evaluation.alignment_report import format_interval, format_value
from mcu_exp.evaluation.bootstrap import MIN_RESAMPLES, percentile_interval, stratified_indices
from mcu_exp.evaluation.groups_table import family_caption
from mcu_exp.evaluation.metrics import as_binary
from mcu_exp.evaluation.registry import RANK_DECIMALS, Ranking, header, metric
from mcu_exp.evaluation.rejection import prediction_rejection_ratio, prr_interval_and_p
from mcu_exp.evaluation.significance import MIN_PERMUTATIONS

PREFIXES = (names.MEASURE_PREFIX, names.CODE_PREFIX, names.DATASET_METRIC_PREFIX)  # the columns it scores
AUC, SPEARMAN = "auc_score", "spearman"  # the registered metrics it reports
CI_LOW, CI_HIGH = "_ci_low", "_ci_high"
VS_CORRECTNESS, VS_LABELS = "correctness", "labels"
PRR = "prr"  # prediction rejection ratio of the column, see mcu_exp.evaluation.rejection
PRR_P = "prr_perm_p"  # its two-sided permutation p-value against 0
DIRECTION = "direction"  # what was scored: the score column, −value (declared harder when higher) or value
SCORE, NEGATED, RAW = "score", "-value", "value"
VALUES = (
    AUC,
    AUC + CI_LOW,
    AUC + CI_HIGH,
    SPEARMAN,
    SPEARMAN + CI_LOW,
    SPEARMAN + CI_HIGH,
    PRR,
    PRR + CI_LOW,
    PRR + CI_HIGH,
    PRR_P,
)
SAME_AS = "same_ranking_as"  # an earlier row whose column ranks these programs exactly alike ("" when none)
COLUMNS = ("n", *VALUES, "spearman_vs", DIRECTION, SAME_AS)
ECC_NOTE = (
    "measure.ecc is in effect √(number of Laplacian eigenvalues below 0.9 − 1), a step count, plus a small part "
    "(how unequal the responses' degrees are) that ranks programs on the same step (docs/measures.md)"
)


def direction(column: str, declared: dict[str, int] | None = None) -> str:
    """How ``column`` is scored: ``score`` (a measure's −uncertainty), ``-value`` (a metric
    declared harder to understand when higher) or ``value`` (raw, no declared direction)."""
    if column.startswith(names.MEASURE_PREFIX):
        return SCORE
    return NEGATED if (CODE_DIRECTIONS if declared is None else declared).get(column) == HARDER else RAW


def measure_columns(per_program: pd.DataFrame) -> list[str]:
    """The columns named ``measure.*``, ``code.*`` or ``dataset.*``, in table order."""
    return [str(c) for c in per_program.columns if str(c).startswith(PREFIXES)]


def _row(
    score: np.ndarray,
    truth: np.ndarray,
    human: np.ndarray,
    resamples: int,
    confidence: float,
    seed: int,
    permutations: int,
) -> dict[str, float]:
    """Point values and intervals of AUC, ρ and PRR for one column on its programs, and PRR's
    permutation p; all undefined (NaN) without programs or for a constant column."""
    out: dict[str, float] = {"n": float(truth.size)}
    if truth.size == 0 or np.ptp(score) == 0:
        return {**out, **dict.fromkeys(VALUES, math.nan)}
    indices = stratified_indices(truth, resamples, np.random.default_rng(seed))
    point = Ranking.single(score, truth, human)
    sampled = Ranking(score, indices, truth[indices], human)
    for name in (AUC, SPEARMAN):
        compute = metric(name).compute
        out[name] = float(compute(point)[0])  # type: ignore[arg-type]
        low, high = percentile_interval(compute(sampled), confidence)  # type: ignore[arg-type]
        out[name + CI_LOW], out[name + CI_HIGH] = low, high
    out[PRR] = prediction_rejection_ratio(truth, score)
    out[PRR + CI_LOW], out[PRR + CI_HIGH], out[PRR_P] = prr_interval_and_p(
        truth, score, indices, confidence, permutations, seed
    )
    return out


def measure_table(
    per_program: pd.DataFrame,
    human_labels: pd.Series,
    human_correctness: pd.Series | None = None,
    resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
    permutations: int = 10_000,
    directions: dict[str, int] | None = None,
) -> pd.DataFrame:
    """One row per ``measure.*``/``code.*``/``dataset.*`` column of ``per_program`` (indexed by
    program id): n, auc_score, spearman and prr each with its CI, prr_perm_p, spearman_vs
    ("correctness" or "labels"), direction and same_ranking_as. ``human_labels`` (0/1) and ``human_correctness``
    are indexed by program id; missing values leave a program out. ``directions``: declared
    directions by column (default the code metrics'). The frame's ``attrs`` keep resamples,
    confidence, seed and permutations."""
    if permutations < MIN_PERMUTATIONS:
        raise ValueError(f"evaluation.permutations must be at least {MIN_PERMUTATIONS}, got {permutations}")
    if resamples < MIN_RESAMPLES:
        raise ValueError(
            f"evaluation.bootstrap_resamples must be at least {MIN_RESAMPLES} "
            f"for a stable percentile interval, got {resamples}"
        )
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"evaluation.confidence must lie in (0, 1), got {confidence}")
    humans = pd.DataFrame({"label": human_labels})
    if human_correctness is not None:
        humans["human"] = human_correctness
    humans = humans.dropna()
    humans["label"] = as_binary(humans["label"].to_numpy(), "human_labels")
    if human_correctness is None:
        humans["human"] = humans["label"].astype(float)
    vs = VS_LABELS if human_correctness is None else VS_CORRECTNESS
    rows = {}
    ranks: dict[str, pd.Series] = {}
    for column in measure_columns(per_program):
        way = direction(column, directions)
        values = pd.to_numeric(per_program[column], errors="coerce").astype(float)
        joined = humans.join((-values if way == NEGATED else values).rename("score"), how="inner")
        joined = joined[np.isfinite(joined["score"].to_numpy())]
        ranked = joined["score"].round(RANK_DECIMALS).rank(method="average")
        same = next((c for c, r in ranks.items() if r.index.equals(ranked.index) and r.equals(ranked)), "")
        ranks[column] = ranked
        row = _row(
            joined["score"].to_numpy(float),
            joined["label"].to_numpy(int),
            joined["human"].to_numpy(float),
            resamples,
            confidence,
            seed,
            permutations,
        )
        rows[column] = {**row, "spearman_vs": vs, DIRECTION: way, SAME_AS: same}
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=list(COLUMNS))
    frame["n"] = frame["n"].astype(int)
    frame.index.name = "column"
    frame.attrs.update(resamples=resamples, confidence=confidence, seed=seed, permutations=permutations)
    return frame


def _p_value(p: float) -> str:
    return "undefined" if math.isnan(p) else f"{p:.4f}"


def render_measure_table(frame: pd.DataFrame, title: str = "Measures vs human labels") -> str:
    """:func:`measure_table`'s frame as a text table (column | n | AUC | CI | ρ | CI | PRR | CI |
    p), rendered with rich into a string 140 columns wide, without colour or a TTY."""
    confidence = float(frame.attrs.get("confidence", 0.95))
    vs = ", ".join(sorted(set(frame["spearman_vs"]))) or VS_CORRECTNESS
    ways = set(frame[DIRECTION]) if DIRECTION in frame else set()
    caption = (
        f"ρ vs the humans' {vs}; PRR: prediction rejection ratio (1 = ranks like the humans, 0 = random), "
        f"p: its two-sided permutation p-value against 0 ({frame.attrs.get('permutations', 10_000):,} "
        "permutations)"
    )
    if NEGATED in ways:
        caption += (
            "; code.*: scored as −value, each metric's declared direction (higher = harder to "
            "understand), so AUC > 0.5 and ρ, PRR > 0 mean it ranks as the literature expects"
        )
    if RAW in ways:
        caption += "; rows without a declared direction are scored on their raw value"
    if any(str(c) == f"{names.MEASURE_PREFIX}ecc" for c in frame.index):
        caption += f"; {ECC_NOTE}"
    caption += "; a constant column is undefined"
    same = frame[SAME_AS].fillna("").astype(str) if SAME_AS in frame else pd.Series("", index=frame.index)
    folded = [f"{column} ≡ {same[column]}" for column in frame.index if same[column]]
    frame = frame[same == ""]
    if folded:
        caption += (
            f"; not shown and outside the family, ranking the programs exactly as the row named: {', '.join(folded)}"
        )
    caption += f"; {family_caption(len(frame), 3, confidence, noun='row')}, PRR's p unadjusted too"
    if "resamples" in frame.attrs:
        caption += (
            f"; CIs: {frame.attrs['resamples']} stratified bootstrap resamples, seed {frame.attrs.get('seed', 0)}"
        )
    table = Table(title=title, caption=caption)
    ci = f"{100.0 * confidence:g} % CI"
    for head, justify in (
        ("column", "left"),
        ("n", "right"),
        (header(AUC), "right"),
        (ci, "right"),
        ("Spearman ρ", "right"),
        (ci, "right"),
        ("PRR", "right"),
        (ci, "right"),
        ("p (PRR)", "right"),
    ):
        table.add_column(head, justify=justify)  # type: ignore[arg-type]
    for column, row in frame.iterrows():
        prr = float(row[PRR])
        table.add_row(
            str(column),
            str(int(row["n"])),
            format_value(AUC, float(row[AUC])),
            format_interval(AUC, (float(row[AUC + CI_LOW]), float(row[AUC + CI_HIGH]))),
            format_value(SPEARMAN, float(row[SPEARMAN])),
            format_interval(SPEARMAN, (float(row[SPEARMAN + CI_LOW]), float(row[SPEARMAN + CI_HIGH]))),
            "undefined" if math.isnan(prr) else f"{prr:.3f}",
            format_interval(SPEARMAN, (float(row[PRR + CI_LOW]), float(row[PRR + CI_HIGH]))),
            _p_value(float(row[PRR_P])),
        )
    buffer = io.StringIO()
    Console(
        file=buffer, width=140, color_system=None, force_terminal=False, force_jupyter=False, soft_wrap=False
    ).print(table)
    return buffer.getvalue()
