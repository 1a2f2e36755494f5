"""P1, semantic self-consistency: does the model summarise a program the same way each time?

For each program the target model writes ``k`` intent summaries; a seeded split gives
``k_cal`` calibration and ``k - k_cal`` test summaries. SSC = mean pairwise BERTScore-F1,
α = 1 − SSC. τ = the (1 − ε) quantile of α_cal over programs; High iff α_test ≤ τ.
"""

from __future__ import annotations

import logging
import zlib

import numpy as np
import pandas as pd

from mcu_exp.calibration import decide
from mcu_exp.llm import CachedGenerator, request_for
from mcu_exp.proxies.base import JobContext, ProxyOutcome
from mcu_exp.proxies.prompts import SYSTEM, summary_messages
from mcu_exp.scoring import BertScorer

log = logging.getLogger(__name__)


def split_indices(program_id: str, k: int, k_cal: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A seeded calibration/test split of sample indices ``0..k-1`` for one program.

    Seeded by ``(seed, program id)``, so a program's split does not change when other
    programs are added, dropped or reordered.
    """
    rng = np.random.default_rng([seed, zlib.crc32(program_id.encode("utf-8"))])
    perm = rng.permutation(k)
    return np.sort(perm[:k_cal]), np.sort(perm[k_cal:])


def check_sizes(k: int, k_cal: int) -> None:
    """Both subsets need at least two summaries to have a pair."""
    if k_cal < 2 or k - k_cal < 2:
        raise ValueError(
            f"proxy.k={k}, proxy.k_cal={k_cal}: calibration and test subsets each need >= 2 summaries"
        )


def generate_summaries(ctx: JobContext) -> tuple[dict[str, list[str]], CachedGenerator]:
    """``k`` intent summaries per program (from the generation cache where possible), and the generator."""
    cfg = ctx.cfg
    system = cfg.model.system_prompt if cfg.model.system_prompt is not None else SYSTEM
    requests = []
    for pid in ctx.program_ids:
        program = ctx.dataset.program(pid)
        messages = summary_messages(program.code, program.language, cfg.proxy.prompt, system=system)
        requests.append(request_for(cfg.model, messages, n=int(cfg.proxy.k), seed=int(cfg.proxy.sample_seed)))
    generator = CachedGenerator(cfg.model, ctx.cache_dir, progress=ctx.progress)
    results = generator.generate(requests)
    return {pid: result.texts for pid, result in zip(ctx.program_ids, results)}, generator


def run(ctx: JobContext) -> ProxyOutcome:
    """Run P1 over ``ctx.program_ids``."""
    cfg = ctx.cfg
    k, k_cal = int(cfg.proxy.k), int(cfg.proxy.k_cal)
    check_sizes(k, k_cal)
    if cfg.decision.rule != "conformal":
        raise ValueError(f"decision.rule={cfg.decision.rule!r} needs proxy=p2; P1 uses decision.rule=conformal")

    summaries, generator = generate_summaries(ctx)
    splits = {pid: split_indices(pid, k, k_cal, int(cfg.proxy.split_seed)) for pid in ctx.program_ids}
    cal_groups = [[summaries[pid][i] for i in splits[pid][0]] for pid in ctx.program_ids]
    test_groups = [[summaries[pid][i] for i in splits[pid][1]] for pid in ctx.program_ids]

    idf_sents = [t for pid in ctx.program_ids for t in summaries[pid]] if cfg.scorer.idf else None
    scorer = BertScorer(cfg.scorer, cache=ctx.cache_dir, idf_sents=idf_sents)
    ssc = np.asarray(scorer.ssc_many(cal_groups + test_groups), dtype=float)
    n = len(ctx.program_ids)
    ssc_cal, ssc_test = ssc[:n], ssc[n:]
    alpha_cal, alpha_test = 1.0 - ssc_cal, 1.0 - ssc_test

    decision = decide(alpha_cal, alpha_test, float(cfg.decision.epsilon), str(cfg.decision.quantile))
    table = pd.DataFrame(
        {
            "ssc_cal": ssc_cal,
            "ssc_test": ssc_test,
            "alpha_cal": alpha_cal,
            "alpha_test": alpha_test,
            "score": -alpha_test,
            "label": decision.labels,
        },
        index=pd.Index(ctx.program_ids, name="program_id"),
    )
    rows = []
    for pid in ctx.program_ids:
        cal = set(splits[pid][0].tolist())
        for i, text in enumerate(summaries[pid]):
            rows.append({"program_id": pid, "sample_index": i, "subset": "cal" if i in cal else "test", "text": text})
    return ProxyOutcome(
        table=table,
        params={"tau": decision.tau, "quantile": decision.quantile},
        metrics={
            "tau": decision.tau,
            "coverage": decision.coverage,
            "nominal_coverage": 1.0 - decision.epsilon,
            "generation_cache_hits": generator.stats.get("hits", 0),
            "generation_cache_misses": generator.stats.get("misses", 0),
            "model_loaded": float(generator.backend_created),
            "scorer_loaded": float(scorer.model_loaded),
        },
        records={"summaries": pd.DataFrame(rows)},
        specs={"scorer": scorer.spec(), "generator": generator.identity()},
        alpha_cal=alpha_cal,
        alpha_test=alpha_test,
        quantile=decision.quantile,
    )
