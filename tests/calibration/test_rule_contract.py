"""The decision contract belongs to every proxy: ``Proxy.offers`` names the score arrays it
hands its rule, the builder checks ``decision.rule`` against any calibrated proxy (not only
those built on ``SummaryProxy``), ``Scores`` is a mapping of named arrays, a rule takes
parameters from ``decision.params``, and ``decision=<rule>`` composes for any registered rule."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from mcu_exp.calibration import RULES, RuleDecision, Scores, apply_rule, register_rule
from mcu_exp.config import DecisionConfig
from mcu_exp.plugins import store_group_entries
from mcu_exp.proxies.base import Proxy, ProxyOutcome, build_proxy
from mcu_exp.proxies.stages import Stage, StageResults
from support.proxies import CONF, compose_cfg, context, synthetic_dataset


@dataclass
class PlainConfig:
    name: str = "plain"


class PlainCalibratedProxy(Proxy):
    """Calibrated, built on the bare ``Proxy`` base, offering one array of its own naming."""

    Config = PlainConfig
    calibrated = True
    offers = ("margin",)

    def stages(self, done: StageResults) -> Iterator[Stage]:
        return iter(())

    def outcome(self, done: StageResults) -> ProxyOutcome:
        raise AssertionError("not run in these tests")


TARGET = f"{__name__}.PlainCalibratedProxy"


@pytest.fixture
def margin_rule() -> Iterator[str]:
    """A rule registered by this test module: High iff margin ≥ ``cut`` (a parameter)."""

    @register_rule("margin_cut", needs=("margin",), params={"cut": 0.5})
    def margin_cut(scores: Scores, cfg: DecisionConfig) -> RuleDecision:
        cut = float(cfg.params["cut"])
        return RuleDecision("margin_cut", (scores["margin"] >= cut).astype(int), params={"cut": cut})

    yield "margin_cut"
    RULES.remove("margin_cut")
    from hydra.core.config_store import ConfigStore

    ConfigStore.instance().repo.get("decision", {}).pop("margin_cut.yaml", None)  # a generated entry, if stored


def build(tmp_path: Path, *overrides: str) -> Proxy:
    cfg = compose_cfg(*overrides)
    section = {"_target_": TARGET, "name": "plain"}
    return build_proxy(section, context(cfg, synthetic_dataset(3, 0), tmp_path), "proxy")


def test_a_proxy_on_the_bare_base_class_gets_its_rule_checked(tmp_path: Path) -> None:
    with pytest.raises(ValueError) as info:
        build(tmp_path, "decision=conformal")  # conformal needs alpha_cal, alpha_test: not offered
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("decision.rule='conformal' needs alpha_cal, alpha_test, which proxy plain does not")


def test_a_rule_a_proxy_can_feed_passes_the_builder(tmp_path: Path, margin_rule: str) -> None:
    proxy = build(tmp_path, f"decision.rule={margin_rule}")
    assert isinstance(proxy, PlainCalibratedProxy) and list(proxy.decision_problems()) == []


def test_rule_parameters_come_from_decision_params(tmp_path: Path, margin_rule: str) -> None:
    scores = Scores(margin=np.array([0.2, 0.6, 0.9]))
    assert apply_rule(margin_rule, scores, DecisionConfig(rule=margin_rule)).labels.tolist() == [0, 1, 1]
    given = DecisionConfig(rule=margin_rule, params={"cut": 0.7})
    decided = apply_rule(margin_rule, scores, given)
    assert decided.labels.tolist() == [0, 0, 1] and decided.params == {"cut": 0.7}
    assert given.params == {"cut": 0.7}  # the caller's config is not changed
    with pytest.raises(
        ValueError,
        match=r"^decision.params.cutt: rule 'margin_cut' takes no such parameter: did you mean 'cut'\? \(its parameters: cut\)$",
    ):
        build(tmp_path, f"decision.rule={margin_rule}", "+decision.params.cutt=0.3")


def test_decision_group_entry_for_any_registered_rule(margin_rule: str) -> None:
    stored = store_group_entries(CONF)
    assert f"decision/{margin_rule}" in stored
    assert "decision/conformal" not in stored  # its YAML file stays the entry
    cfg = compose_cfg(f"decision={margin_rule}", "decision.params.cut=0.25")
    assert cfg.decision.rule == margin_rule and cfg.decision.params.cut == 0.25
    assert cfg.decision.epsilon == 0.1  # the schema's defaults fill the rest


def test_scores_is_a_mapping_of_named_arrays() -> None:
    a, b = np.array([0.1, 0.2]), np.array([0.3, 0.4])
    scores = Scores({"alpha_cal": a}, alpha_test=b, similarity_test=None)
    assert dict(scores) == {"alpha_cal": a, "alpha_test": b} and scores.offered() == ("alpha_cal", "alpha_test")
    assert scores["alpha_test"] is b and scores.alpha_cal is a and scores.similarity_test is None
    with pytest.raises(KeyError, match="no score array 'margin' \\(offered: alpha_cal, alpha_test\\)"):
        scores["margin"]


def test_a_rule_sees_only_the_arrays_it_declares() -> None:
    seen: list[tuple[str, ...]] = []

    @register_rule("peeking", needs=("alpha_test",))
    def peeking(scores: Scores, cfg: DecisionConfig) -> RuleDecision:
        seen.append(scores.offered())
        return RuleDecision("peeking", (scores["alpha_test"] <= 0.3).astype(int))

    try:
        both = Scores(alpha_cal=np.array([0.1, 0.4]), alpha_test=np.array([0.2, 0.5]))
        assert apply_rule("peeking", both, DecisionConfig(rule="peeking")).labels.tolist() == [1, 0]
        assert seen == [("alpha_test",)]
        with pytest.raises(ValueError, match=r"^rule 'peeking' needs alpha_test; the proxy's scores offer alpha_cal$"):
            apply_rule("peeking", Scores(alpha_cal=np.array([0.1])), DecisionConfig(rule="peeking"))
    finally:
        RULES.remove("peeking")
