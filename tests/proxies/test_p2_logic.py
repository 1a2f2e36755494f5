"""P2 without a model: centrality ranking, seeded draws, and the expert configs Hydra
composes reaching the expert stages. (The decision rules: tests/calibration/test_decision_rules.py.)"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hydra.errors import MissingConfigException

from mcu_exp.config.schema import typed_config
from mcu_exp.proxies.experts import EXPERT_SUMMARIES, centrality, top_n
from mcu_exp.proxies.stages import TARGET_SUMMARIES
from mcu_exp.rng_streams import REFERENCE, draw_index, expert_summaries, program_rng, program_seed
from support.proxies import compose_cfg, make_proxy, synthetic_dataset, walk_stages


def test_centrality_is_the_mean_similarity_to_the_others() -> None:
    sim = np.array(
        [
            [1.0, 0.9, 0.8, 0.1],
            [0.9, 1.0, 0.7, 0.2],
            [0.8, 0.7, 1.0, 0.3],
            [0.1, 0.2, 0.3, 1.0],
        ]
    )
    assert np.allclose(centrality(sim), [1.8 / 3, 1.8 / 3, 1.8 / 3, 0.6 / 3])
    assert list(top_n(sim, 1)) == [0]  # three-way tie: lowest index first
    assert list(top_n(sim, 3)) == [0, 1, 2]
    assert 3 not in top_n(sim, 3)


def test_top_n_ranks_by_centrality() -> None:
    sim = np.array(
        [
            [1.0, 0.2, 0.3],
            [0.2, 1.0, 0.9],
            [0.3, 0.9, 1.0],
        ]
    )
    assert list(top_n(sim, 2)) == [2, 1]
    assert list(top_n(sim, 3)) == [2, 1, 0]
    with pytest.raises(ValueError, match="top_n"):
        top_n(sim, 4)
    assert np.isnan(centrality(np.ones((1, 1)))).all()


def test_seeded_draws_depend_only_on_seed_program_and_stream() -> None:
    draws = [draw_index(9, 0, f"prog-{i}", REFERENCE) for i in range(200)]
    assert draws == [draw_index(9, 0, f"prog-{i}", REFERENCE) for i in range(200)]
    assert set(draws) == set(range(9))  # every pool member can be drawn
    assert draws != [draw_index(9, 1, f"prog-{i}", REFERENCE) for i in range(200)]
    assert draws != [draw_index(9, 0, f"prog-{i}", "another stream") for i in range(200)]
    a = program_rng(3, "x", REFERENCE).integers(1000, size=5)
    assert np.array_equal(a, program_rng(3, "x", REFERENCE).integers(1000, size=5))
    assert 0 <= program_seed(-1, "x", REFERENCE) < 2**31 and program_seed(-1, "x", REFERENCE) != program_seed(
        1, "x", REFERENCE
    )


def test_member_model_configs_are_composed_with_the_members_overrides() -> None:
    members = typed_config(compose_cfg("experts=local")).experts.members
    assert list(members) == ["smollm2-a", "smollm2-b", "smollm2-c"]
    b = members["smollm2-b"]
    assert (b.model.name, b.model.backend, b.seed) == ("smollm2-135m", "local", 202)
    assert b.model.temperature == 0.9 and b.model.top_p == 0.95  # the member's override; the model's default
    assert [m.model.temperature for m in members.values()] == [0.7, 0.9, 1.0]
    # Another model for one member: its own file's values, the member's overrides on top.
    swapped = typed_config(compose_cfg("experts=local", "model@experts.members.smollm2-a.model=gpt-5"))
    a = swapped.experts.members["smollm2-a"]
    assert (a.model.name, a.model.backend, a.model.top_p) == ("gpt-5", "openai", 1.0)
    assert a.model.temperature == 0.7 and a.seed == 101
    with pytest.raises(MissingConfigException, match="no-such-model"):
        compose_cfg("experts=local", "model@experts.members.smollm2-a.model=no-such-model")


def test_an_expert_override_reaches_that_experts_requests(tmp_path: Path) -> None:
    cfg = compose_cfg(
        "proxy=p2", "proxy.k=4", "proxy.k_cal=2", "experts.m=3", "experts.members.smollm2-a.model.max_new_tokens=17"
    )
    proxy = make_proxy(cfg, synthetic_dataset(n_programs=3, n_questions=0), tmp_path)
    stages = {s.key: s for s in walk_stages(proxy, lambda s: [["a summary"] * r.n for r in s.requests])}
    assert list(stages) == [TARGET_SUMMARIES, *(f"{EXPERT_SUMMARIES}:smollm2-{x}" for x in "abc")]
    tokens = {key: {r.max_new_tokens for r in s.requests} for key, s in stages.items()}
    assert tokens == {
        TARGET_SUMMARIES: {48},
        f"{EXPERT_SUMMARIES}:smollm2-a": {17},
        f"{EXPERT_SUMMARIES}:smollm2-b": {48},
        f"{EXPERT_SUMMARIES}:smollm2-c": {48},
    }
    a = stages[f"{EXPERT_SUMMARIES}:smollm2-a"]
    assert a.model.max_new_tokens == 17 and a.model_label == "smollm2-a"
    ids = proxy.ctx.program_ids
    assert [(r.n, r.seed, r.temperature) for r in a.requests] == [
        (3, program_seed(101, pid, expert_summaries("smollm2-a")), 0.7) for pid in ids
    ]
    assert [(r.n, r.seed) for r in stages[TARGET_SUMMARIES].requests] == [
        (4, program_seed(0, pid, TARGET_SUMMARIES)) for pid in ids
    ]
