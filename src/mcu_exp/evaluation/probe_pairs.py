"""The paired analysis: does a proxy's score move, between the twins of each pair, the way
human comprehension moves?

Each pair has a control (the original program, the atoms study's clean twin) and a treatment
(the edited program, the confusing twin); ``Δ = treatment − control``. The proxy's Δ is taken
on its per-program ``score`` (higher = the model understands more: ``−α_test`` for P1/P2, so a
nonconformity that rises is a score that falls). ``direction`` is the sign humans show:
−1 when the treatment is harder (every edit, the atoms' confusing twin).

- **Share in the humans' direction**: pairs with ``sign(Δproxy) = direction`` out of the pairs
  whose Δproxy is not 0 (the sign test: a tie moves neither way and is counted apart, ``tied``;
  counting ties as "not in the direction" made a proxy that scores most twins alike look
  significantly against the humans), with the exact (Clopper–Pearson) interval and two-sided p
  against 1/2 of :func:`scipy.stats.binomtest`.
- **Median Δ**: with :func:`scipy.stats.wilcoxon`'s signed-rank test (zeros dropped; exact for
  small untied samples) and a percentile bootstrap interval over pairs.
- **Where human per-pair effects exist** (Δhuman): Spearman's ρ of Δproxy against Δhuman
  (:func:`scipy.stats.spearmanr`) with a bootstrap interval over pairs (the same draws), and
  the sign-agreement table (proxy falls / rises × humans fall / rise; pairs with a zero Δ on
  either side counted apart).
- **Per kind** (the edit, the atom): pairs, share and median Δ of each.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from mcu_exp.evaluation.bootstrap import percentile_interval

DELTA_PROXY, DELTA_HUMAN, KIND, MOVED = "delta_proxy", "delta_human", "kind", "moved"
FALLS, RISES = "falls", "rises"
STATISTICS = (
    *("n", "tied", "moved", "share", "share_low", "share_high", "share_p"),
    *("median", "median_low", "median_high", "wilcoxon_p"),
    *("spearman", "spearman_low", "spearman_high", "spearman_p"),
)
"""The scalar statistics of :class:`PairedAnalysis`, as logged (:meth:`PairedAnalysis.metrics`)."""


@dataclass(frozen=True)
class PairedAnalysis:
    """The statistics of :func:`paired_analysis` (NaN where undefined) and the per-pair table
    (``delta_proxy``, ``moved``, with ``delta_human`` and ``kind`` when given)."""

    pairs: pd.DataFrame
    direction: int
    n: int
    tied: int
    moved: int
    share: float
    share_low: float
    share_high: float
    share_p: float
    median: float
    median_low: float
    median_high: float
    wilcoxon_p: float
    spearman: float = float("nan")
    spearman_low: float = float("nan")
    spearman_high: float = float("nan")
    spearman_p: float = float("nan")
    agreement: pd.DataFrame | None = None
    by_kind: pd.DataFrame = field(default_factory=pd.DataFrame)

    def metrics(self, prefix: str = "pairs.") -> dict[str, float]:
        """The scalar statistics as MLflow metrics ``<prefix><name>``."""
        return {prefix + k: float(getattr(self, k)) for k in STATISTICS}


def _share(moved: int, n: int, confidence: float) -> tuple[float, float, float, float]:
    from scipy.stats import binomtest

    if n == 0:
        return (float("nan"),) * 4
    test = binomtest(moved, n, 0.5)
    ci = test.proportion_ci(confidence_level=confidence, method="exact")
    return moved / n, float(ci.low), float(ci.high), float(test.pvalue)


def _wilcoxon_p(delta: np.ndarray) -> float:
    from scipy.stats import wilcoxon

    moved = delta[delta != 0]  # zeros dropped before SciPy picks its method: one zero made it approximate
    if moved.size == 0:
        return float("nan")
    return float(wilcoxon(moved).pvalue)


def _row_spearman(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman's ρ of each row of ``x`` against the same row of ``y`` (NaN for a constant row)."""
    from scipy.stats import rankdata

    rx, ry = rankdata(x, axis=1), rankdata(y, axis=1)
    rx, ry = rx - rx.mean(axis=1, keepdims=True), ry - ry.mean(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray((rx * ry).sum(axis=1) / np.sqrt((rx**2).sum(axis=1) * (ry**2).sum(axis=1)))


def sign_agreement(delta_proxy: np.ndarray, delta_human: np.ndarray) -> pd.DataFrame:
    """Counts of pairs: rows the proxy's Δ (``falls``, ``rises``), columns the humans' Δ
    (``falls``, ``rises``), and a ``tie`` row and column for a zero Δ."""

    def side(d: np.ndarray) -> np.ndarray:
        return np.where(d < 0, FALLS, np.where(d > 0, RISES, "tie"))

    table = pd.crosstab(pd.Series(side(delta_proxy), name="proxy"), pd.Series(side(delta_human), name="humans"))
    order = [FALLS, RISES, "tie"]
    table = table.reindex(index=order, columns=order, fill_value=0)
    keep_rows = [r for r in order if r != "tie" or table.loc[r].sum()]
    keep_cols = [c for c in order if c != "tie" or table[c].sum()]
    return table.loc[keep_rows, keep_cols]


def paired_analysis(
    delta_proxy: pd.Series,
    direction: int = -1,
    delta_human: pd.Series | None = None,
    kind: pd.Series | None = None,
    resamples: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> PairedAnalysis:
    """The paired statistics of the pairs in ``delta_proxy``'s index (pairs with a NaN Δproxy,
    or a NaN Δhuman when one is given, are left out)."""
    from scipy.stats import spearmanr

    if direction not in (-1, 1):
        raise ValueError(f"direction is {direction}, expected -1 (the treatment is harder) or 1")
    table = pd.DataFrame({DELTA_PROXY: delta_proxy.astype(float)})
    if delta_human is not None:
        table[DELTA_HUMAN] = delta_human.reindex(table.index).astype(float)
    if kind is not None:
        table[KIND] = kind.reindex(table.index).astype(str)
    table = table.dropna(subset=[c for c in (DELTA_PROXY, DELTA_HUMAN) if c in table])
    d = table[DELTA_PROXY].to_numpy()
    table[MOVED] = np.sign(d) == direction
    n, moved = len(d), int(table[MOVED].sum())
    tied = int(np.count_nonzero(d == 0))
    share = _share(moved, n - tied, confidence)
    draws = np.random.default_rng(seed).integers(0, n, size=(resamples, n)) if n else np.zeros((0, 0), int)
    median = float(np.median(d)) if n else float("nan")
    median_ci = percentile_interval(np.median(d[draws], axis=1), confidence) if n else (np.nan, np.nan)
    found = PairedAnalysis(table, direction, n, tied, moved, *share, median, *median_ci, _wilcoxon_p(d))
    extra: dict[str, object] = {"by_kind": _by_kind(table, direction, confidence)}
    if DELTA_HUMAN in table and n >= 3:
        h = table[DELTA_HUMAN].to_numpy()
        rho = spearmanr(d, h)
        extra.update(
            spearman=float(rho.statistic),
            spearman_p=float(rho.pvalue),
            agreement=sign_agreement(d, h),
        )
        extra["spearman_low"], extra["spearman_high"] = percentile_interval(
            _row_spearman(d[draws], h[draws]), confidence
        )
    elif DELTA_HUMAN in table:
        extra["agreement"] = sign_agreement(d, table[DELTA_HUMAN].to_numpy())
    return PairedAnalysis(**{**found.__dict__, **extra})


def _by_kind(table: pd.DataFrame, direction: int, confidence: float) -> pd.DataFrame:
    """Per kind: pairs, tied, moved, share of the untied with its exact interval, median Δproxy
    (and Δhuman)."""
    if KIND not in table:
        return pd.DataFrame()
    rows = []
    for name, part in table.groupby(KIND, sort=True):
        tied = int((part[DELTA_PROXY] == 0).sum())
        share, low, high, _ = _share(int(part[MOVED].sum()), len(part) - tied, confidence)
        row = {KIND: name, "n": len(part), "tied": tied, "moved": int(part[MOVED].sum()), "share": share}
        row.update(share_low=low, share_high=high, median_delta_proxy=float(part[DELTA_PROXY].median()))
        if DELTA_HUMAN in part:
            row["median_delta_human"] = float(part[DELTA_HUMAN].median())
        rows.append(row)
    return pd.DataFrame(rows).set_index(KIND)


def _pct(x: float) -> str:
    return "n/a" if np.isnan(x) else f"{100 * x:.0f} %"


def sentence(result: PairedAnalysis, proxy: str, change: str, units: str = "pairs") -> str:
    """The closing sentence, e.g. "p1's score falls after rename_identifiers in 41 of 50 programs
    (82 % [69 %, 91 %]), the direction humans show." (``change``: "after rename_identifiers",
    "on the confusing twin")."""
    verb = FALLS if result.direction < 0 else RISES
    if result.n == 0:
        return f"{proxy}: no pair to compare {change}."
    untied = result.n - result.tied
    if untied == 0:
        return f"{proxy}'s score does not move {change} in any of the {result.n} {units}: no sign to test."
    if result.share_low > 0.5:
        clause = "the direction humans show"
    elif result.share_high < 0.5:
        clause = "mostly against the direction humans show"
    else:
        clause = "no clear direction (50 % is chance)"
    ci = f"[{_pct(result.share_low)}, {_pct(result.share_high)}]"
    ties = f"; {result.tied} of {result.n} {units} tied, left out" if result.tied else ""
    return (
        f"{proxy}'s score {verb} {change} in {result.moved} of {untied} {units} "
        f"({_pct(result.share)} {ci}{ties}), {clause}."
    )


def render(result: PairedAnalysis, title: str, confidence: float = 0.95) -> str:
    """The analysis as console text: the headline figures, the sign agreement and the per-kind table."""
    level = f"{100 * confidence:g} %"
    lines = [
        title,
        f"  pairs: {result.n}"
        + (f", {result.tied} tied (Δ score 0: left out of the sign test)" if result.tied else "")
        + f"; in the humans' direction (Δ {'<' if result.direction < 0 else '>'} 0): "
        f"{result.moved} of {result.n - result.tied} = {_pct(result.share)} "
        f"[{_pct(result.share_low)}, {_pct(result.share_high)}] "
        f"(exact {level} CI; binomial p = {result.share_p:.3g} against 50 %)",
        f"  median Δ score: {result.median:+.4f} [{result.median_low:+.4f}, {result.median_high:+.4f}] "
        f"(bootstrap over pairs); Wilcoxon signed-rank p = {result.wilcoxon_p:.3g}",
    ]
    if not np.isnan(result.spearman):
        lines.append(
            f"  Spearman ρ(Δproxy, Δhuman) = {result.spearman:+.3f} [{result.spearman_low:+.3f}, "
            f"{result.spearman_high:+.3f}] (bootstrap over pairs), p = {result.spearman_p:.3g}"
        )
    if result.agreement is not None:
        lines.append("  sign agreement (rows: proxy's Δ, columns: humans' Δ):")
        lines.extend("    " + line for line in result.agreement.to_string().splitlines())
    if len(result.by_kind) > 1:
        shown = result.by_kind.copy()
        for column in ("share", "share_low", "share_high"):
            shown[column] = shown[column].map(_pct)
        lines.append("  per kind:")
        lines.extend("    " + line for line in shown.to_string(float_format=lambda v: f"{v:+.4f}").splitlines())
    return "\n".join(lines) + "\n"
