"""Decision rules: one registry for every calibrated proxy (``decision.rule``), checked
against what the proxy computes before anything is generated."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

from mcu_exp.calibration import RULES, Scores, apply_rule, check_rule, decide
from mcu_exp.config import DecisionConfig
from mcu_exp.pipeline import build_proxies, typed_config
from support.proxies import compose_cfg, context, make_proxy, synthetic_dataset

# Small arrays chosen by hand. τ at ε = 0.2 over ALPHA_CAL: empirical = the ⌈5 × 0.8⌉ = 4th
# smallest = 0.4 (linear would interpolate 0.42); conformal = the ⌈6 × 0.8⌉ = 5th smallest = 0.5.
ALPHA_CAL = np.array([0.1, 0.2, 0.3, 0.4, 0.5])
ALPHA_TEST = np.array([0.05, 0.38, 0.45, 0.9])
SIMILARITY = np.array([0.2, 0.45, 0.6, 0.44])


BUILTIN_RULES = ["conformal", "theta", "p1_and_theta"]


def known_rules() -> str:
    """The rules an unknown-rule message lists: the built-ins, then any an installed plugin
    package added (its entries load with the first job or subcommand this process ran)."""
    assert [name for name in RULES.names() if RULES.origin(name) is None] == BUILTIN_RULES
    return ", ".join(RULES.names())


def builtins_listed(problem: str, before: str) -> list[str]:
    """The built-in rules among those ``problem`` lists after ``before`` (each one registered)."""
    listed = problem.rsplit(before, 1)[1].split(", ")
    assert set(listed) <= set(RULES.names()), problem
    return [name for name in listed if RULES.origin(name) is None]


def rule_cfg(rule: str, epsilon: float = 0.2, quantile: str = "empirical", theta: float = 0.45) -> DecisionConfig:
    return DecisionConfig(epsilon=epsilon, quantile=quantile, rule=rule, theta=theta)


def test_conformal_by_hand() -> None:
    d = apply_rule("conformal", Scores(alpha_cal=ALPHA_CAL, alpha_test=ALPHA_TEST), rule_cfg("conformal"))
    assert d.rule == "conformal" and d.labels.tolist() == [1, 1, 0, 0]
    assert d.params["tau"] == 0.4 and d.params["quantile"] == "empirical"
    assert d.metrics["coverage"] == 0.5 and d.metrics["nominal_coverage"] == pytest.approx(0.8)
    assert d.metrics["calibration_fraction"] == 0.8
    linear = apply_rule(
        "conformal", Scores(alpha_cal=ALPHA_CAL, alpha_test=ALPHA_TEST), rule_cfg("conformal", quantile="linear")
    )
    assert linear.params["tau"] == pytest.approx(0.42)
    conformal = apply_rule(
        "conformal", Scores(alpha_cal=ALPHA_CAL, alpha_test=ALPHA_TEST), rule_cfg("conformal", quantile="conformal")
    )
    assert conformal.labels.tolist() == [1, 1, 1, 0] and conformal.params["tau"] == 0.5
    # ε = 0.1: rank ⌈6 × 0.9⌉ = 6 > 5 calibration scores, so τ = +∞ and every program is High.
    everything = apply_rule(
        "conformal",
        Scores(alpha_cal=ALPHA_CAL, alpha_test=ALPHA_TEST),
        rule_cfg("conformal", epsilon=0.1, quantile="conformal"),
    )
    assert everything.labels.tolist() == [1, 1, 1, 1] and math.isinf(everything.params["tau"])


def test_theta_by_hand() -> None:
    d = apply_rule("theta", Scores(similarity_test=SIMILARITY), rule_cfg("theta"))
    assert d.labels.tolist() == [0, 1, 1, 0]  # θ itself is High (≥)
    assert d.params == {"theta": 0.45} and "tau" not in d.metrics
    assert d.prefixed == {"theta": 0.45, "above_theta_share": 0.5}
    assert apply_rule("theta", Scores(similarity_test=SIMILARITY), rule_cfg("theta", theta=0.0)).labels.tolist() == [
        1,
        1,
        1,
        1,
    ]


def test_p1_and_theta_by_hand() -> None:
    scores = Scores(similarity_test=SIMILARITY, p1_alpha_cal=ALPHA_CAL, p1_alpha_test=ALPHA_TEST)
    d = apply_rule("p1_and_theta", scores, rule_cfg("p1_and_theta"))
    assert d.labels.tolist() == [0, 1, 0, 0]  # P1 [1, 1, 0, 0] AND θ [0, 1, 1, 0]
    assert d.params["theta"] == 0.45 and d.params["tau_p1"] == 0.4
    assert d.metrics["p1.high_share"] == 0.5 and d.metrics["p1.tau"] == 0.4
    assert d.prefixed["above_theta_share"] == 0.5


# The old decide_p2 properties, on random arrays: META_* are similarities, α = 1 − similarity.
RNG = np.random.default_rng(7)
N = 40
P1_CAL, P1_TEST = RNG.uniform(0.1, 0.5, N), RNG.uniform(0.1, 0.5, N)
META_CAL, META_TEST = RNG.uniform(0.2, 0.9, N), RNG.uniform(0.2, 0.9, N)
P2_SCORES = Scores(
    alpha_cal=1 - META_CAL,
    alpha_test=1 - META_TEST,
    similarity_test=META_TEST,
    p1_alpha_cal=P1_CAL,
    p1_alpha_test=P1_TEST,
)


def test_p1_and_theta_at_theta_zero_is_p1() -> None:
    p1 = decide(P1_CAL, P1_TEST, 0.1, "empirical")
    combined = apply_rule("p1_and_theta", P2_SCORES, rule_cfg("p1_and_theta", 0.1, "empirical", 0.0))
    assert np.array_equal(combined.labels, p1.labels)
    assert 0 < combined.labels.sum() < N
    assert combined.rule == "p1_and_theta" and combined.params["tau_p1"] == p1.tau


def test_p1_and_theta_is_the_conjunction() -> None:
    theta = 0.55
    p1 = decide(P1_CAL, P1_TEST, 0.2, "conformal")
    combined = apply_rule("p1_and_theta", P2_SCORES, rule_cfg("p1_and_theta", 0.2, "conformal", theta))
    assert np.array_equal(combined.labels, (p1.labels == 1) & (theta <= META_TEST))
    without_p1 = Scores(alpha_cal=1 - META_CAL, alpha_test=1 - META_TEST, similarity_test=META_TEST)
    with pytest.raises(ValueError, match="p1_alpha_cal, p1_alpha_test"):
        check_rule("p1_and_theta", "p2", without_p1.offered())


def test_theta_rule_thresholds_the_test_similarity() -> None:
    d = apply_rule("theta", P2_SCORES, rule_cfg("theta", 0.1, "empirical", 0.45))
    assert np.array_equal(d.labels, (META_TEST >= 0.45).astype(int))
    assert d.params == {"theta": 0.45} and "tau" not in d.metrics
    assert np.array_equal(apply_rule("theta", P2_SCORES, rule_cfg("theta", theta=0.0)).labels, np.ones(N))


def test_conformal_rule_is_p1s_rule_on_alpha_meta() -> None:
    d = apply_rule("conformal", P2_SCORES, rule_cfg("conformal", 0.1, "empirical"))
    ref = decide(1 - META_CAL, 1 - META_TEST, 0.1, "empirical")
    assert np.array_equal(d.labels, ref.labels)
    assert d.params["tau"] == ref.tau and d.metrics["coverage"] == ref.coverage


def test_unknown_rule_is_rejected() -> None:
    with pytest.raises(
        ValueError,
        match=rf"^unknown decision rule 'majority' \(decision.rule\) \(known: {re.escape(known_rules())}\)$",
    ):
        apply_rule("majority", P2_SCORES, rule_cfg("majority"))
    with pytest.raises(ValueError, match=r"did you mean 'theta'\?"):
        apply_rule("tehta", P2_SCORES, rule_cfg("tehta"))


def test_registry_names_what_each_rule_needs() -> None:
    builtins = {name: (r.needs, r.uses_theta) for name, r in RULES.items() if RULES.origin(name) is None}
    assert builtins == {
        "conformal": (("alpha_cal", "alpha_test"), False),
        "theta": (("similarity_test",), True),
        "p1_and_theta": (("similarity_test", "p1_alpha_cal", "p1_alpha_test"), True),
    }
    assert P2_SCORES.offered() == ("alpha_cal", "alpha_test", "similarity_test", "p1_alpha_cal", "p1_alpha_test")


# What each proxy offers its rule, checked before anything is generated.


@pytest.mark.parametrize("rule", ["theta", "p1_and_theta"])
def test_p1_rejects_a_rule_it_cannot_feed(tmp_path: Path, rule: str) -> None:
    cfg = compose_cfg("proxy=p1", f"decision.rule={rule}")
    with pytest.raises(ValueError) as info:  # the builder checks the rule of every calibrated proxy
        make_proxy(cfg, synthetic_dataset(3, 0), tmp_path)
    problem = str(info.value)
    assert "\n" not in problem
    assert f"decision.rule={rule!r}" in problem and "similarity_test" in problem
    assert builtins_listed(problem, "rules for p1: ") == ["conformal"]  # and any plugin rule p1 feeds
    typed = typed_config(cfg)
    with pytest.raises(ValueError) as info:  # the job stops before any stage
        build_proxies(typed, context(cfg, synthetic_dataset(3, 0), tmp_path))
    assert builtins_listed(str(info.value), "rules for p1: ") == ["conformal"]


@pytest.mark.parametrize("rule", ["conformal", "theta", "p1_and_theta"])
def test_p2_accepts_every_builtin_rule(tmp_path: Path, rule: str) -> None:
    cfg = compose_cfg("proxy=p2", f"decision={rule}")
    assert list(make_proxy(cfg, synthetic_dataset(3, 0), tmp_path).problems()) == []


def test_rules_do_not_apply_to_uncalibrated_proxies(tmp_path: Path) -> None:
    cfg = compose_cfg("proxy=p3", "decision=theta")  # P3 votes; decision.rule does not concern it
    assert list(make_proxy(cfg, synthetic_dataset(3, 0), tmp_path).problems()) == []


def test_an_unknown_rule_stops_the_proxy_builder(tmp_path: Path) -> None:
    cfg = compose_cfg("proxy=p1", "decision.rule=majority")
    with pytest.raises(ValueError) as info:
        make_proxy(cfg, synthetic_dataset(3, 0), tmp_path)
    assert str(info.value) == f"unknown decision rule 'majority' (decision.rule) (known: {known_rules()})"
