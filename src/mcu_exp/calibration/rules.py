"""Decision rules: a calibrated proxy's scores in, High/Low labels out, one registry for all.

A rule names the score arrays it needs (:class:`Scores` fields); a proxy offers the arrays
it computes, so ``decision.rule`` is checked against the proxy before anything is generated.
Built-in rules:

- ``conformal``: τ = the (1 − ε) quantile of ``alpha_cal`` (``decision.quantile``); High iff
  ``alpha_test ≤ τ``.
- ``theta``: High iff ``similarity_test ≥ θ`` (the paper's fixed threshold on SSC_meta).
- ``p1_and_theta``: P1's conformal rule on P1's own α (``p1_alpha_cal/test``, pairwise SSC)
  AND ``similarity_test ≥ θ``; at θ = 0 this is exactly P1.

Adding a rule = one function decorated with :func:`register_rule`. A rule that calibrates
on the data also registers a ``relabel`` function: the labels it would give each bootstrap
resample of programs after recalibrating on that resample, so confidence intervals can
include the threshold's own uncertainty (:mod:`mcu_exp.evaluation.bootstrap`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields

import numpy as np

from mcu_exp.calibration.threshold import decide, thresholds
from mcu_exp.config import DecisionConfig


@dataclass(frozen=True)
class Scores:
    """Per-program score arrays a calibrated proxy offers its decision rule (program order)."""

    alpha_cal: np.ndarray | None = None  # nonconformity on the calibration subset
    alpha_test: np.ndarray | None = None  # nonconformity on the test subset
    similarity_test: np.ndarray | None = None  # similarity to a reference (θ rules), higher = closer
    p1_alpha_cal: np.ndarray | None = None  # P1's own α, for rules combined with P1
    p1_alpha_test: np.ndarray | None = None

    def offered(self) -> tuple[str, ...]:
        """The names of the arrays present."""
        return tuple(f.name for f in fields(self) if getattr(self, f.name) is not None)


@dataclass
class RuleDecision:
    """Labels under one rule and what it reports.

    ``params`` and ``metrics`` use bare names; ``prefixed`` ones are namespaced by the proxy
    (e.g. ``p2.theta``) since they describe that proxy's scores.
    """

    rule: str
    labels: np.ndarray
    params: dict[str, float | str] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    prefixed: dict[str, float] = field(default_factory=dict)


RuleFn = Callable[[Scores, DecisionConfig], RuleDecision]
RelabelFn = Callable[[Scores, DecisionConfig, np.ndarray], np.ndarray]


@dataclass(frozen=True)
class DecisionRule:
    """A registered rule: its name, the score arrays it needs, whether θ matters to it and,
    for rules calibrated on the data, ``relabel(scores, cfg, indices)``: the (rows, m) labels
    of programs ``indices`` (a (rows, m) matrix of positions into the score arrays, e.g.
    bootstrap resamples) after recalibrating on each row's programs."""

    name: str
    needs: tuple[str, ...]
    uses_theta: bool
    apply: RuleFn
    relabel: RelabelFn | None = None

    @property
    def calibrates(self) -> bool:
        """Whether the rule's labels depend on a threshold calibrated on the programs."""
        return self.relabel is not None


RULES: dict[str, DecisionRule] = {}


def register_rule(
    name: str, needs: tuple[str, ...], uses_theta: bool = False, relabel: RelabelFn | None = None
) -> Callable[[RuleFn], RuleFn]:
    """Register ``fn(scores, decision_cfg) -> RuleDecision`` as ``decision.rule=<name>``
    (``relabel``: see :class:`DecisionRule`)."""

    def add(fn: RuleFn) -> RuleFn:
        RULES[name] = DecisionRule(name, tuple(needs), uses_theta, fn, relabel)
        return fn

    return add


def get_rule(name: str) -> DecisionRule:
    """The rule ``decision.rule`` names, or a one-line error listing the known ones."""
    try:
        return RULES[name]
    except KeyError:
        raise ValueError(f"decision.rule={name!r}: expected one of {', '.join(RULES)}") from None


def rules_for(offered: tuple[str, ...]) -> list[str]:
    """The rules whose needs a proxy offering ``offered`` arrays meets."""
    return [r.name for r in RULES.values() if set(r.needs) <= set(offered)]


def check_rule(name: str, proxy: str, offered: tuple[str, ...]) -> DecisionRule:
    """The rule, after checking that proxy ``proxy`` (offering ``offered``) can feed it."""
    rule = get_rule(name)
    missing = [n for n in rule.needs if n not in offered]
    if missing:
        raise ValueError(
            f"decision.rule={name!r} needs {', '.join(missing)}, which proxy {proxy} does not "
            f"compute; rules for {proxy}: {', '.join(rules_for(offered))}"
        )
    return rule


def apply_rule(name: str, scores: Scores, cfg: DecisionConfig) -> RuleDecision:
    """Labels of ``scores`` under rule ``name``."""
    return get_rule(name).apply(scores, cfg)


def _above_theta(scores: Scores, cfg: DecisionConfig) -> tuple[np.ndarray, dict[str, float]]:
    above = (np.asarray(scores.similarity_test, float) >= cfg.theta).astype(int)
    share = float(above.mean()) if above.size else float("nan")
    return above, {"theta": float(cfg.theta), "above_theta_share": share}


def _recalibrated(
    alpha_cal: np.ndarray | None, alpha_test: np.ndarray | None, cfg: DecisionConfig, indices: np.ndarray
) -> np.ndarray:
    """High iff α_test ≤ τ for each row of ``indices``, τ recalibrated on that row's α_cal."""
    cal = np.asarray(alpha_cal, dtype=float)[indices]
    test = np.asarray(alpha_test, dtype=float)[indices]
    taus = thresholds(cal, float(cfg.epsilon), str(cfg.quantile))
    return (test <= taus[:, None]).astype(int)


def _relabel_conformal(scores: Scores, cfg: DecisionConfig, indices: np.ndarray) -> np.ndarray:
    return _recalibrated(scores.alpha_cal, scores.alpha_test, cfg, indices)


def _relabel_p1_and_theta(scores: Scores, cfg: DecisionConfig, indices: np.ndarray) -> np.ndarray:
    above = np.asarray(scores.similarity_test, float)[indices] >= cfg.theta
    return (_recalibrated(scores.p1_alpha_cal, scores.p1_alpha_test, cfg, indices).astype(bool) & above).astype(int)


@register_rule("conformal", needs=("alpha_cal", "alpha_test"), relabel=_relabel_conformal)
def conformal(scores: Scores, cfg: DecisionConfig) -> RuleDecision:
    """High iff α_test ≤ τ, τ calibrated on α_cal."""
    d = decide(scores.alpha_cal, scores.alpha_test, float(cfg.epsilon), str(cfg.quantile))
    return RuleDecision("conformal", d.labels, params={"tau": d.tau, "quantile": d.quantile}, metrics=d.metrics())


@register_rule("theta", needs=("similarity_test",), uses_theta=True)
def theta(scores: Scores, cfg: DecisionConfig) -> RuleDecision:
    """High iff similarity_test ≥ θ."""
    above, prefixed = _above_theta(scores, cfg)
    return RuleDecision("theta", above, params={"theta": float(cfg.theta)}, prefixed=prefixed)


@register_rule(
    "p1_and_theta",
    needs=("similarity_test", "p1_alpha_cal", "p1_alpha_test"),
    uses_theta=True,
    relabel=_relabel_p1_and_theta,
)
def p1_and_theta(scores: Scores, cfg: DecisionConfig) -> RuleDecision:
    """P1's conformal labels AND similarity_test ≥ θ."""
    above, prefixed = _above_theta(scores, cfg)
    p1 = decide(scores.p1_alpha_cal, scores.p1_alpha_test, float(cfg.epsilon), str(cfg.quantile))
    labels = (p1.labels.astype(bool) & above.astype(bool)).astype(int)
    return RuleDecision(
        "p1_and_theta",
        labels,
        params={"theta": float(cfg.theta), "tau_p1": p1.tau},
        metrics={**p1.metrics(prefix="p1."), "p1.high_share": float(p1.labels.mean())},
        prefixed=prefixed,
    )
