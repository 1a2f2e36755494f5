"""The proxy, decision and experiment configs compose into valid jobs, and a proxy's section
is checked against its class's Config."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from hydra.errors import ConfigCompositionException

from mcu_exp.config.schema import typed_config
from mcu_exp.job.validate import config_problems
from mcu_exp.proxies.base import build_proxy, proxy_class
from mcu_exp.proxies.p0_output import OutputConfig, OutputProxy
from mcu_exp.proxies.p0_subject import SubjectConfig, SubjectProxy
from mcu_exp.proxies.p1_consistency import ConsistencyConfig, ConsistencyProxy, SummaryConfig
from mcu_exp.proxies.p2_meta_review import MetaReviewProxy
from mcu_exp.proxies.p3_judge import JudgeConfig, JudgeProxy
from support.proxies import compose_cfg, context, make_proxy, synthetic_dataset

BUILTIN = {
    "p0": (SubjectProxy, SubjectConfig),
    "p1": (ConsistencyProxy, ConsistencyConfig),
    "p2": (MetaReviewProxy, SummaryConfig),
    "p3": (JudgeProxy, JudgeConfig),
    "p0_output": (OutputProxy, OutputConfig),
}


@pytest.mark.parametrize("name", list(BUILTIN))
def test_proxy_groups_name_their_builtin_class(tmp_path: Path, name: str) -> None:
    cfg = compose_cfg(f"proxy={name}")
    cls, config_class = BUILTIN[name]
    assert cfg.proxy.name == name and proxy_class(cfg.proxy._target_) is cls
    proxy = make_proxy(cfg, synthetic_dataset(3), tmp_path)
    assert type(proxy) is cls and type(proxy.cfg) is config_class and proxy.name == name
    assert list(proxy.problems()) == []
    assert list(config_problems(typed_config(cfg))) == []


def test_the_reference_is_p0_by_default(tmp_path: Path) -> None:
    cfg = compose_cfg()
    assert cfg.proxy._target_ == "mcu_exp.proxies.p1_consistency.ConsistencyProxy"
    reference = make_proxy(cfg, synthetic_dataset(3), tmp_path, key="reference")
    assert type(reference) is SubjectProxy and reference.cfg == SubjectConfig()
    assert typed_config(compose_cfg("reference=null")).reference is None


@pytest.mark.parametrize(("name", "key"), [("p3", "min_verdict_share"), ("p0", "min_answer_share")])
def test_the_minimum_share_of_readable_answers_is_a_share(tmp_path: Path, name: str, key: str) -> None:
    assert getattr(make_proxy(compose_cfg(f"proxy={name}"), synthetic_dataset(3), tmp_path).cfg, key) == 0.5
    for value in (0.0, 1.0):
        assert (
            list(
                make_proxy(
                    compose_cfg(f"proxy={name}", f"proxy.{key}={value}"), synthetic_dataset(3), tmp_path
                ).problems()
            )
            == []
        )
    for value in (-0.1, 1.5):
        proxy = make_proxy(compose_cfg(f"proxy={name}", f"proxy.{key}={value}"), synthetic_dataset(3), tmp_path)
        assert list(proxy.problems()) == [f"proxy.{key}={value}: expected a share in [0, 1]"]


@pytest.mark.parametrize(("group", "rule"), [("theta", "theta"), ("p1_and_theta", "p1_and_theta")])
def test_decision_groups(tmp_path: Path, group: str, rule: str) -> None:
    cfg = compose_cfg("proxy=p2", f"decision={group}")
    assert cfg.decision.rule == rule and cfg.decision.theta == 0.45
    assert list(config_problems(typed_config(cfg))) == []
    assert list(make_proxy(cfg, synthetic_dataset(3), tmp_path).problems()) == []


def test_paper_p2_is_the_papers_protocol() -> None:
    cfg = compose_cfg("experiment=paper_p2")
    assert (cfg.proxy.name, cfg.proxy.k, cfg.proxy.k_cal) == ("p2", 50, 25)
    assert cfg.experts.name == "frontier" and len(cfg.experts.members) == 3
    assert (cfg.experts.m, cfg.experts.top_n) == (30, 3)
    assert (cfg.decision.rule, cfg.decision.theta, cfg.decision.epsilon) == ("theta", 0.45, 0.1)
    assert cfg.reference.samples == 50


def test_paper_p3_is_the_papers_protocol() -> None:
    cfg = compose_cfg("experiment=paper_p3")
    assert (cfg.proxy.name, cfg.proxy.k, cfg.proxy.k_cal, cfg.proxy.r) == ("p3", 50, 25, 50)
    assert cfg.experts.name == "frontier"
    experts = typed_config(cfg).experts
    assert {label: m.model.name for label, m in experts.labelled().items()} == {
        "gpt-5": "gpt-5",
        "claude-opus-4-1": "claude-opus-4-1",
        "gemini-2.5-pro": "gemini-2.5-pro",
    }


def test_a_member_key_without_dots_takes_overrides_and_shows_its_label() -> None:
    cfg = compose_cfg("experts=frontier", "experts.members.gemini-2_5-pro.model.max_concurrency=2")
    experts = typed_config(cfg).experts
    assert list(experts.members) == ["gpt-5", "claude-opus-4-1", "gemini-2_5-pro"]  # config keys
    gemini = experts.labelled()["gemini-2.5-pro"]
    assert (gemini.model.backend, gemini.model.max_concurrency) == ("google", 2)
    assert experts.labelled()["gpt-5"].model.max_concurrency == 8


def test_paper_p1_is_the_papers_protocol() -> None:
    cfg = compose_cfg("experiment=paper_p1")
    assert (cfg.proxy.name, cfg.proxy.k, cfg.proxy.k_cal) == ("p1", 50, 25)
    assert (cfg.decision.epsilon, cfg.decision.quantile) == (0.1, "empirical")
    assert cfg.reference.samples == 50 and "samples" not in cfg.proxy


def test_paper_p0_is_the_papers_protocol() -> None:
    cfg = compose_cfg("experiment=paper_p0")
    assert (cfg.proxy.name, cfg.proxy.samples, cfg.proxy.rotate) == ("p0", 50, True)
    assert list(config_problems(typed_config(cfg))) == []


# Keys a proxy's Config lacks are dropped with a warning; a wrong type is a one-line error.


def test_p0_ignores_the_summary_keys_of_debug_quick(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    cfg = compose_cfg("proxy=p0", "debug=quick")
    assert (cfg.proxy.k, cfg.proxy.k_cal) == (6, 3)  # debug=quick sets them for P1-P3
    with caplog.at_level(logging.WARNING, logger="mcu_exp.proxies.base"):
        proxy = make_proxy(cfg, synthetic_dataset(3), tmp_path)
    assert proxy.cfg == SubjectConfig()
    (warning,) = [r for r in caplog.records if r.levelno == logging.WARNING]
    message = warning.getMessage()
    assert message.startswith("proxy: ") and "proxy.k, proxy.k_cal" in message and "SubjectConfig" in message
    assert "samples, rotate" in message  # the keys it does have, to spot a typo


def test_a_wrong_type_is_a_one_line_error_naming_the_section(tmp_path: Path) -> None:
    ctx = context(compose_cfg(), synthetic_dataset(3), tmp_path)
    section = {"_target_": "mcu_exp.proxies.p1_consistency.ConsistencyProxy", "name": "p1", "k": "abc"}
    with pytest.raises(ValueError) as info:
        build_proxy(section, ctx, "proxy")
    message = str(info.value)
    assert "\n" not in message and message.startswith("proxy.k: ") and "abc" in message
    assert "keys of ConsistencyConfig: name, k, k_cal" in message
    with pytest.raises(ValueError, match=r"^reference.samples: "):
        build_proxy(
            {**section, "_target_": "mcu_exp.proxies.p0_subject.SubjectProxy", "samples": "x"}, ctx, "reference"
        )


def test_the_target_must_name_a_proxy_class(tmp_path: Path) -> None:
    ctx = context(compose_cfg(), synthetic_dataset(3), tmp_path)
    assert type(build_proxy({"name": "p1"}, ctx)).__name__ == "ConsistencyProxy"  # no _target_: the registry's p1
    assert type(build_proxy({"_target_": "p3", "name": "judge"}, ctx)).__name__ == "JudgeProxy"  # a registered name
    with pytest.raises(
        ValueError, match=r"^proxy: name the proxy: proxy=<name> \(registered: p0, p1, p2, p3, p0_output\)"
    ):
        build_proxy({}, ctx)
    with pytest.raises(
        ValueError, match=r"^unknown proxy 'pp1' \(proxy\): did you mean 'p1'\? \(known: p0, p1, p2, p3, p0_output\)$"
    ):
        build_proxy({"name": "pp1"}, ctx)
    with pytest.raises(ValueError, match=r"proxy._target_: cannot load 'mcu_exp.proxies.nowhere.P9'"):
        build_proxy({"_target_": "mcu_exp.proxies.nowhere.P9"}, ctx)
    with pytest.raises(ValueError, match=r"expected a mcu_exp.proxies.base.Proxy subclass"):
        build_proxy({"_target_": "mcu_exp.proxies.p0_subject.SubjectConfig"}, ctx)
    with pytest.raises(ConfigCompositionException, match=r"proxy.r"):  # a shared override must exist (or ++)
        compose_cfg("proxy=p0", "proxy.r=2")
