"""P2, LLM as meta-reviewer: how close are the target's summaries to an expert reference?

The target's ``k`` summaries and their calibration/test split are P1's (same requests, so
the same cache entries). An expert pool yields one reference ``r*`` per program (see
:mod:`mcu_exp.proxies.experts`). ``SSC_meta(S_x) = mean over s in S_x of M(s, r*)`` and
``α_meta = 1 − SSC_meta`` on each subset. ``decision.rule`` picks the labels (see
:mod:`mcu_exp.calibration.rules`): ``conformal`` on α_meta, ``theta`` on SSC_meta(S_test),
or ``p1_and_theta`` (P1's rule on P1's own α AND SSC_meta(S_test) ≥ θ).

The conformal τ on α_meta is always computed and reported as ``p2.tau_meta``; it decides
only under ``conformal``. score = SSC_meta(S_test) (higher = more understandable).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pandas as pd

from mcu_exp.calibration import Scores, apply_rule, decide, get_rule
from mcu_exp.proxies.base import ProxyOutcome
from mcu_exp.proxies.experts import build_pools, expert_problems, expert_specs, expert_stages
from mcu_exp.proxies.p1_consistency import SummaryProxy
from mcu_exp.proxies.stages import Stage, StageResults


class MetaReviewProxy(SummaryProxy):
    """P2: label the target's summaries by their similarity to an expert reference r*."""

    calibrated = True
    offers = ("alpha_cal", "alpha_test", "similarity_test", "p1_alpha_cal", "p1_alpha_test")

    def problems(self) -> Iterator[str]:
        yield from super().problems()
        yield from expert_problems(self.ctx.experts, needs_pool=True)

    def stages(self, done: StageResults) -> Iterator[Stage]:
        yield self.target_stage()
        yield from expert_stages(self.ctx, self.cfg.prompt)

    def outcome(self, done: StageResults) -> ProxyOutcome:
        ids, decision_cfg, experts = self.ctx.program_ids, self.ctx.decision, self.ctx.experts
        summaries, splits = self.summaries(done), self.splits(done)
        scorer = self.scorer(summaries)
        pools = build_pools(self.ctx, done, scorer)
        refs = pools.references

        to_ref = {pid: scorer.f1_matrix(summaries[pid], [refs[pid].text])[:, 0] for pid in ids}
        ssc_meta_cal = np.array([to_ref[pid][splits[pid][0]].mean() for pid in ids])
        ssc_meta_test = np.array([to_ref[pid][splits[pid][1]].mean() for pid in ids])
        alpha_meta_cal, alpha_meta_test = 1.0 - ssc_meta_cal, 1.0 - ssc_meta_test

        rule = get_rule(decision_cfg.rule)
        p1_cal = p1_test = None
        if "p1_alpha_cal" in rule.needs:
            ssc_cal, ssc_test = self.pairwise_ssc(scorer, summaries, splits)
            p1_cal, p1_test = 1.0 - ssc_cal, 1.0 - ssc_test
        scores = Scores(
            alpha_cal=alpha_meta_cal,
            alpha_test=alpha_meta_test,
            similarity_test=ssc_meta_test,
            p1_alpha_cal=p1_cal,
            p1_alpha_test=p1_test,
        )
        decision = apply_rule(rule.name, scores, decision_cfg)
        meta = decide(alpha_meta_cal, alpha_meta_test, decision_cfg.epsilon, decision_cfg.quantile)

        table = pd.DataFrame(
            {
                "ssc_meta_cal": ssc_meta_cal,
                "ssc_meta_test": ssc_meta_test,
                "alpha_meta_cal": alpha_meta_cal,
                "alpha_meta_test": alpha_meta_test,
                "reference_expert": [refs[pid].expert for pid in ids],
                "score": ssc_meta_test,
                "label": decision.labels,
            },
            index=pd.Index(ids, name="program_id"),
        )
        if p1_cal is not None and p1_test is not None:
            table.insert(4, "alpha_p1_cal", p1_cal)
            table.insert(5, "alpha_p1_test", p1_test)
        ssc_meta = table.drop(columns=["score", "label"]).reset_index()
        ssc_meta["reference_index"] = [refs[pid].sample_index for pid in ids]
        ssc_meta["reference_text"] = [refs[pid].text for pid in ids]

        rows = self.summary_rows(summaries, splits)
        for row in rows:
            row["f1_to_reference"] = float(to_ref[row["program_id"]][row["sample_index"]])
        metrics = {
            "p2.tau_meta": meta.tau,
            "p2.coverage_meta": meta.coverage,
            **decision.metrics,
            **{f"p2.{k}": v for k, v in decision.prefixed.items()},
            "scorer_loaded": float(scorer.model_loaded),
            "p2.high_share": float(np.mean(decision.labels)) if len(ids) else float("nan"),
            "p2.ssc_meta_test_mean": float(ssc_meta_test.mean()) if len(ids) else float("nan"),
        }
        return ProxyOutcome(
            table=table,
            params={
                "rule": rule.name,
                "quantile": decision_cfg.quantile,
                **decision.params,
                "experts": experts.name,
                "experts.m": experts.m,
                "experts.top_n": experts.top_n,
                "experts.reference_seed": experts.reference_seed,
            },
            metrics=metrics,
            records={"summaries": pd.DataFrame(rows), "expert_pool": pools.records, "ssc_meta": ssc_meta},
            specs={"scorer": scorer.spec(), "experts": expert_specs(experts)},
            scores=scores,
            quantile=decision_cfg.quantile,
        )
