"""The expert pool of P2 and P3: expert model configs, their summaries, the kept pool and r*.

Each expert writes ``m`` intent summaries of a program (the same summary prompt as the
target); its ``top_n`` most central summaries (highest mean BERTScore-F1 to that expert's
other summaries, ties broken by sample index) are kept, the experts' kept summaries are
pooled, and one pooled summary is drawn as the reference ``r*`` with a generator seeded by
``(experts.reference_seed, program id)``: a program's reference does not move when other
programs are added or dropped.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from omegaconf import DictConfig, OmegaConf

from mcu_exp.config import ModelConfig
from mcu_exp.llm import CachedGenerator, request_for
from mcu_exp.llm.cache import canonical_json
from mcu_exp.llm.factory import backend_identity
from mcu_exp.proxies.base import JobContext
from mcu_exp.proxies.prompts import SYSTEM, summary_messages

RANKINGS = ("centrality",)


def program_rng(seed: int, program_id: str) -> np.random.Generator:
    """A generator seeded by ``(seed, program id)`` (the id through CRC-32, as P1's split)."""
    return np.random.default_rng([int(seed), zlib.crc32(program_id.encode("utf-8"))])


def expert_model_config(member: Any, config_dir: str | Path | None = None) -> DictConfig:
    """The model config an expert member names (``conf/model/<member.model>.yaml``), with the
    member's temperature/top_p overrides applied."""
    if config_dir is None:
        from mcu_exp.app import config_dir as default_dir

        config_dir = default_dir()
    path = Path(config_dir) / "model" / f"{member.model}.yaml"
    if not path.is_file():
        raise ValueError(f"experts.members[{member.label}].model={member.model!r}: no model config {path}")
    cfg = OmegaConf.merge(OmegaConf.structured(ModelConfig), OmegaConf.load(path))
    if getattr(member, "temperature", None) is not None:
        cfg.temperature = float(member.temperature)
    if getattr(member, "top_p", None) is not None:
        cfg.top_p = float(member.top_p)
    return cfg


class Generators:
    """One :class:`CachedGenerator` per distinct model (by backend identity), shared by the
    stages of a job: an expert that is the target model, or several experts that are one
    model under different temperatures, load the weights once."""

    def __init__(self, cache_dir: Path, progress: bool) -> None:
        self.cache_dir = cache_dir
        self.progress = progress
        self._by_identity: dict[str, CachedGenerator] = {}

    def add(self, model_cfg: Any, generator: CachedGenerator) -> None:
        """Register a generator built elsewhere (the target model's)."""
        self._by_identity.setdefault(canonical_json(backend_identity(model_cfg)), generator)

    def get(self, model_cfg: Any) -> CachedGenerator:
        """The generator for ``model_cfg``'s model, created on first use."""
        key = canonical_json(backend_identity(model_cfg))
        if key not in self._by_identity:
            self._by_identity[key] = CachedGenerator(model_cfg, self.cache_dir, progress=self.progress)
        return self._by_identity[key]

    def stats(self) -> dict[str, float]:
        """Cache hits and misses over all generators, and whether any loaded a model."""
        gens = list(self._by_identity.values())
        return {
            "generation_cache_hits": float(sum(g.stats.get("hits", 0) for g in gens)),
            "generation_cache_misses": float(sum(g.stats.get("misses", 0) for g in gens)),
            "model_loaded": float(any(g.backend_created for g in gens)),
        }


def centrality(similarity: np.ndarray) -> np.ndarray:
    """Each summary's mean similarity to the *other* summaries (NaN for a lone summary)."""
    sim = np.asarray(similarity, dtype=float)
    m = sim.shape[0]
    if sim.shape != (m, m):
        raise ValueError(f"centrality needs a square similarity matrix, got shape {sim.shape}")
    if m < 2:
        return np.full(m, np.nan)
    return (sim.sum(axis=1) - np.diag(sim)) / (m - 1)


def top_n(similarity: np.ndarray, n: int) -> np.ndarray:
    """Indices of the ``n`` most central summaries, most central first (ties: lower index first)."""
    scores = centrality(similarity)
    if not 1 <= n <= len(scores):
        raise ValueError(f"experts.top_n={n}: expected 1..{len(scores)} (experts.m)")
    order = np.argsort(-np.nan_to_num(scores, nan=0.0), kind="stable")
    return order[:n]


def draw_index(size: int, seed: int, program_id: str) -> int:
    """A seeded draw of one of ``size`` items for one program."""
    if size < 1:
        raise ValueError(f"cannot draw from an empty set for program {program_id!r}")
    return int(program_rng(seed, program_id).integers(size))


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


def check_experts(experts: Any) -> None:
    """Reject an empty pool, an unknown ranking, or a top_n outside 1..m."""
    if not experts.members:
        raise ValueError("experts.members is empty: P2 and P3 need at least one expert (e.g. experts=local)")
    if experts.ranking not in RANKINGS:
        raise ValueError(f"experts.ranking={experts.ranking!r}: expected one of {', '.join(RANKINGS)}")
    if not 1 <= int(experts.top_n) <= int(experts.m):
        raise ValueError(f"experts.top_n={experts.top_n}, experts.m={experts.m}: expected 1 <= top_n <= m")


def expert_summary_requests(ctx: JobContext, member_cfg: Any, seed: int, m: int) -> list:
    """One request per program for ``m`` summaries by one expert (the target's summary prompt)."""
    system = member_cfg.system_prompt if member_cfg.system_prompt is not None else SYSTEM
    requests = []
    for pid in ctx.program_ids:
        program = ctx.dataset.program(pid)
        messages = summary_messages(program.code, program.language, str(ctx.cfg.proxy.prompt), system=system)
        requests.append(request_for(member_cfg, messages, n=m, seed=seed))
    return requests


def build_pools(ctx: JobContext, generators: Generators, scorer: Any) -> ExpertPools:
    """Generate every expert's summaries, keep each expert's top n, pool them and draw r*."""
    experts = ctx.cfg.experts
    check_experts(experts)
    m, n = int(experts.m), int(experts.top_n)
    pools: dict[str, list[PoolEntry]] = {pid: [] for pid in ctx.program_ids}
    rows: list[dict[str, Any]] = []
    for member in experts.members:
        member_cfg = expert_model_config(member)
        results = generators.get(member_cfg).generate(
            expert_summary_requests(ctx, member_cfg, int(member.seed), m))
        for pid, result in zip(ctx.program_ids, results):
            texts = result.texts
            sim = scorer.pairwise_f1(texts) if len(texts) > 1 else np.ones((1, 1))
            scores = centrality(sim)
            order = top_n(sim, len(texts))  # every summary, most central first
            kept = {int(i) for i in order[:n]}
            for i in order[:n]:
                pools[pid].append(PoolEntry(str(member.label), int(i), texts[i], float(scores[i])))
            rank = {int(i): r + 1 for r, i in enumerate(order)}
            for i, text in enumerate(texts):
                rows.append({"program_id": pid, "expert": str(member.label), "model": str(member.model),
                             "sample_index": i, "text": text, "centrality": float(scores[i]),
                             "rank": rank[i], "kept": i in kept})
    seed = int(experts.reference_seed)
    references = {pid: pool[draw_index(len(pool), seed, pid)] for pid, pool in pools.items()}
    records = pd.DataFrame(rows, columns=["program_id", "expert", "model", "sample_index", "text",
                                          "centrality", "rank", "kept"])
    ref_keys = {(pid, e.expert, e.sample_index) for pid, e in references.items()}
    records["is_reference"] = [
        (p, e, i) in ref_keys for p, e, i in zip(records["program_id"], records["expert"], records["sample_index"])
    ]
    return ExpertPools(pools=pools, references=references, records=records,
                       members=[str(x.label) for x in experts.members])

