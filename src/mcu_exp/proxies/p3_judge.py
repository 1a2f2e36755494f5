"""P3, LLM as judge: does an expert accept the target's summaries as correct?

For each program one judge is drawn from the expert pool with a generator seeded by
``(proxy.judge_seed, program id)``. The judge sees the program and each of the target's
``k`` summaries (all of them: P1's requests, so P1's cache entries) and answers CORRECT or
INCORRECT, ``proxy.r`` times under sampling (``r`` samples of one request, at most
``proxy.judge_max_new_tokens`` tokens each). Answers are parsed by
:func:`mcu_exp.scoring.parsing.parse_verdict`; unparseable answers are their own class,
counted in the metrics and never taken as INCORRECT.

Votes (see :mod:`mcu_exp.proxies.voting`): a summary's verdict is the majority of its
parseable judgments, a tie INCORRECT; the program is High iff strictly more than half of its
summaries with a verdict are CORRECT (a tie is Low). score = that share of CORRECT summaries.
"""

from __future__ import annotations

import dataclasses
import logging
from collections import Counter
from typing import Any

import numpy as np
import pandas as pd

from mcu_exp.llm import GenerationRequest, request_for
from mcu_exp.proxies.base import JobContext, ProxyOutcome
from mcu_exp.proxies.experts import Generators, check_experts, draw_index, expert_model_config
from mcu_exp.proxies.p1_consistency import generate_summaries
from mcu_exp.proxies.prompts import SYSTEM, judge_messages
from mcu_exp.proxies.voting import program_high, summary_verdict
from mcu_exp.scoring.parsing import CORRECT, INCORRECT, UNPARSEABLE, parse_verdict

log = logging.getLogger(__name__)


def assign_judges(program_ids: list[str], members: list[str], seed: int) -> dict[str, str]:
    """The judge (member label) of each program, drawn with ``(seed, program id)``."""
    return {pid: members[draw_index(len(members), seed, pid)] for pid in program_ids}


def judge_request(judge_cfg: Any, code: str, language: str, summary: str, r: int, seed: int,
                  max_new_tokens: int) -> GenerationRequest:
    """One request for ``r`` judgments of one summary."""
    system = judge_cfg.system_prompt if judge_cfg.system_prompt is not None else SYSTEM
    request = request_for(judge_cfg, judge_messages(code, language, summary, system=system), n=r, seed=seed)
    return dataclasses.replace(request, max_new_tokens=int(max_new_tokens))


def run(ctx: JobContext) -> ProxyOutcome:
    """Run P3 over ``ctx.program_ids``."""
    cfg = ctx.cfg
    experts = cfg.experts
    check_experts(experts)
    r = int(cfg.proxy.r)
    if r < 1:
        raise ValueError(f"proxy.r={r}: expected at least 1 judgment per summary")
    ids = ctx.program_ids
    summaries, target_generator = generate_summaries(ctx)
    generators = Generators(ctx.cache_dir, ctx.progress)
    generators.add(cfg.model, target_generator)

    members = {str(m.label): m for m in experts.members}
    judges = assign_judges(ids, list(members), int(cfg.proxy.judge_seed))
    verdicts: dict[tuple[str, int], list[tuple[str, str]]] = {}
    for label, member in members.items():
        judged = [pid for pid in ids if judges[pid] == label]
        if not judged:
            continue
        judge_cfg = expert_model_config(member)
        keys, requests = [], []
        for pid in judged:
            program = ctx.dataset.program(pid)
            for i, summary in enumerate(summaries[pid]):
                keys.append((pid, i))
                requests.append(judge_request(judge_cfg, program.code, program.language, summary, r,
                                              int(member.seed), int(cfg.proxy.judge_max_new_tokens)))
        for key, result in zip(keys, generators.get(judge_cfg).generate(requests)):
            verdicts[key] = [(text, parse_verdict(text)) for text in result.texts]

    judgment_rows, summary_rows, program_rows = [], [], []
    for pid in ids:
        per_summary = []
        for i in range(len(summaries[pid])):
            parsed = verdicts[(pid, i)]
            counts = Counter(v for _, v in parsed)
            verdict = summary_verdict(v for _, v in parsed)
            per_summary.append(verdict)
            summary_rows.append({"program_id": pid, "summary_index": i, "judge": judges[pid],
                                 "summary": summaries[pid][i], "n_correct": counts[CORRECT],
                                 "n_incorrect": counts[INCORRECT], "n_unparseable": counts[UNPARSEABLE],
                                 "verdict": verdict})
            judgment_rows.extend({"program_id": pid, "summary_index": i, "judge": judges[pid], "sample_index": j,
                                  "text": text, "verdict": v} for j, (text, v) in enumerate(parsed))
        label, score = program_high(per_summary)
        tally = Counter(per_summary)
        if tally[CORRECT] + tally[INCORRECT] == 0:
            log.warning("P3: no summary of %s got a parseable judgment; labelled Low", pid)
        program_rows.append({"program_id": pid, "judge": judges[pid], "n_summaries": len(per_summary),
                             "n_correct": tally[CORRECT], "n_incorrect": tally[INCORRECT],
                             "n_without_verdict": tally[UNPARSEABLE], "score": score, "label": label})

    table = pd.DataFrame(program_rows).set_index("program_id")
    judgments = pd.DataFrame(judgment_rows, columns=["program_id", "summary_index", "judge", "sample_index",
                                                     "text", "verdict"])
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
        "p3.high_share": float(np.mean(table["label"])) if len(table) else float("nan"),
        **generators.stats(),
    }
    for label in members:
        metrics[f"p3.judge_programs.{label}"] = float(sum(j == label for j in judges.values()))
    return ProxyOutcome(
        table=table,
        params={"tie_rule": "summary tie -> INCORRECT; program tie -> Low", "r": r,
                "judge_seed": int(cfg.proxy.judge_seed), "experts": str(experts.name)},
        metrics=metrics,
        records={"judgments": judgments, "verdicts": per_summary_frame,
                 "judges": pd.DataFrame({"program_id": ids, "judge": [judges[p] for p in ids]})},
        specs={"experts": [{"label": str(x.label), "model": str(x.model), "temperature": x.temperature,
                            "top_p": x.top_p, "seed": int(x.seed)} for x in experts.members]},
    )
