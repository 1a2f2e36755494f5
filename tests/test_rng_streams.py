"""Every per-program draw has its own random stream: P2's reference and P3's judge are
independent, programs get their own request seeds, and a program's draws do not depend on
which other programs the job holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcu_exp.data import Dataset
from mcu_exp.data.scalabrino import read_scalabrino
from mcu_exp.proxies.base import Proxy
from mcu_exp.proxies.experts import EXPERT_SUMMARIES, build_pools
from mcu_exp.proxies.p0_subject import ANSWERS
from mcu_exp.proxies.p3_judge import JUDGMENTS
from mcu_exp.proxies.stages import TARGET_SUMMARIES, Stage, StageResults
from support.proxies import compose_cfg, make_proxy, synthetic_dataset, walk_stages

ONE_PER_EXPERT = ("experts=local", "experts.m=1", "experts.top_n=1")  # pool = one summary of each of 3 experts


def texts_for(stage: Stage) -> list[list[str]]:
    return [[f"summary {i} of request {pos}" for i in range(r.n)] for pos, r in enumerate(stage.requests)]


def reference_authors(proxy: Proxy) -> dict[str, str]:
    """The expert who wrote each program's r* (the pools are built by the job's own code; with
    one summary per expert no similarity is needed)."""
    done = StageResults()
    for stage in walk_stages(proxy, texts_for):
        done.put(stage.key, texts_for(stage))
    pools = build_pools(proxy.ctx, done, scorer=None)
    return {pid: entry.expert for pid, entry in pools.references.items()}


@pytest.mark.filterwarnings("ignore::mcu_exp.data.types.DatasetWarning")  # the study's repeated rows
@pytest.mark.parametrize("seed", [0, 7])
def test_the_judge_is_not_the_reference_author_more_often_than_chance(
    tmp_path: Path, data_root: Path, seed: int
) -> None:
    dataset = read_scalabrino(data_root / "scalabrino")
    assert len(dataset.program_ids) == 50
    seeds = (f"experts.reference_seed={seed}", f"proxy.judge_seed={seed}")
    p2 = make_proxy(compose_cfg("proxy=p2", *ONE_PER_EXPERT, *seeds[:1]), dataset, tmp_path)
    p3 = make_proxy(compose_cfg("proxy=p3", *ONE_PER_EXPERT, *seeds), dataset, tmp_path)
    authors, judges = reference_authors(p2), p3.judges()
    assert len(set(authors.values())) == 3 and len(set(judges.values())) == 3
    same = sum(judges[pid] == authors[pid] for pid in dataset.program_ids)
    # Independent draws: same ~ Binomial(50, 1/3), mean 16.7, sd 3.3. P(same <= 5 or same >= 29)
    # = 4.3e-4 (scipy.stats.binom), so a correct implementation fails this check for about one
    # seed in 2,300; coupled draws (the same generator for both) give 50.
    assert 6 <= same <= 28


def request_seeds(proxy: Proxy) -> dict[str, list[int]]:
    """The seeds of each stage's requests, by stage key."""
    return {stage.key: [r.seed for r in stage.requests] for stage in walk_stages(proxy, texts_for)}


@pytest.fixture(scope="module")
def dataset() -> Dataset:
    return synthetic_dataset(n_programs=4, n_questions=2)


def test_programs_and_streams_get_their_own_request_seeds(tmp_path: Path, dataset: Dataset) -> None:
    p3 = make_proxy(compose_cfg("proxy=p3", "proxy.k=4", "proxy.k_cal=2", "proxy.r=2"), dataset, tmp_path)
    seeds = request_seeds(p3)
    target = seeds[TARGET_SUMMARIES]
    assert len(set(target)) == 4  # one per program
    judgments = [s for key, values in seeds.items() if key.startswith(JUDGMENTS) for s in values]
    assert len(judgments) == 4 * 4 and len(set(judgments)) == 4 * 4  # one per program and summary
    assert not set(judgments) & set(target)
    assert all(0 <= s < 2**31 for s in target + judgments)

    p2 = make_proxy(compose_cfg("proxy=p2", "proxy.k=4", "proxy.k_cal=2", "experts.m=3"), dataset, tmp_path)
    expert = [s for key, values in request_seeds(p2).items() if key.startswith(EXPERT_SUMMARIES) for s in values]
    assert len(set(expert)) == 3 * 4  # per expert and program

    p0 = make_proxy(compose_cfg("proxy=p0", "proxy.samples=2"), dataset, tmp_path)
    answers = request_seeds(p0)[ANSWERS]
    assert len(set(answers)) == len(answers) == 4 * 2 * 4  # per program, question and rotation


def draws(proxy: Proxy, pid: str) -> tuple[object, ...]:
    """Everything drawn for program ``pid``: its split, judge and every request seed."""
    cal, test = proxy.splits()[pid]
    stages = list(walk_stages(proxy, texts_for))
    pos = proxy.ctx.program_ids.index(pid)
    judge = proxy.judges()[pid]
    own_judgments = [
        r.seed
        for s in stages
        if s.key == f"{JUDGMENTS}:{judge}"
        for r in s.requests
        if f"return x + {pid[1:]};" in r.messages[-1].content
    ]
    return tuple(cal), tuple(test), judge, stages[0].requests[pos].seed, tuple(own_judgments)


def test_a_programs_draws_do_not_depend_on_the_other_programs(tmp_path: Path, dataset: Dataset) -> None:
    cfg = compose_cfg("proxy=p3", "proxy.k=6", "proxy.k_cal=3", "proxy.r=2")
    ids = dataset.program_ids
    alone = draws(make_proxy(cfg, dataset, tmp_path, program_ids=["p2"]), "p2")
    assert draws(make_proxy(cfg, dataset, tmp_path), "p2") == alone
    assert draws(make_proxy(cfg, dataset, tmp_path, program_ids=list(reversed(ids))), "p2") == alone
    p2 = compose_cfg("proxy=p2", *ONE_PER_EXPERT)
    assert (
        reference_authors(make_proxy(p2, dataset, tmp_path))["p2"]
        == reference_authors(make_proxy(p2, dataset, tmp_path, program_ids=["p2"]))["p2"]
    )
