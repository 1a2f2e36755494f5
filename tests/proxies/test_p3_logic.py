"""P3 without a model: the seeded judge assignment and the judge request."""

from __future__ import annotations

from collections import Counter

from mcu_exp.config.schema import typed_config
from mcu_exp.proxies.p3_judge import assign_judges, judge_request
from support.proxies import compose_cfg


def test_judges_are_drawn_per_program_reproducibly() -> None:
    ids = [f"prog-{i}" for i in range(300)]
    members = ["a", "b", "c"]
    judges = assign_judges(ids, members, seed=0)
    assert judges == assign_judges(list(reversed(ids)), members, seed=0)  # order does not matter
    assert assign_judges(ids[:10], members, seed=0) == {p: judges[p] for p in ids[:10]}
    counts = Counter(judges.values())
    assert set(counts) == set(members) and min(counts.values()) > 60  # roughly uniform
    assert judges != assign_judges(ids, members, seed=1)


def test_judge_request_asks_r_short_judgments_of_one_summary() -> None:
    member = typed_config(compose_cfg("experts=local")).experts.members["smollm2-b"]
    req = judge_request(
        member.model, "int f() { return 1; }", "java", "Returns  one.\n", r=7, seed=member.seed, max_new_tokens=8
    )
    assert (req.n, req.max_new_tokens, req.seed, req.temperature) == (7, 8, 202, 0.9)
    user = req.messages[-1].content
    assert "Summary: Returns one." in user and "CORRECT or INCORRECT" in user and "return 1;" in user
