"""Decision rules: a calibrated proxy's scores in, High/Low labels out, one registry for all.

A rule names the score arrays it needs (keys of :class:`Scores`, a mapping of named
per-program arrays); a proxy offers the arrays it computes (``Proxy.offers``), so
``decision.rule`` is checked against every calibrated proxy when it is built, before anything
is generated. Built-in rules:

- ``conformal``: τ = the (1 − ε) quantile of ``alpha_cal`` (``decision.quantile``); High iff
  ``alpha_test ≤ τ``.
- ``theta``: High iff ``similarity_test ≥ θ`` (the paper's fixed threshold on SSC_meta).
- ``p1_and_theta``: P1's conformal rule on P1's own α (``p1_alpha_cal/test``, pairwise SSC)
  AND ``similarity_test ≥ θ``; at θ = 0 this is exactly P1.

Adding a rule = one function decorated with :func:`register_rule` (in this package or a
plugin's; the rules are entries of :data:`RULES`, one :class:`~mcu_exp.registry.Registry`).
It reads only the arrays it declares in ``needs``. ``params={"name": default}`` declares
settings the rule takes from YAML as ``decision.params.<name>``; the rule sees them, defaults
filled in and unknown names refused, as ``cfg.params``. ``decision=<rule>`` selects any
registered rule (a rule without its own ``conf/decision/<rule>.yaml`` gets a generated entry,
:mod:`mcu_exp.plugins`). A rule that calibrates on the data also registers a ``relabel``
function: the labels it would give each bootstrap resample of programs after recalibrating on
that resample, so confidence intervals can include the threshold's own uncertainty
(:mod:`mcu_exp.evaluation.bootstrap`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np

from mcu_exp.calibration.threshold import decide, thresholds
from mcu_exp.config import DecisionConfig
from mcu_exp.plugin_guard import guard_fields
from mcu_exp.registry import Registry
from mcu_exp.settings import with_defaults


class Scores(Mapping[str, np.ndarray]):
    """The per-program score arrays (program order) a calibrated proxy offers its decision
    rule, by name: ``Scores(alpha_cal=a, alpha_test=b)`` or ``Scores({"alpha_cal": a, ...})``.
    A name given None is left out (not offered). The names the built-in rules read:
    ``alpha_cal``/``alpha_test`` (nonconformity on the calibration/test subset),
    ``similarity_test`` (similarity to a reference, higher = closer) and P2's
    ``p1_alpha_cal``/``p1_alpha_test`` (P1's own α, for the rule combined with P1); a proxy
    and a rule of a plugin agree on names of their own.

    An absent name also reads as None through an attribute (``scores.alpha_cal``), as
    callers written for the earlier fixed fields expect."""

    def __init__(self, arrays: Mapping[str, np.ndarray | None] | None = None, /, **named: np.ndarray | None) -> None:
        merged = {**dict(arrays or {}), **named}
        self._arrays: dict[str, np.ndarray] = {k: v for k, v in merged.items() if v is not None}

    def __getitem__(self, name: str) -> np.ndarray:
        try:
            return self._arrays[name]
        except KeyError:
            raise KeyError(f"no score array {name!r} (offered: {', '.join(self._arrays) or 'none'})") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._arrays)

    def __len__(self) -> int:
        return len(self._arrays)

    def __getattr__(self, name: str) -> np.ndarray | None:
        if name.startswith("_"):
            raise AttributeError(name)
        return self._arrays.get(name)

    def __repr__(self) -> str:
        return f"Scores({', '.join(f'{k}=<{len(v)}>' for k, v in self._arrays.items())})"

    def offered(self) -> tuple[str, ...]:
        """The names of the arrays present, in the order given."""
        return tuple(self._arrays)

    def only(self, names: tuple[str, ...], rule: str = "") -> Scores:
        """The arrays ``names`` alone (what a rule declared it needs); a missing one is a
        one-line ValueError naming the rule."""
        missing = [n for n in names if n not in self._arrays]
        if missing:
            who = f"rule {rule!r}" if rule else "a rule"
            raise ValueError(f"{who} needs {', '.join(missing)}; the proxy's scores offer {', '.join(self._arrays)}")
        return Scores({n: self._arrays[n] for n in names})


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
ParamValue = float | int | str | bool


@dataclass(frozen=True)
class DecisionRule:
    """A registered rule: its name, the score arrays it needs, whether θ matters to it, the
    parameters it takes (``decision.params.<name>``, with defaults) and, for rules calibrated
    on the data, ``relabel(scores, cfg, indices)``: the (rows, m) labels of programs
    ``indices`` (a (rows, m) matrix of positions into the score arrays, e.g. bootstrap
    resamples) after recalibrating on each row's programs."""

    name: str
    needs: tuple[str, ...]
    uses_theta: bool
    apply: RuleFn  # parameters filled in (see register_rule)
    relabel: RelabelFn | None = None
    params: Mapping[str, ParamValue] = field(default_factory=dict)

    @property
    def calibrates(self) -> bool:
        """Whether the rule's labels depend on a threshold calibrated on the programs."""
        return self.relabel is not None

    def settings(self, cfg: DecisionConfig) -> DecisionConfig:
        """``cfg`` with ``params`` = the rule's defaults, ``decision.params`` over them; an
        unknown parameter is a one-line ValueError naming the rule's parameters."""
        given = dict(getattr(cfg, "params", None) or {})
        params = with_defaults(self.params, given, "decision.params", f"rule {self.name!r}")
        if not self.params and not given:
            return cfg
        return dataclasses.replace(cfg, params=params)


RULES: Registry[DecisionRule] = Registry(
    "decision rule", key="decision.rule", guard=lambda r, wrap: guard_fields(r, wrap, "apply", "relabel")
)


def register_rule(
    name: str,
    needs: tuple[str, ...],
    uses_theta: bool = False,
    relabel: RelabelFn | None = None,
    params: Mapping[str, ParamValue] | None = None,
) -> Callable[[RuleFn], RuleFn]:
    """Register ``fn(scores, decision_cfg) -> RuleDecision`` as ``decision.rule=<name>``
    (``relabel``, ``params``: see :class:`DecisionRule`). The registered ``apply`` and
    ``relabel`` hand ``fn`` and ``relabel`` only the arrays named in ``needs`` and the config
    with the rule's parameters filled in."""
    declared = dict(params or {})

    def add(fn: RuleFn) -> RuleFn:
        rule: DecisionRule

        def apply(scores: Scores, cfg: DecisionConfig) -> RuleDecision:
            return fn(scores.only(rule.needs, name), rule.settings(cfg))

        def recalibrate(scores: Scores, cfg: DecisionConfig, indices: np.ndarray) -> np.ndarray:
            assert relabel is not None
            return relabel(scores.only(rule.needs, name), rule.settings(cfg), indices)

        rule = DecisionRule(name, tuple(needs), uses_theta, apply, recalibrate if relabel else None, declared)
        RULES.add(name, rule)
        return fn

    return add


def get_rule(name: str) -> DecisionRule:
    """The rule ``decision.rule`` names, or the registry's one-line error (a ValueError) with
    the closest known name."""
    return RULES[name]


def rules_for(offered: tuple[str, ...]) -> list[str]:
    """The rules whose needs a proxy offering ``offered`` arrays meets."""
    return [r.name for _, r in RULES.items() if set(r.needs) <= set(offered)]


def check_rule(name: str, proxy: str, offered: tuple[str, ...], cfg: DecisionConfig | None = None) -> DecisionRule:
    """The rule, after checking that proxy ``proxy`` (offering ``offered``) can feed it and,
    given ``cfg``, that ``decision.params`` holds only parameters the rule takes."""
    rule = get_rule(name)
    missing = [n for n in rule.needs if n not in offered]
    if missing:
        raise ValueError(
            f"decision.rule={name!r} needs {', '.join(missing)}, which proxy {proxy} does not "
            f"compute; rules for {proxy}: {', '.join(rules_for(offered))}"
        )
    if cfg is not None:
        rule.settings(cfg)
    return rule


def apply_rule(name: str, scores: Scores, cfg: DecisionConfig) -> RuleDecision:
    """Labels of ``scores`` under rule ``name``."""
    return get_rule(name).apply(scores, cfg)


def _above_theta(scores: Scores, cfg: DecisionConfig) -> tuple[np.ndarray, dict[str, float]]:
    above = (np.asarray(scores["similarity_test"], float) >= cfg.theta).astype(int)
    share = float(above.mean()) if above.size else float("nan")
    return above, {"theta": float(cfg.theta), "above_theta_share": share}


def _recalibrated(
    alpha_cal: np.ndarray | None, alpha_test: np.ndarray | None, cfg: DecisionConfig, indices: np.ndarray
) -> np.ndarray:
    """High iff α_test ≤ τ for each row of ``indices``, τ recalibrated on that row's α_cal."""
    cal = np.asarray(alpha_cal, dtype=float)[indices]
    test = np.asarray(alpha_test, dtype=float)[indices]
    taus = thresholds(cal, float(cfg.epsilon), str(cfg.quantile))
    out: np.ndarray = (test <= taus[:, None]).astype(int)
    return out


def _relabel_conformal(scores: Scores, cfg: DecisionConfig, indices: np.ndarray) -> np.ndarray:
    return _recalibrated(scores["alpha_cal"], scores["alpha_test"], cfg, indices)


def _relabel_p1_and_theta(scores: Scores, cfg: DecisionConfig, indices: np.ndarray) -> np.ndarray:
    above = np.asarray(scores["similarity_test"], float)[indices] >= cfg.theta
    p1 = _recalibrated(scores["p1_alpha_cal"], scores["p1_alpha_test"], cfg, indices)
    out: np.ndarray = (p1.astype(bool) & above).astype(int)
    return out


@register_rule("conformal", needs=("alpha_cal", "alpha_test"), relabel=_relabel_conformal)
def conformal(scores: Scores, cfg: DecisionConfig) -> RuleDecision:
    """High iff α_test ≤ τ, τ calibrated on α_cal."""
    d = decide(scores["alpha_cal"], scores["alpha_test"], float(cfg.epsilon), str(cfg.quantile))
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
    p1 = decide(scores["p1_alpha_cal"], scores["p1_alpha_test"], float(cfg.epsilon), str(cfg.quantile))
    labels = (p1.labels.astype(bool) & above.astype(bool)).astype(int)
    return RuleDecision(
        "p1_and_theta",
        labels,
        params={"theta": float(cfg.theta), "tau_p1": p1.tau},
        metrics={**p1.metrics(prefix="p1."), "p1.high_share": float(p1.labels.mean())},
        prefixed=prefixed,
    )
