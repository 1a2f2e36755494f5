"""Which configuration aligns best with the humans, and does it beat the baseline: the headline
that every summary of several runs leads with (the report's headline block and ranked table,
``mcu-exp report``'s terminal table; the sweep summary can use the same functions).

Everything works on one run's metrics as a plain mapping (MLflow's ``run.data.metrics``, a
``metrics.json``, a row of the report's summary), so each summary ranks and words them alike:

* ΔF1 vs always-1 = F1 − the always-understandable baseline's F1 on the same labels with its
  paired interval (``f1_minus_always``, :mod:`mcu_exp.evaluation.versus_always`; derived from
  F1 and the baseline for runs that predate the key). F1 *beats* the baseline exactly when
  ΔF1's lower bound is above 0, the verdict's rule (:mod:`mcu_exp.evaluation.verdict`).
* AUC (score) with its interval (AUC of the labels for a proxy without a continuous score);
  it separates the classes when the lower bound is above 0.5.
* MCC (Matthews' correlation of the labels with the humans') with its interval, and the share
  of programs labelled High (``labelled_high``).
* Rank: MCC's lower bound, then the AUC's lower bound, both descending; undefined last. Not
  ΔF1: on labels where most programs are understandable, labelling (nearly) every program High
  copies the always-1 baseline and ties or edges it, so ranking by ΔF1 crowns a near-constant
  labeller; MCC is chance-corrected (0 for any labeller that ignores the programs, the constant
  one included), so it cannot. ΔF1 stays a column and "beats always-1" stays the verdict's test.
* A labeller within :data:`NEAR_CONSTANT` programs of labelling every program alike is flagged
  and ranks after every other (:func:`sort_key`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mcu_exp.evaluation.alignment_report import CI_HIGH, CI_LOW, near_constant
from mcu_exp.evaluation.alignment_report import (
    NEAR_CONSTANT as NEAR_CONSTANT,  # the flag's bound, printed by the summaries
)
from mcu_exp.evaluation.registry import CHANCE_AUC, PRIMARY, header, metric
from mcu_exp.evaluation.versus_always import ALWAYS_F1, KEY, f1_minus_always, rank_key
from mcu_exp.names import UNDEFINED

SCORE_AUC, LABEL_AUC = "auc_score", "auc_binary"
CEILING_KEY, UPPER_KEY = "ceiling.auc_score", "ceiling.upper_auc_score"  # the humans' bounds on AUC (score)
VS_LOWER, VS_UPPER = "vs_ceiling.lower", "vs_ceiling.upper"  # the proxy's AUC (score) minus each, paired
SHARE_KEY = "share.auc_score"  # an old run's share of the ceiling (logged before the bounds; read, never written)
YES, NO, UNKNOWN = "✓", "✗", "?"
MCC = "mcc"
HIGH = "labelled_high"  # share of programs the proxy labelled High
DELTA_F1 = KEY  # ΔF1 vs always-1's key in metrics.json and in summary CSVs (with _ci_low, _ci_high)


@dataclass(frozen=True)
class Interval:
    """A value and its confidence bounds; NaN where undefined or not logged."""

    value: float
    low: float
    high: float

    @property
    def defined(self) -> bool:
        """Whether the value and both bounds are finite."""
        return all(math.isfinite(v) for v in (self.value, self.low, self.high))


@dataclass(frozen=True)
class Headline:
    """One configuration's answer: F1 against its always-1 baseline, the AUC against chance,
    the humans' bounds on AUC (score) and the proxy's paired differences to them when the run
    logged them (``ceiling``: the lower bound; an old run's ceiling and ``share`` of it instead)."""

    f1: Interval
    always_f1: float
    delta_f1: Interval
    auc_name: str
    auc: Interval
    ceiling: Interval | None = None
    upper: Interval | None = None
    vs_lower: Interval | None = None
    vs_upper: Interval | None = None
    share: Interval | None = None
    mcc: Interval = Interval(math.nan, math.nan, math.nan)
    labelled_high: float = math.nan
    n: float = math.nan
    humans_f1: float = math.nan  # the humans' own half-panel F1 (the lower bound's), when logged

    @property
    def near_constant(self) -> bool:
        """Whether at most :data:`NEAR_CONSTANT` programs sit on one side of the labelling."""
        return near_constant(self.labelled_high * self.n, self.n)

    @property
    def unfair_bar(self) -> bool:
        """Whether the humans' own half-panel F1 lies below the always-1 baseline's: then
        "beats always-1" is a bar the humans themselves do not clear."""
        return math.isfinite(self.humans_f1) and math.isfinite(self.always_f1) and self.humans_f1 < self.always_f1

    @property
    def beats_always(self) -> bool | None:
        """F1's interval lies above the always-1 baseline; None when undefined."""
        return self.delta_f1.low > 0 if self.delta_f1.defined else None

    @property
    def beats_chance(self) -> bool | None:
        """The AUC's interval lies above 0.5; None when undefined."""
        return self.auc.low > CHANCE_AUC if self.auc.defined else None


def _number(metrics: Mapping[str, object], key: str) -> float:
    raw = metrics.get(key)
    try:
        return float(raw) if raw is not None else math.nan  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.nan


def interval(metrics: Mapping[str, object], name: str) -> Interval:
    """``name`` and its CI bounds from ``metrics`` (NaN where absent)."""
    return Interval(*(_number(metrics, k) for k in (name, f"{name}{CI_LOW}", f"{name}{CI_HIGH}")))


def headline(metrics: Mapping[str, object]) -> Headline:
    """The headline of one run's metrics (keys as the job logs them: ``f1``, ``f1_ci_low``,
    ``baseline_always_f1``, ``auc_score``…)."""
    f1 = interval(metrics, PRIMARY)
    always = _number(metrics, ALWAYS_F1)
    delta = interval(metrics, KEY) if math.isfinite(_number(metrics, KEY)) else interval(f1_minus_always(metrics), KEY)
    auc_name = SCORE_AUC if math.isfinite(_number(metrics, SCORE_AUC)) else LABEL_AUC
    found = {key: interval(metrics, key) for key in (CEILING_KEY, UPPER_KEY, VS_LOWER, VS_UPPER, SHARE_KEY)}
    kept = {key: item if math.isfinite(item.value) else None for key, item in found.items()}
    if kept[VS_LOWER] is not None or kept[VS_UPPER] is not None:
        kept[SHARE_KEY] = None  # a run with the differences has no share to show
    return Headline(
        f1=f1,
        always_f1=always,
        delta_f1=delta,
        auc_name=auc_name,
        auc=interval(metrics, auc_name),
        ceiling=kept[CEILING_KEY],
        upper=kept[UPPER_KEY],
        vs_lower=kept[VS_LOWER],
        vs_upper=kept[VS_UPPER],
        share=kept[SHARE_KEY],
        mcc=interval(metrics, MCC),
        labelled_high=_number(metrics, HIGH),
        n=_number(metrics, "n"),
        humans_f1=_number(metrics, "ceiling.f1"),
    )


def sort_key(item: Headline, by_mcc: bool = True) -> tuple[float, float, float]:
    """Ascending key for the best first: a nearly constant labeller (:attr:`Headline.near_constant`)
    after every other, then (:func:`mcu_exp.evaluation.versus_always.rank_key`) MCC's lower
    bound, then the AUC's, descending (undefined bounds last). ``by_mcc`` False: ΔF1's lower
    bound first, for runs logged before MCC (:func:`by_mcc`).

    Why the tier: a labelling with one or two programs on one side is constant in every bootstrap
    resample that leaves those programs out (about a third of them for one program), and a
    constant resample's MCC is 0 by convention, so its lower bound sits at 0 whatever the evidence:
    the README's sweep crowned ε=0.05 · rougel, 49 of 50 programs High, MCC 0.15 [0.00, 0.31]."""
    first = rank_key(item.mcc.low if by_mcc else item.delta_f1.low, item.auc.low)
    return (1.0 if item.near_constant else 0.0, *first)


def by_mcc(items: Sequence[Headline]) -> bool:
    """Whether to rank by MCC: some run logged it (runs logged before it rank by ΔF1, as then)."""
    return any(math.isfinite(item.mcc.value) for item in items)


def ranked(items: Sequence[Headline]) -> list[int]:
    """Positions of ``items``, best first (:func:`sort_key`; ties keep their order)."""
    mcc = by_mcc(items)
    return sorted(range(len(items)), key=lambda i: sort_key(items[i], mcc))


def points(number: float) -> str:
    """A difference of rates in percentage points: "+4.2", "−3.0"; ``undefined`` when NaN."""
    if not math.isfinite(number):
        return UNDEFINED
    return f"{100 * number:+.1f}".replace("-", "−")


def delta_text(item: Headline) -> str:
    """ "+4.2 pp [−3.0, +11.5]": ΔF1 vs always-1 in percentage points with its interval."""
    delta = item.delta_f1
    if not math.isfinite(delta.value):
        return UNDEFINED
    return f"{points(delta.value)} pp [{points(delta.low)}, {points(delta.high)}]"


def value_text(name: str, item: Interval) -> str:
    """ "0.612 [0.450, 0.766]": a metric with its interval in the metric's format."""

    def one(number: float) -> str:
        return metric(name).format(number) if math.isfinite(number) else UNDEFINED

    if not math.isfinite(item.value):
        return UNDEFINED
    return f"{one(item.value)} [{one(item.low)}, {one(item.high)}]"


def mark(state: bool | None) -> str:
    """✓, ✗, or ? when undefined."""
    return UNKNOWN if state is None else YES if state else NO


def verdict_marks(item: Headline) -> str:
    """ "✗ F1 · ✓ AUC": whether F1 beats always-1 and the AUC beats chance."""
    return f"{mark(item.beats_always)} F1 · {mark(item.beats_chance)} AUC"


def signed_text(name: str, item: Interval) -> str:
    """ "+0.012 [−0.150, +0.170]": a difference with its interval, signed, in metric ``name``'s format."""

    def one(number: float) -> str:
        if not math.isfinite(number):
            return UNDEFINED
        text = metric(name).format(number).replace("-", "−")
        return text if text.startswith("−") else f"+{text}"

    return f"{one(item.value)} [{one(item.low)}, {one(item.high)}]"


def ceiling_text(item: Headline) -> str:
    """The humans' bounds on AUC (score) with their intervals over programs and the proxy's
    paired differences to them ("humans' bounds on AUC (score): lower 0.650 [0.560, 0.750]
    (half panel), upper 0.820 [0.760, 0.880] (reader model); AUC (score) − lower −0.041 […],
    − upper −0.211 […]"); an old run's ceiling and share of it, labelled; "" without a ceiling."""
    if item.ceiling is None:
        return ""
    auc = header(SCORE_AUC)
    if item.share is not None:

        def pct(number: float) -> str:
            return f"{100 * number:.1f}%".replace("-", "−") if math.isfinite(number) else UNDEFINED

        share = item.share
        return (
            f"humans' {auc} ceiling {value_text(SCORE_AUC, item.ceiling)} (old run: interval over reader splits), "
            f"share of it {pct(share.value)} [{pct(share.low)}, {pct(share.high)}]"
        )
    text = f"humans' bounds on {auc}: lower {value_text(SCORE_AUC, item.ceiling)} (half panel)"
    if item.upper is not None:
        text += f", upper {value_text(SCORE_AUC, item.upper)} (reader model)"
    differences = [
        f"{side} {signed_text(SCORE_AUC, diff)}"
        for side, diff in (("lower", item.vs_lower), ("upper", item.vs_upper))
        if diff is not None
    ]
    if differences:
        text += f"; {auc} − " + ", − ".join(differences)
    return text


def answer(labels: Sequence[str], items: Sequence[Headline]) -> str:
    """The closing sentences: the best configuration by MCC (flagged when it labels nearly
    every program alike), which configurations beat the always-understandable baseline (the
    best by how much) or that none does and how close the best came, and whether that bar is
    fair (the humans' own half-panel F1 may lie below it)."""
    if not items:
        return "No configuration to rank."
    order = ranked(items)
    best = items[order[0]]
    text = _always_sentence(labels, items, order)
    if by_mcc(items):
        text = _best_sentence(labels[order[0]], best) + " " + text
    if best.unfair_bar:
        f1 = header(PRIMARY)
        text += (
            f" The humans' own half-panel {f1} ({metric(PRIMARY).format(best.humans_f1)}) lies below "
            f"always-1's ({metric(PRIMARY).format(best.always_f1)}): beating always-1 is a bar the humans "
            "themselves do not clear, so read MCC and AUC rather than ΔF1."
        )
    return text


def _best_sentence(label: str, item: Headline) -> str:
    if not item.mcc.defined:
        return f"Best by MCC: none defined; first listed {label}."
    flag = ""
    if item.near_constant:
        flag = f" (it labels {item.labelled_high:.0%} of the programs High: nearly constant)"
    return f"Best by MCC's lower bound: {label}, MCC {value_text(MCC, item.mcc)}{flag}."


def _always_sentence(labels: Sequence[str], items: Sequence[Headline], order: list[int]) -> str:
    f1 = header(PRIMARY)
    winners = [i for i in order if items[i].beats_always]
    if winners:
        top = items[winners[0]]
        others = len(winners) - 1
        more = f" ({others} other configuration{'' if others == 1 else 's'} also beat{'s' if others == 1 else ''} it)"
        return (
            f"{labels[winners[0]]} beats the always-understandable baseline by {delta_text(top)} {f1} "
            f"({value_text(PRIMARY, top.f1)} vs {metric(PRIMARY).format(top.always_f1)})"
            + (more if others else "")
            + "."
        )
    defined = [i for i in order if items[i].delta_f1.defined]
    if not defined:
        return f"No configuration beats the always-understandable baseline ({f1} undefined on every configuration)."
    closest = max(defined, key=lambda i: items[i].delta_f1.low)
    item = items[closest]
    return (
        f"No configuration beats the always-understandable baseline; the closest, {labels[closest]}, has "
        f"Δ{f1} {delta_text(item)} ({value_text(PRIMARY, item.f1)} vs {metric(PRIMARY).format(item.always_f1)})."
    )
