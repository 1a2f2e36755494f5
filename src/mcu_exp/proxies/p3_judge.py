"""P3, LLM as judge: does an expert accept the target's summaries as correct?

For each program one judge is drawn from the expert pool, from the program's ``judge``
stream under ``proxy.judge_seed`` (:mod:`mcu_exp.rng_streams`; independent of P2's r*). The
judge sees the program and each of the target's ``k`` summaries (all of them: P1's requests,
so P1's cache entries) and answers CORRECT or INCORRECT, ``proxy.r`` times under sampling
(``r`` samples of one request, at most ``proxy.judge_max_new_tokens`` tokens each, seeded
from the program's ``judgments:<summary index>`` stream under the judge's member ``seed``).
Answers are parsed by :func:`mcu_exp.scoring.parsing.parse_verdict`; an unparseable answer
is its own class, counted in the metrics and never a vote of its own.

Votes (see :mod:`mcu_exp.proxies.voting`): a summary's verdict is the majority of its
parseable judgments, a tie INCORRECT; the program is High iff strictly more than half of
*all* its summaries are CORRECT (a summary without a verdict counts as not CORRECT; a tie is
Low). score = CORRECT summaries / all summaries. A program with fewer than
``proxy.min_verdict_share`` of its summaries with a verdict is flagged (``too_few_verdicts``,
``p3.programs_too_few_verdicts`` and one warning).
"""

from __future__ import annotations

import dataclasses
import logging
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from mcu_exp.config import ModelConfig
from mcu_exp.llm import GenerationRequest, request_for
from mcu_exp.proxies.base import ProxyOutcome
from mcu_exp.proxies.experts import expert_problems, expert_specs
from mcu_exp.proxies.p1_consistency import SummaryConfig, SummaryProxy
from mcu_exp.proxies.prompts import judge_messages
from mcu_exp.proxies.stages import Stage, StageResults
from mcu_exp.proxies.voting import decided_share, program_high, summary_verdict, too_few
from mcu_exp.rng_streams import JUDGE, draw_index, judgments, program_seed
from mcu_exp.scoring.parsing import CORRECT, INCORRECT, UNPARSEABLE, parse_verdict

log = logging.getLogger(__name__)

JUDGMENTS = "P3 judgments"


@dataclass
class JudgeConfig(SummaryConfig):
    """P1's summaries, plus how each is judged."""

    name: str = "p3"
    r: int = 5  # judgments per summary
    judge_seed: int = 0  # which expert judges which program
    judge_max_new_tokens: int = 8  # room for the one-word verdict
    min_verdict_share: float = 0.5  # below this share of summaries with a verdict, a program is flagged


def assign_judges(program_ids: list[str], members: list[str], seed: int) -> dict[str, str]:
    """The judge (member label) of each program, drawn from its ``judge`` stream under ``seed``."""
    return {pid: members[draw_index(len(members), seed, pid, JUDGE)] for pid in program_ids}


def judgment_seed(member_seed: int, program_id: str, summary_index: int) -> int:
    """The seed of the judge request for one summary: its own stream under the member's seed."""
    return program_seed(member_seed, program_id, judgments(summary_index))


def judge_request(
    judge: ModelConfig, code: str, language: str, summary: str, r: int, seed: int, max_new_tokens: int
) -> GenerationRequest:
    """One request for ``r`` judgments of one summary."""
    request = request_for(judge, judge_messages(code, language, summary), n=r, seed=seed)
    return dataclasses.replace(request, max_new_tokens=int(max_new_tokens))


class JudgeProxy(SummaryProxy):
    """P3: label High iff the drawn expert judges most of the target's summaries CORRECT."""

    Config = JudgeConfig
    sections = frozenset({"experts"})

    def problems(self) -> Iterator[str]:
        yield from super().problems()
        yield from expert_problems(self.ctx.experts, needs_pool=False)
        if self.cfg.r < 1:
            yield f"proxy.r={self.cfg.r}: expected at least 1 judgment per summary"
        if not 0.0 <= self.cfg.min_verdict_share <= 1.0:
            yield f"proxy.min_verdict_share={self.cfg.min_verdict_share}: expected a share in [0, 1]"

    def judges(self) -> dict[str, str]:
        """The judge of each program."""
        return assign_judges(self.ctx.program_ids, list(self.ctx.experts.labelled()), self.cfg.judge_seed)

    def stages(self, done: StageResults) -> Iterator[Stage]:
        yield self.target_stage()
        summaries = self.summaries(done)
        judges = self.judges()
        for label, member in self.ctx.experts.labelled().items():
            judged = [pid for pid in self.ctx.program_ids if judges[pid] == label]
            if not judged:
                continue
            requests = []
            for pid in judged:
                program = self.ctx.dataset.program(pid)
                requests += [
                    judge_request(
                        member.model,
                        program.code,
                        program.language,
                        summary,
                        self.cfg.r,
                        judgment_seed(member.seed, pid, i),
                        self.cfg.judge_max_new_tokens,
                    )
                    for i, summary in enumerate(summaries[pid])
                ]
            yield Stage(f"{JUDGMENTS}:{label}", JUDGMENTS, label, member.model, requests)

    def verdicts(
        self, done: StageResults, summaries: dict[str, list[str]], judges: dict[str, str]
    ) -> dict[tuple[str, int], list[tuple[str, str]]]:
        """Every judgment of every summary, with its parsed verdict, keyed by (program, summary)."""
        verdicts: dict[tuple[str, int], list[tuple[str, str]]] = {}
        for label in self.ctx.experts.labelled():
            judged = [pid for pid in self.ctx.program_ids if judges[pid] == label]
            if not judged:
                continue
            keys = [(pid, i) for pid in judged for i in range(len(summaries[pid]))]
            for key, texts in zip(keys, done.texts(f"{JUDGMENTS}:{label}")):
                verdicts[key] = [(text, parse_verdict(text)) for text in texts]
        return verdicts

    def outcome(self, done: StageResults) -> ProxyOutcome:
        ids, experts = self.ctx.program_ids, self.ctx.experts
        summaries, judges = self.summaries(done), self.judges()
        verdicts = self.verdicts(done, summaries, judges)
        judgment_rows: list[dict[str, Any]] = []
        summary_rows: list[dict[str, Any]] = []
        program_rows: list[dict[str, Any]] = []
        for pid in ids:
            per_summary = []
            for i in range(len(summaries[pid])):
                parsed = verdicts[(pid, i)]
                counts = Counter(v for _, v in parsed)
                verdict = summary_verdict(v for _, v in parsed)
                per_summary.append(verdict)
                summary_rows.append(
                    {
                        "program_id": pid,
                        "summary_index": i,
                        "judge": judges[pid],
                        "summary": summaries[pid][i],
                        "n_correct": counts[CORRECT],
                        "n_incorrect": counts[INCORRECT],
                        "n_unparseable": counts[UNPARSEABLE],
                        "verdict": verdict,
                    }
                )
                judgment_rows.extend(
                    {
                        "program_id": pid,
                        "summary_index": i,
                        "judge": judges[pid],
                        "sample_index": j,
                        "text": text,
                        "verdict": v,
                    }
                    for j, (text, v) in enumerate(parsed)
                )
            label, score = program_high(per_summary)
            tally, share = Counter(per_summary), decided_share(per_summary)
            program_rows.append(
                {
                    "program_id": pid,
                    "judge": judges[pid],
                    "n_summaries": len(per_summary),
                    "n_correct": tally[CORRECT],
                    "n_incorrect": tally[INCORRECT],
                    "n_without_verdict": tally[UNPARSEABLE],
                    "verdict_share": share,
                    "too_few_verdicts": too_few(share, self.cfg.min_verdict_share),
                    "score": score,
                    "label": label,
                }
            )

        table = pd.DataFrame(program_rows).set_index("program_id")
        flagged = [pid for pid in ids if table.loc[pid, "too_few_verdicts"]]
        if flagged:
            log.warning(
                "P3: %d of %d programs have a verdict for less than %g of their summaries "
                "(too_few_verdicts in per_program.csv; first: %s)",
                len(flagged),
                len(ids),
                self.cfg.min_verdict_share,
                flagged[0],
            )
        judgments = pd.DataFrame(
            judgment_rows, columns=["program_id", "summary_index", "judge", "sample_index", "text", "verdict"]
        )
        per_summary_frame = pd.DataFrame(summary_rows)
        n_judgments = len(judgments)
        n_unparseable = int((judgments["verdict"] == UNPARSEABLE).sum())
        if n_unparseable:
            log.warning("P3: %d of %d judgments were unparseable (see judgments.csv)", n_unparseable, n_judgments)
        metrics: dict[str, float] = {
            "p3.judgments": float(n_judgments),
            "p3.unparseable": float(n_unparseable),
            "p3.unparseable_share": n_unparseable / n_judgments if n_judgments else float("nan"),
            "p3.summaries_correct_share": float((per_summary_frame["verdict"] == CORRECT).mean()),
            "p3.summaries_without_verdict": float((per_summary_frame["verdict"] == UNPARSEABLE).sum()),
            "p3.programs_without_verdict": float(((table["n_correct"] + table["n_incorrect"]) == 0).sum()),
            "p3.programs_too_few_verdicts": float(len(flagged)),
            "p3.high_share": float(np.mean(table["label"])) if len(table) else float("nan"),
        }
        for expert in experts.labelled():
            metrics[f"p3.judge_programs.{expert}"] = float(sum(j == expert for j in judges.values()))
        return ProxyOutcome(
            table=table,
            params={
                "tie_rule": "summary tie -> INCORRECT; no verdict -> not CORRECT; program tie -> Low",
                "r": self.cfg.r,
                "judge_seed": self.cfg.judge_seed,
                "min_verdict_share": self.cfg.min_verdict_share,
                "experts": experts.name,
            },
            metrics=metrics,
            records={
                "judgments": judgments,
                "verdicts": per_summary_frame,
                "judges": pd.DataFrame({"program_id": ids, "judge": [judges[p] for p in ids]}),
            },
            specs={"experts": expert_specs(experts)},
        )
