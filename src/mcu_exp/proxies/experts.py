"""The expert pool of P2 and P3: the experts' summaries, the kept pool and r*.

Each expert writes ``m`` intent summaries of a program (the same summary prompt as the
target); its ``top_n`` most central summaries (highest mean BERTScore-F1 to that expert's
other summaries, ties broken by sample index) are kept, the experts' kept summaries are
pooled, and one pooled summary is drawn as the reference ``r*`` from the program's
``reference`` stream under ``experts.reference_seed`` (:mod:`mcu_exp.rng_streams`): a program's
reference does not move when other programs are added or dropped, and is independent of
P3's judge. Each expert's summary requests are seeded from the program's own
``expert summaries:<label>`` stream under the member's ``seed``. Each member's model config
is composed by Hydra (``conf/experts/*.yaml``), so command-line overrides reach it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from mcu_exp.config import ExpertsConfig
from mcu_exp.proxies.base import ProxyContext
from mcu_exp.proxies.stages import Stage, StageResults, summary_requests
from mcu_exp.rng_streams import REFERENCE, draw_index, expert_summaries

RANKINGS = ("centrality",)
EXPERT_SUMMARIES = "P2 expert summaries"


def centrality(similarity: np.ndarray) -> np.ndarray:
    """Each summary's mean similarity to the *other* summaries (NaN for a lone summary)."""
    sim = np.asarray(similarity, dtype=float)
    m = sim.shape[0]
    if sim.shape != (m, m):
        raise ValueError(f"centrality needs a square similarity matrix, got shape {sim.shape}")
    if m < 2:
        return np.full(m, np.nan)
    out: np.ndarray = (sim.sum(axis=1) - np.diag(sim)) / (m - 1)
    return out


def top_n(similarity: np.ndarray, n: int) -> np.ndarray:
    """Indices of the ``n`` most central summaries, most central first (ties: lower index first)."""
    scores = centrality(similarity)
    if not 1 <= n <= len(scores):
        raise ValueError(f"experts.top_n={n}: expected 1..{len(scores)} (experts.m)")
    order = np.argsort(-np.nan_to_num(scores, nan=0.0), kind="stable")
    return order[:n]


@dataclass(frozen=True)
class PoolEntry:
    """One kept expert summary."""

    expert: str
    sample_index: int
    text: str
    centrality: float


@dataclass
class ExpertPools:
    """Per program: the pooled summaries and the drawn reference; ``records`` lists every
    expert summary with its centrality, rank, whether kept and whether it is r*."""

    pools: dict[str, list[PoolEntry]]
    references: dict[str, PoolEntry]
    records: pd.DataFrame
    members: list[str] = field(default_factory=list)


def expert_problems(experts: ExpertsConfig, needs_pool: bool) -> Iterator[str]:
    """An empty pool, an unknown ranking, or (for P2) a top_n outside 1..m."""
    if not experts.members:
        yield "experts.members is empty: P2 and P3 need at least one expert (e.g. experts=local)"
    if len(experts.labelled()) < len(experts.members):
        labels = [m.label or key for key, m in experts.members.items()]
        yield f"experts.members: two members share a label ({', '.join(labels)}); labels must be unique"
    if not needs_pool:
        return
    if experts.ranking not in RANKINGS:
        yield f"experts.ranking={experts.ranking!r}: expected one of {', '.join(RANKINGS)}"
    if not 1 <= experts.top_n <= experts.m:
        yield f"experts.top_n={experts.top_n}, experts.m={experts.m}: expected 1 <= top_n <= m"


def expert_specs(experts: ExpertsConfig) -> list[dict[str, Any]]:
    """Who the experts are, for specs.json: label, model config, sampling and seed."""
    return [
        {
            "label": label,
            "model": member.model.name,
            "model_id": member.model.model_id,
            "temperature": member.model.temperature,
            "top_p": member.model.top_p,
            "seed": member.seed,
        }
        for label, member in experts.labelled().items()
    ]


def expert_stages(ctx: ProxyContext, prompt: str) -> Iterator[Stage]:
    """One stage per expert: ``m`` summaries of every program (the target's summary prompt)."""
    for label, member in ctx.experts.labelled().items():
        requests = summary_requests(
            member.model,
            ctx.dataset,
            ctx.program_ids,
            prompt,
            ctx.experts.m,
            member.seed,
            stream=expert_summaries(label),
        )
        yield Stage(f"{EXPERT_SUMMARIES}:{label}", EXPERT_SUMMARIES, label, member.model, requests)


def build_pools(ctx: ProxyContext, done: StageResults, scorer: Any) -> ExpertPools:
    """Keep each expert's top n summaries, pool them and draw r* (the stages have run)."""
    experts = ctx.experts
    n = experts.top_n
    pools: dict[str, list[PoolEntry]] = {pid: [] for pid in ctx.program_ids}
    rows: list[dict[str, Any]] = []
    for label, member in experts.labelled().items():
        for pid, texts in zip(ctx.program_ids, done.texts(f"{EXPERT_SUMMARIES}:{label}")):
            sim = scorer.pairwise_f1(texts) if len(texts) > 1 else np.ones((1, 1))
            scores = centrality(sim)
            order = top_n(sim, len(texts))  # every summary, most central first
            kept = {int(i) for i in order[:n]}
            for i in order[:n]:
                pools[pid].append(PoolEntry(label, int(i), texts[i], float(scores[i])))
            rank = {int(i): r + 1 for r, i in enumerate(order)}
            for i, text in enumerate(texts):
                rows.append(
                    {
                        "program_id": pid,
                        "expert": label,
                        "model": member.model.name,
                        "sample_index": i,
                        "text": text,
                        "centrality": float(scores[i]),
                        "rank": rank[i],
                        "kept": i in kept,
                    }
                )
    seed = experts.reference_seed
    references = {pid: pool[draw_index(len(pool), seed, pid, REFERENCE)] for pid, pool in pools.items()}
    records = pd.DataFrame(
        rows, columns=["program_id", "expert", "model", "sample_index", "text", "centrality", "rank", "kept"]
    )
    ref_keys = {(pid, e.expert, e.sample_index) for pid, e in references.items()}
    records["is_reference"] = [
        (p, e, i) in ref_keys for p, e, i in zip(records["program_id"], records["expert"], records["sample_index"])
    ]
    return ExpertPools(pools=pools, references=references, records=records, members=list(experts.labelled()))
