"""P2 without a model: the decision rules, centrality ranking, seeded draws, expert configs."""

from __future__ import annotations

import numpy as np
import pytest
from omegaconf import OmegaConf

from mcu_exp.calibration import decide
from mcu_exp.config import ExpertMember
from mcu_exp.proxies.experts import centrality, draw_index, expert_model_config, program_rng, top_n
from mcu_exp.proxies.p2_meta_review import decide_p2

RNG = np.random.default_rng(7)
N = 40
P1_CAL, P1_TEST = RNG.uniform(0.1, 0.5, N), RNG.uniform(0.1, 0.5, N)
META_CAL, META_TEST = RNG.uniform(0.2, 0.9, N), RNG.uniform(0.2, 0.9, N)


def test_p1_and_theta_at_theta_zero_is_p1() -> None:
    p1 = decide(P1_CAL, P1_TEST, 0.1, "empirical")
    combined = decide_p2("p1_and_theta", META_CAL, META_TEST, 0.1, "empirical", 0.0, P1_CAL, P1_TEST)
    assert np.array_equal(combined.labels, p1.labels)
    assert 0 < combined.labels.sum() < N
    assert combined.params["rule"] == "p1_and_theta" and combined.params["tau_p1"] == p1.tau


def test_p1_and_theta_is_the_conjunction() -> None:
    theta = 0.55
    p1 = decide(P1_CAL, P1_TEST, 0.2, "conformal")
    combined = decide_p2("p1_and_theta", META_CAL, META_TEST, 0.2, "conformal", theta, P1_CAL, P1_TEST)
    assert np.array_equal(combined.labels, (p1.labels == 1) & (META_TEST >= theta))
    with pytest.raises(ValueError, match="P1"):
        decide_p2("p1_and_theta", META_CAL, META_TEST, 0.2, "conformal", theta)


def test_theta_rule_thresholds_the_test_similarity() -> None:
    d = decide_p2("theta", META_CAL, META_TEST, 0.1, "empirical", 0.45)
    assert np.array_equal(d.labels, (META_TEST >= 0.45).astype(int))
    assert d.params == {"rule": "theta", "quantile": "empirical", "theta": 0.45}
    assert "tau" not in d.metrics and "p2.tau_meta" in d.metrics
    assert np.array_equal(decide_p2("theta", META_CAL, META_TEST, 0.1, "empirical", 0.0).labels, np.ones(N))


def test_conformal_rule_is_p1s_rule_on_alpha_meta() -> None:
    d = decide_p2("conformal", META_CAL, META_TEST, 0.1, "empirical", 0.45)
    ref = decide(1 - META_CAL, 1 - META_TEST, 0.1, "empirical")
    assert np.array_equal(d.labels, ref.labels)
    assert d.params["tau"] == ref.tau and d.metrics["coverage"] == ref.coverage


def test_unknown_rule_is_rejected() -> None:
    with pytest.raises(ValueError, match="decision.rule"):
        decide_p2("majority", META_CAL, META_TEST, 0.1, "empirical", 0.45)


def test_centrality_is_the_mean_similarity_to_the_others() -> None:
    sim = np.array([
        [1.0, 0.9, 0.8, 0.1],
        [0.9, 1.0, 0.7, 0.2],
        [0.8, 0.7, 1.0, 0.3],
        [0.1, 0.2, 0.3, 1.0],
    ])
    assert np.allclose(centrality(sim), [1.8 / 3, 1.8 / 3, 1.8 / 3, 0.6 / 3])
    assert list(top_n(sim, 1)) == [0]  # three-way tie: lowest index first
    assert list(top_n(sim, 3)) == [0, 1, 2]
    assert 3 not in top_n(sim, 3)


def test_top_n_ranks_by_centrality() -> None:
    sim = np.array([
        [1.0, 0.2, 0.3],
        [0.2, 1.0, 0.9],
        [0.3, 0.9, 1.0],
    ])
    assert list(top_n(sim, 2)) == [2, 1]
    assert list(top_n(sim, 3)) == [2, 1, 0]
    with pytest.raises(ValueError, match="top_n"):
        top_n(sim, 4)
    assert np.isnan(centrality(np.ones((1, 1)))).all()


def test_seeded_draws_depend_only_on_seed_and_program() -> None:
    draws = [draw_index(9, 0, f"prog-{i}") for i in range(200)]
    assert draws == [draw_index(9, 0, f"prog-{i}") for i in range(200)]
    assert set(draws) == set(range(9))  # every pool member can be drawn
    assert draws != [draw_index(9, 1, f"prog-{i}") for i in range(200)]
    a = program_rng(3, "x").integers(1000, size=5)
    assert np.array_equal(a, program_rng(3, "x").integers(1000, size=5))


def test_expert_model_config_applies_member_overrides() -> None:
    member = OmegaConf.structured(ExpertMember(label="e", model="smollm2-135m", temperature=0.3, seed=5))
    cfg = expert_model_config(member)
    assert cfg.name == "smollm2-135m" and cfg.temperature == 0.3 and cfg.top_p == 0.95
    plain = expert_model_config(OmegaConf.structured(ExpertMember(label="e", model="gpt-5")))
    assert plain.temperature == 1.0 and plain.backend == "openai"
    with pytest.raises(ValueError, match="no-such-model"):
        expert_model_config(OmegaConf.structured(ExpertMember(label="e", model="no-such-model")))
