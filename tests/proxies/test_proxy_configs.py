"""The new proxy, decision and experiment configs compose into valid jobs."""

from __future__ import annotations

import pytest
from proxy_support import compose_cfg

from mcu_exp.checks import config_problems
from mcu_exp.proxies.base import resolve_proxy


@pytest.mark.parametrize("name", ["p0", "p2", "p3"])
def test_proxy_groups_resolve_to_their_builtin(name: str) -> None:
    cfg = compose_cfg(f"proxy={name}")
    assert cfg.proxy.name == name
    assert callable(resolve_proxy(cfg.proxy.name, cfg.proxy.impl))
    assert list(config_problems(cfg)) == []


@pytest.mark.parametrize(("group", "rule"), [("theta", "theta"), ("p1_and_theta", "p1_and_theta")])
def test_decision_groups(group: str, rule: str) -> None:
    cfg = compose_cfg("proxy=p2", f"decision={group}")
    assert cfg.decision.rule == rule and cfg.decision.theta == 0.45
    assert list(config_problems(cfg)) == []


def test_paper_p2_is_the_papers_protocol() -> None:
    cfg = compose_cfg("experiment=paper_p2")
    assert (cfg.proxy.name, cfg.proxy.k, cfg.proxy.k_cal) == ("p2", 50, 25)
    assert cfg.experts.name == "frontier" and len(cfg.experts.members) == 3
    assert (cfg.experts.m, cfg.experts.top_n) == (30, 3)
    assert (cfg.decision.rule, cfg.decision.theta, cfg.decision.epsilon) == ("theta", 0.45, 0.1)


def test_paper_p3_is_the_papers_protocol() -> None:
    cfg = compose_cfg("experiment=paper_p3")
    assert (cfg.proxy.name, cfg.proxy.k, cfg.proxy.k_cal, cfg.proxy.r) == ("p3", 50, 25, 50)
    assert cfg.experts.name == "frontier"


def test_paper_p0_is_the_papers_protocol() -> None:
    cfg = compose_cfg("experiment=paper_p0")
    assert (cfg.proxy.name, cfg.proxy.samples, cfg.proxy.rotate) == ("p0", 50, True)
    assert list(config_problems(cfg)) == []
