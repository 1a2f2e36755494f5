"""P1, semantic self-consistency: does the model summarise a program the same way each time?

For each program the target model writes ``k`` intent summaries (the request seeded from
the program's own ``target summaries`` stream under ``proxy.sample_seed``); a split drawn
from its ``split`` stream under ``proxy.split_seed`` gives ``k_cal`` calibration and
``k - k_cal`` test summaries (streams: :mod:`mcu_exp.rng_streams`). SSC = mean pairwise BERTScore-F1,
α = 1 − SSC. τ = the (1 − ε) quantile of α_cal over programs; High iff α_test ≤ τ.

``proxy.measure`` picks another uncertainty of the same k × k BERTScore matrices as α
(:mod:`mcu_exp.measures`: ``ssc`` (the default, α = 1 − SSC), ``eigv``, ``deg``, ``ecc``, or
one a plugin registered), ``proxy.measure_params`` sets its parameters (e.g. ``ecc``'s
``threshold``); every
run also puts each registered measure's score (−uncertainty of the test subset) in the
per-program table as ``measure.<name>``. The matrices are scored once, with exactly the
pairs SSC needs (i < j), so no measure costs an encoder pass or a score the cache lacks.
Every measure is taken at the run's common size m₀, its smallest subset
(:mod:`mcu_exp.measures.sizing`), so α_cal and α_test share one scale when k_cal ≠ k − k_cal
or a program lost failed samples; with equal subsets (the default) nothing is rescaled.

:class:`SummaryProxy` holds what P1, P2 and P3 share: the target's summaries (one stage, so
one set of cache entries for all three) and their calibration/test split.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from mcu_exp.calibration import Scores, apply_rule
from mcu_exp.llm.factory import backend_identity
from mcu_exp.measures import MEASURES, common_size, mean_pairwise, measure_column, sized
from mcu_exp.proxies.base import Proxy, ProxyOutcome
from mcu_exp.proxies.prompts import TEMPLATES
from mcu_exp.proxies.stages import TARGET_SUMMARIES, Stage, StageResults, summary_requests
from mcu_exp.rng_streams import SPLIT, program_rng
from mcu_exp.scoring import PairScorer, build_scorer


@dataclass
class SummaryConfig:
    """The target's summaries: how many, how they are split, seeded and prompted."""

    name: str = "p1"
    k: int = 20  # summaries per program
    k_cal: int = 10  # of which calibration; the rest are test
    split_seed: int = 0
    sample_seed: int = 0  # seeds each program's generation request (its own stream)
    prompt: str = "summarize_intent"  # key into mcu_exp.proxies.prompts.TEMPLATES


@dataclass
class ConsistencyConfig(SummaryConfig):
    """P1's settings: the summaries, and the uncertainty measure that gives α."""

    measure: str = "ssc"  # a name in mcu_exp.measures.MEASURES: ssc | eigv | deg | ecc | a plugin's
    measure_params: dict[str, Any] = field(default_factory=dict)  # the measure's parameters (its defaults otherwise)


def similarity_matrices(scorer: PairScorer, groups: list[list[str]]) -> list[np.ndarray]:
    """The symmetric similarity matrix (BERTScore-F1 by default) of each group's texts,
    diagonal 1, from the pairs i < j only: the same pairs, in the same single batched call,
    as ``scorer.ssc_many``, so a job costs no more encoder work or score-cache entries than
    SSC alone, and a job whose SSC pairs are cached never loads the encoder."""
    for g, texts in enumerate(groups):
        if len(texts) < 2:
            raise ValueError(f"SSC needs at least 2 texts per group; group {g} has {len(texts)}")
    return scorer.pairwise_many(groups)


def split_indices(program_id: str, k: int, k_cal: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A seeded calibration/test split of sample indices ``0..k-1`` for one program.

    Drawn from the program's ``split`` stream under ``seed``, so a program's split does not
    change when other programs are added, dropped or reordered.
    """
    perm = program_rng(seed, program_id, SPLIT).permutation(k)
    return np.sort(perm[:k_cal]), np.sort(perm[k_cal:])


class SummaryProxy(Proxy):
    """A proxy over the target model's ``k`` summaries per program (P1, P2, P3)."""

    Config = SummaryConfig

    def problems(self) -> Iterator[str]:
        c = self.cfg
        if c.k_cal < 2 or c.k - c.k_cal < 2:
            yield (
                f"proxy.k={c.k}, proxy.k_cal={c.k_cal}: the calibration and test subsets each need at least 2 summaries"
            )
        if c.prompt not in TEMPLATES:
            yield f"proxy.prompt={c.prompt!r}: expected one of {', '.join(TEMPLATES)}"

    def target_stage(self) -> Stage:
        """The target model's ``k`` summaries of every program."""
        requests = summary_requests(
            self.ctx.model, self.ctx.dataset, self.ctx.program_ids, self.cfg.prompt, self.cfg.k, self.cfg.sample_seed
        )
        return Stage(TARGET_SUMMARIES, TARGET_SUMMARIES, self.ctx.model.name, self.ctx.model, requests)

    def summaries(self, done: StageResults) -> dict[str, list[str]]:
        """The target's summaries by program id."""
        return dict(zip(self.ctx.program_ids, done.texts(TARGET_SUMMARIES)))

    def splits(self, done: StageResults | None = None) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Each program's (calibration, test) positions in its list of summaries. With
        ``done``, samples that failed (left out of the texts, within
        ``generation.max_failed_share``) are left out of their subset; a subset left with
        fewer than 2 summaries is a one-line error."""
        c = self.cfg
        out = {pid: split_indices(pid, c.k, c.k_cal, c.split_seed) for pid in self.ctx.program_ids}
        if done is None:
            return out
        for pid, kept in zip(self.ctx.program_ids, done.kept(TARGET_SUMMARIES)):
            if len(kept) == c.k:
                continue
            position = {index: pos for pos, index in enumerate(kept)}
            parts = tuple(np.array([position[i] for i in part if i in position], dtype=int) for part in out[pid])
            if min(len(part) for part in parts) < 2:
                raise ValueError(
                    f"program {pid}: only {len(kept)} of {c.k} summaries are usable, too few for its "
                    "calibration and test subsets (2 each); rerun to retry the failed samples, "
                    "or lower generation.max_failed_share"
                )
            out[pid] = (parts[0], parts[1])
        return out

    def scorer(self, summaries: dict[str, list[str]]) -> PairScorer:
        """The BERTScore scorer (idf weights, when asked for, from the target's summaries)."""
        ids = self.ctx.program_ids
        idf_sents = [t for pid in ids for t in summaries[pid]] if self.ctx.scorer.idf else None
        return build_scorer(
            self.ctx.scorer, cache=self.ctx.score_cache, idf_sents=idf_sents, progress=self.ctx.progress
        )

    def summary_rows(
        self, summaries: dict[str, list[str]], splits: dict[str, tuple[np.ndarray, np.ndarray]]
    ) -> list[dict[str, Any]]:
        """One record per summary: program, sample index, subset and text."""
        rows = []
        for pid in self.ctx.program_ids:
            cal = set(splits[pid][0].tolist())
            for i, text in enumerate(summaries[pid]):
                rows.append(
                    {"program_id": pid, "sample_index": i, "subset": "cal" if i in cal else "test", "text": text}
                )
        return rows

    def pairwise_ssc(
        self, scorer: PairScorer, summaries: dict[str, list[str]], splits: dict[str, tuple[np.ndarray, np.ndarray]]
    ) -> tuple[np.ndarray, np.ndarray]:
        """P1's SSC (mean pairwise BERTScore-F1) of each program's calibration and test summaries."""
        ids = self.ctx.program_ids
        groups = [[summaries[pid][i] for i in splits[pid][s]] for s in (0, 1) for pid in ids]
        ssc = np.asarray(scorer.ssc_many(groups), dtype=float)
        return ssc[: len(ids)], ssc[len(ids) :]


class ConsistencyProxy(SummaryProxy):
    """P1: label High iff the test summaries agree with each other as well as calibrated."""

    Config = ConsistencyConfig
    calibrated = True
    sections = frozenset({"scorer", "decision"})
    offers = ("alpha_cal", "alpha_test")

    def problems(self) -> Iterator[str]:
        yield from super().problems()
        if self.cfg.measure not in MEASURES:
            yield MEASURES.unknown_message(self.cfg.measure)
            return
        try:
            MEASURES[self.cfg.measure].settings(self.cfg.measure_params)
        except ValueError as exc:
            yield str(exc)

    def stages(self, done: StageResults) -> Iterator[Stage]:
        yield self.target_stage()

    def matrices(
        self, scorer: PairScorer, summaries: dict[str, list[str]], splits: dict[str, tuple[np.ndarray, np.ndarray]]
    ) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Each program's similarity matrix (BERTScore-F1 by default) of its calibration and of its
        test summaries."""
        ids = self.ctx.program_ids
        groups = [[summaries[pid][i] for i in splits[pid][s]] for s in (0, 1) for pid in ids]
        found = similarity_matrices(scorer, groups)
        return found[: len(ids)], found[len(ids) :]

    def outcome(self, done: StageResults) -> ProxyOutcome:
        summaries, splits = self.summaries(done), self.splits(done)
        scorer = self.scorer(summaries)
        cal, test = self.matrices(scorer, summaries, splits)
        ssc_cal = np.array([mean_pairwise(m) for m in cal])
        ssc_test = np.array([mean_pairwise(m) for m in test])
        size = common_size([*cal, *test])
        chosen, params = self.cfg.measure, dict(self.cfg.measure_params)
        alpha_cal = sized(chosen, cal, size, params)
        alpha_test = sized(chosen, test, size, params)
        scores = Scores(alpha_cal=alpha_cal, alpha_test=alpha_test)
        decision = apply_rule(self.ctx.decision.rule, scores, self.ctx.decision)
        table = pd.DataFrame(
            {
                "ssc_cal": ssc_cal,
                "ssc_test": ssc_test,
                "alpha_cal": alpha_cal,
                "alpha_test": alpha_test,
                "score": -alpha_test,
                "label": decision.labels,
                **{
                    measure_column(name): -sized(name, test, size, params if name == chosen else None)
                    for name in MEASURES
                },
            },
            index=pd.Index(self.ctx.program_ids, name="program_id"),
        )
        return ProxyOutcome(
            table=table,
            params={**decision.params, "measure_size": size},
            metrics={**decision.metrics, "scorer_loaded": float(scorer.model_loaded)},
            records={"summaries": pd.DataFrame(self.summary_rows(summaries, splits))},
            specs={"scorer": scorer.spec(), "generator": backend_identity(self.ctx.model)},
            scores=scores,
            quantile=self.ctx.decision.quantile,
        )
