"""P2, LLM as meta-reviewer: how close are the target's summaries to an expert reference?

The target's ``k`` summaries and their calibration/test split are P1's (same requests, so
the same cache entries). An expert pool yields one reference ``r*`` per program (see
:mod:`mcu_exp.proxies.experts`). ``SSC_meta(S_x) = mean over s in S_x of M(s, r*)`` and
``α_meta = 1 − SSC_meta`` on each subset. ``decision.rule`` picks the labels:

- ``conformal``: τ = the (1 − ε) quantile of α_meta_cal; High iff α_meta_test ≤ τ;
- ``theta``: High iff SSC_meta(S_test) ≥ θ (the paper's fixed similarity threshold);
- ``p1_and_theta``: P1's conformal rule on P1's own α (pairwise SSC) AND SSC_meta(S_test) ≥ θ;
  at θ = 0 this is exactly P1.

score = SSC_meta(S_test) (higher = more understandable); the rule used is in the params.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from mcu_exp.calibration import decide
from mcu_exp.proxies.base import JobContext, ProxyOutcome
from mcu_exp.proxies.experts import Generators, build_pools
from mcu_exp.proxies.p1_consistency import check_sizes, generate_summaries, split_indices
from mcu_exp.scoring import BertScorer

RULES = ("conformal", "theta", "p1_and_theta")


@dataclass
class P2Decision:
    """Labels under one decision rule, and the numbers that rule used."""

    rule: str
    labels: np.ndarray
    params: dict[str, float | str] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)


def decide_p2(rule: str, ssc_meta_cal: np.ndarray, ssc_meta_test: np.ndarray, epsilon: float,
              quantile: str, theta: float, p1_alpha_cal: np.ndarray | None = None,
              p1_alpha_test: np.ndarray | None = None) -> P2Decision:
    """P2's labels under ``rule`` (see the module docstring). The conformal τ on α_meta is
    always computed and reported as ``p2.tau_meta``; it decides only under ``conformal``."""
    if rule not in RULES:
        raise ValueError(f"decision.rule={rule!r}: expected one of {', '.join(RULES)}")
    alpha_cal, alpha_test = 1.0 - np.asarray(ssc_meta_cal, float), 1.0 - np.asarray(ssc_meta_test, float)
    meta = decide(alpha_cal, alpha_test, epsilon, quantile)
    metrics = {"p2.tau_meta": meta.tau, "p2.coverage_meta": meta.coverage}
    params: dict[str, float | str] = {"rule": rule, "quantile": quantile}
    if rule == "conformal":
        params["tau"] = meta.tau
        metrics.update({"tau": meta.tau, "coverage": meta.coverage, "nominal_coverage": 1.0 - epsilon})
        return P2Decision(rule, meta.labels, params, metrics)
    above = (np.asarray(ssc_meta_test, float) >= theta).astype(int)
    params["theta"] = theta
    metrics["p2.theta"] = theta
    metrics["p2.above_theta_share"] = float(above.mean()) if above.size else float("nan")
    if rule == "theta":
        return P2Decision(rule, above, params, metrics)
    if p1_alpha_cal is None or p1_alpha_test is None:
        raise ValueError("decision.rule=p1_and_theta needs P1's calibration and test nonconformity scores")
    p1 = decide(p1_alpha_cal, p1_alpha_test, epsilon, quantile)
    params["tau_p1"] = p1.tau
    metrics.update({"p1.tau": p1.tau, "p1.coverage": p1.coverage, "p1.high_share": float(p1.labels.mean())})
    return P2Decision(rule, (p1.labels.astype(bool) & above.astype(bool)).astype(int), params, metrics)


def run(ctx: JobContext) -> ProxyOutcome:
    """Run P2 over ``ctx.program_ids``."""
    cfg = ctx.cfg
    k, k_cal = int(cfg.proxy.k), int(cfg.proxy.k_cal)
    check_sizes(k, k_cal)
    rule = str(cfg.decision.rule)
    if rule not in RULES:
        raise ValueError(f"decision.rule={rule!r}: expected one of {', '.join(RULES)}")
    ids = ctx.program_ids

    summaries, target_generator = generate_summaries(ctx)
    generators = Generators(ctx.cache_dir, ctx.progress)
    generators.add(cfg.model, target_generator)
    # idf weights (scorer.idf=true) from the target summaries, as P1 does, so p1_and_theta's SSC is P1's.
    idf_sents = [t for pid in ids for t in summaries[pid]] if cfg.scorer.idf else None
    scorer = BertScorer(cfg.scorer, cache=ctx.cache_dir, idf_sents=idf_sents)
    pools = build_pools(ctx, generators, scorer)
    splits = {pid: split_indices(pid, k, k_cal, int(cfg.proxy.split_seed)) for pid in ids}

    to_ref = {pid: scorer.f1_matrix(summaries[pid], [pools.references[pid].text])[:, 0] for pid in ids}
    ssc_meta_cal = np.array([to_ref[pid][splits[pid][0]].mean() for pid in ids])
    ssc_meta_test = np.array([to_ref[pid][splits[pid][1]].mean() for pid in ids])

    p1_cal = p1_test = None
    if rule == "p1_and_theta":
        groups = [[summaries[pid][i] for i in splits[pid][s]] for s in (0, 1) for pid in ids]
        ssc = np.asarray(scorer.ssc_many(groups), dtype=float)
        p1_cal, p1_test = 1.0 - ssc[: len(ids)], 1.0 - ssc[len(ids):]
    decision = decide_p2(rule, ssc_meta_cal, ssc_meta_test, float(cfg.decision.epsilon),
                         str(cfg.decision.quantile), float(cfg.decision.theta), p1_cal, p1_test)

    index = pd.Index(ids, name="program_id")
    table = pd.DataFrame(
        {
            "ssc_meta_cal": ssc_meta_cal,
            "ssc_meta_test": ssc_meta_test,
            "alpha_meta_cal": 1.0 - ssc_meta_cal,
            "alpha_meta_test": 1.0 - ssc_meta_test,
            "reference_expert": [pools.references[pid].expert for pid in ids],
            "score": ssc_meta_test,
            "label": decision.labels,
        },
        index=index,
    )
    if p1_cal is not None and p1_test is not None:
        table.insert(4, "alpha_p1_cal", p1_cal)
        table.insert(5, "alpha_p1_test", p1_test)
    ssc_meta = table.drop(columns=["score", "label"]).reset_index()
    ssc_meta["reference_index"] = [pools.references[pid].sample_index for pid in ids]
    ssc_meta["reference_text"] = [pools.references[pid].text for pid in ids]

    rows = []
    for pid in ids:
        cal = set(splits[pid][0].tolist())
        for i, text in enumerate(summaries[pid]):
            rows.append({"program_id": pid, "sample_index": i, "subset": "cal" if i in cal else "test",
                         "text": text, "f1_to_reference": float(to_ref[pid][i])})
    metrics = {**decision.metrics, **generators.stats(), "scorer_loaded": float(scorer.model_loaded),
               "p2.high_share": float(np.mean(decision.labels)) if len(ids) else float("nan"),
               "p2.ssc_meta_test_mean": float(ssc_meta_test.mean()) if len(ids) else float("nan")}
    experts = cfg.experts
    return ProxyOutcome(
        table=table,
        params={**decision.params, "experts": str(experts.name), "experts.m": int(experts.m),
                "experts.top_n": int(experts.top_n), "experts.reference_seed": int(experts.reference_seed)},
        metrics=metrics,
        records={"summaries": pd.DataFrame(rows), "expert_pool": pools.records, "ssc_meta": ssc_meta},
        specs={"scorer": scorer.spec(), "experts": [
            {"label": str(x.label), "model": str(x.model), "temperature": x.temperature, "top_p": x.top_p,
             "seed": int(x.seed)} for x in experts.members]},
        alpha_cal=1.0 - ssc_meta_cal,
        alpha_test=1.0 - ssc_meta_test,
        quantile=str(cfg.decision.quantile),
    )
