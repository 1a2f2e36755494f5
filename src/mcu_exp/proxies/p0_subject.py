"""P0, LLM as subject: the target model takes the humans' comprehension test.

Each multiple-choice question is shown with its options lettered A, B, C, … For ``q``
options and ``proxy.rotate=true`` it is asked in ``q`` runs that rotate the options
cyclically so that the correct one sits at each position exactly once (run ``j`` shows the
correct option at position ``j``); ``proxy.samples`` samples per run, each run's request
seeded from the program's ``answers:<question id>:<run>`` stream under ``proxy.sample_seed``
(:mod:`mcu_exp.rng_streams`; the rotations themselves are fixed, not drawn). Every sample is
parsed (:func:`mcu_exp.scoring.parsing.parse_choice`) and mapped back to the ORIGINAL option
index; the question's answer is the option chosen most often over all samples of all runs,
where the samples without an answer form a block the winner must strictly outnumber (they
count as not correct; a tie for the top leaves the question unanswered, i.e. wrong). A
question, or a program over all its samples, with fewer than ``proxy.min_answer_share`` of
its samples answered is flagged (``too_few_answers``, ``p0.questions_too_few_answers``,
``p0.programs_too_few_answers`` and one warning). A program is High iff at least half of
its questions are answered correctly (the ABU50 rule); score = the share answered correctly.

Programs without questions are dropped with a warning (and counted); the table holds only
programs with questions. Every question of the programs P0 labels needs its ``correct``
option: a dataset without those keys stops a P0 job before any model is called (one line
naming the count and the first keyless question's file and line). P0's labels are also the
reference P1–P3 are scored against (cross-proxy reliability): the job's ``reference``
section is a P0 config, which does not apply (one info line) when there are no questions or
some have no key.
"""

from __future__ import annotations

import dataclasses
import logging
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import pandas as pd

from mcu_exp.config import ModelConfig
from mcu_exp.data import Dataset, Question
from mcu_exp.llm import GenerationRequest, request_for
from mcu_exp.llm.cache_keys import canonical_json
from mcu_exp.proxies.base import Proxy, ProxyOutcome
from mcu_exp.proxies.prompts import question_messages
from mcu_exp.proxies.stages import Stage, StageResults
from mcu_exp.proxies.voting import plurality, too_few
from mcu_exp.rng_streams import answers as answer_stream
from mcu_exp.rng_streams import program_seed
from mcu_exp.scoring.parsing import option_letters, parse_choice

log = logging.getLogger(__name__)

ANSWERS = "P0 answers"
NO_QUESTIONS = (
    "P0 needs comprehension questions: set dataset.questions=FILE "
    "(e.g. dataset.questions=data/questions/scalabrino_demo.jsonl)"
)


@dataclass
class SubjectConfig:
    """How the target model takes the test."""

    name: str = "p0"
    samples: int = 5  # samples per question and rotation
    rotate: bool = True  # one run per option position of the correct answer
    answer_max_new_tokens: int = 8
    sample_seed: int = 0  # seeds each run's request (its own stream per program, question and run)
    min_answer_share: float = 0.5  # below this share of samples with an answer, a question/program is flagged


def rotation_orders(n_options: int, correct: int, rotate: bool = True) -> list[tuple[int, ...]]:
    """The option orders of a question's runs: ``order[pos]`` = original index shown at ``pos``.

    With ``rotate``, run ``j`` is the cyclic rotation that shows the correct option at
    position ``j`` (so it visits every position once); without, one run in the original order.
    """
    if not 0 <= correct < n_options:
        raise ValueError(f"correct option {correct} outside 0..{n_options - 1}")
    if not rotate:
        return [tuple(range(n_options))]
    return [tuple((pos - run + correct) % n_options for pos in range(n_options)) for run in range(n_options)]


@dataclass(frozen=True)
class AnswerJob:
    """One run of one question: the option order shown and its request."""

    question: Question
    run: int
    order: tuple[int, ...]
    request: GenerationRequest


def correct_option(question: Question) -> int:
    """The question's correct option index; ValueError naming where it was read when absent."""
    if question.correct is None:
        where = f" ({question.source})" if question.source else ""
        raise ValueError(
            f"question {question.program_id}/{question.question_id}{where} has no "
            "'correct' option index, which P0 needs"
        )
    return question.correct


def keyless_problem(dataset: Dataset, program_ids: Sequence[str]) -> str | None:
    """How many of the questions of ``program_ids`` have no correct option, and where the first
    one is; None when every one has it."""
    questions = [q for pid in program_ids for q in dataset.questions_for(pid)]
    keyless = [q for q in questions if q.correct is None]
    if not keyless:
        return None
    first = keyless[0].source or f"program {keyless[0].program_id}, question {keyless[0].question_id}"
    return f"{len(keyless)} of {len(questions)} questions have no 'correct' key (first: {first})"


def split_by_questions(dataset: Dataset, program_ids: Sequence[str]) -> tuple[list[str], list[str]]:
    """``(programs with questions, programs without)``, each in the given order."""
    asked = {q.program_id for q in dataset.questions}
    return [p for p in program_ids if p in asked], [p for p in program_ids if p not in asked]


def answer_jobs(
    model: ModelConfig, dataset: Dataset, program_ids: Sequence[str], proxy_cfg: SubjectConfig
) -> list[AnswerJob]:
    """Every run of every question of ``program_ids``: ``proxy.samples`` samples of at most
    ``proxy.answer_max_new_tokens`` tokens, each run seeded from its own stream under
    ``proxy.sample_seed``."""
    jobs = []
    for pid in program_ids:
        program = dataset.program(pid)
        for question in dataset.questions_for(pid):
            option_letters(len(question.options))
            for run, order in enumerate(
                rotation_orders(len(question.options), correct_option(question), bool(proxy_cfg.rotate))
            ):
                shown = [question.options[i] for i in order]
                messages = question_messages(program.code, program.language, question.text, shown)
                seed = program_seed(proxy_cfg.sample_seed, pid, answer_stream(question.question_id, run))
                request = request_for(model, messages, n=proxy_cfg.samples, seed=seed)
                request = dataclasses.replace(request, max_new_tokens=proxy_cfg.answer_max_new_tokens)
                jobs.append(AnswerJob(question, run, order, request))
    return jobs


def read_answers(job: AnswerJob, texts: Sequence[str]) -> list[dict[str, Any]]:
    """One record per sample: the letter chosen (None: unparseable) and the original option it means."""
    shown = [job.question.options[i] for i in job.order]
    letters = option_letters(len(shown))
    correct = correct_option(job.question)
    rows = []
    for j, text in enumerate(texts):
        pos = parse_choice(text, shown)
        original = None if pos is None else job.order[pos]
        rows.append(
            {
                "program_id": job.question.program_id,
                "question_id": job.question.question_id,
                "run": job.run,
                "correct_position": letters[job.order.index(correct)],
                "sample_index": j,
                "text": text,
                "letter": None if pos is None else letters[pos],
                "option": original,
                "is_correct": None if original is None else original == correct,
            }
        )
    return rows


def question_results(
    answers: pd.DataFrame, questions: Sequence[Question], min_answer_share: float = 0.5
) -> pd.DataFrame:
    """Per question: samples, parseable samples, votes, the answer (samples without one count
    against every option), whether it is right, and whether too few samples had an answer."""
    rows = []
    for q in questions:
        mine = answers[(answers["program_id"] == q.program_id) & (answers["question_id"] == q.question_id)]
        votes = [int(o) for o in mine["option"].dropna()]
        answer, tied = plurality(votes, abstentions=len(mine) - len(votes))
        share = len(votes) / len(mine) if len(mine) else 0.0
        correct = correct_option(q)
        hits = sum(v == correct for v in votes)  # a sample without an answer is not correct
        rows.append(
            {
                "program_id": q.program_id,
                "question_id": q.question_id,
                "n_samples": len(mine),
                "n_parseable": len(votes),
                "correct_option": correct,
                "votes": canonical_json({str(k): v for k, v in sorted(Counter(votes).items())}),
                "answer": answer,
                "tied": tied,
                "sample_accuracy": hits / len(mine) if len(mine) else float("nan"),
                "answer_share": share,
                "too_few_answers": too_few(share, min_answer_share),
                "answered_correctly": answer == correct,
            }
        )
    return pd.DataFrame(rows).astype({"answer": "Int64"})


def program_table(
    per_question: pd.DataFrame, program_ids: Sequence[str], min_answer_share: float = 0.5
) -> pd.DataFrame:
    """Per program: questions, correctly answered, score = their share, label = score ≥ 1/2,
    and the share of its samples (over all its questions) with an answer, flagged below
    ``min_answer_share``."""
    grouped = per_question.groupby("program_id", sort=False)
    table = pd.DataFrame({"n_questions": grouped.size(), "n_correct": grouped["answered_correctly"].sum().astype(int)})
    samples = grouped["n_samples"].sum()
    table["answer_share"] = (grouped["n_parseable"].sum() / samples.where(samples > 0)).fillna(0.0)
    table = table.reindex(list(program_ids))
    table["too_few_answers"] = [too_few(share, min_answer_share) for share in table["answer_share"]]
    table["score"] = table["n_correct"] / table["n_questions"]
    table["label"] = (table["score"] >= 0.5).astype(int)
    table.index.name = "program_id"
    return table


def position_metrics(answers: pd.DataFrame, n_letters: int) -> dict[str, float]:
    """Position bias: the share of each letter among parseable answers, and accuracy by the
    correct option's position."""
    letters = option_letters(n_letters)
    parsed = answers.dropna(subset=["letter"])
    metrics = {}
    for letter in letters:
        share = float((parsed["letter"] == letter).mean()) if len(parsed) else float("nan")
        metrics[f"p0.letter_share.{letter}"] = share
        at = parsed[parsed["correct_position"] == letter]
        accuracy = float(at["is_correct"].astype(bool).mean()) if len(at) else float("nan")
        metrics[f"p0.accuracy_when_correct_at.{letter}"] = accuracy
    return metrics


class SubjectProxy(Proxy):
    """P0: the target model answers each program's multiple-choice questions."""

    Config = SubjectConfig
    sections: ClassVar[frozenset[str]] = frozenset()  # the model alone
    _told_keyless: bool = False  # whether applies() has logged the missing keys

    def problems(self) -> Iterator[str]:
        if self.cfg.samples < 1:
            yield f"proxy.samples={self.cfg.samples}: expected at least 1 sample per run"
        if not 0.0 <= self.cfg.min_answer_share <= 1.0:
            yield f"proxy.min_answer_share={self.cfg.min_answer_share}: expected a share in [0, 1]"

    def applies(self) -> bool:
        """Whether some programs have questions and every one of their questions has its key
        (one info line, once, when keys are missing: a job then skips P0 as its reference)."""
        kept = split_by_questions(self.ctx.dataset, self.ctx.program_ids)[0]
        problem = keyless_problem(self.ctx.dataset, kept)
        if problem and not self._told_keyless:
            self._told_keyless = True
            log.info("P0 does not apply: %s; it needs the correct option of every question", problem)
        return bool(kept) and problem is None

    def jobs(self) -> tuple[list[AnswerJob], list[str], list[str]]:
        """The answer runs, the programs with questions and those without."""
        kept, dropped = split_by_questions(self.ctx.dataset, self.ctx.program_ids)
        if not kept:
            raise ValueError(f"{NO_QUESTIONS}; none of the {len(self.ctx.program_ids)} programs has any")
        problem = keyless_problem(self.ctx.dataset, kept)
        if problem:
            raise ValueError(
                f"P0 needs the correct option of every question: {problem}; add the keys "
                "or run P1-P3, which do not use questions"
            )
        return answer_jobs(self.ctx.model, self.ctx.dataset, kept, self.cfg), kept, dropped

    def stages(self, done: StageResults) -> Iterator[Stage]:
        jobs, _, _ = self.jobs()
        yield Stage(ANSWERS, ANSWERS, self.ctx.model.name, self.ctx.model, [job.request for job in jobs])

    def outcome(self, done: StageResults) -> ProxyOutcome:
        jobs, kept, dropped = self.jobs()
        if dropped:
            log.warning(
                "P0: %d of %d programs have no questions and are left out (first: %s)",
                len(dropped),
                len(self.ctx.program_ids),
                dropped[0],
            )
        columns = [
            "program_id",
            "question_id",
            "run",
            "correct_position",
            "sample_index",
            "text",
            "letter",
            "option",
            "is_correct",
        ]
        texts = done.texts(ANSWERS)
        answers = pd.DataFrame(
            [row for job, t in zip(jobs, texts) for row in read_answers(job, t)], columns=columns
        ).astype({"option": "Int64"})
        questions = [q for pid in kept for q in self.ctx.dataset.questions_for(pid)]
        minimum = self.cfg.min_answer_share
        per_question = question_results(answers, questions, minimum)
        table = program_table(per_question, kept, minimum)
        flagged = [pid for pid in kept if table.loc[pid, "too_few_answers"]]
        if flagged:
            log.warning(
                "P0: %d of %d programs have an answer for less than %g of their samples "
                "(too_few_answers in per_program.csv; first: %s)",
                len(flagged),
                len(kept),
                minimum,
                flagged[0],
            )
        n_samples = len(answers)
        n_unparseable = int(answers["letter"].isna().sum())
        if n_unparseable:
            log.warning("P0: %d of %d answers were unparseable (see answers.csv)", n_unparseable, n_samples)
        metrics = {
            "p0.programs": float(len(kept)),
            "p0.programs_without_questions": float(len(dropped)),
            "p0.questions": float(len(per_question)),
            "p0.samples": float(n_samples),
            "p0.unparseable": float(n_unparseable),
            "p0.unparseable_share": n_unparseable / n_samples if n_samples else float("nan"),
            "p0.tied_questions": float(per_question["tied"].sum()),
            "p0.questions_correct_share": float(per_question["answered_correctly"].mean()),
            "p0.sample_accuracy": float(answers["is_correct"].eq(True).mean()) if n_samples else float("nan"),
            "p0.questions_too_few_answers": float(per_question["too_few_answers"].sum()),
            "p0.programs_too_few_answers": float(len(flagged)),
            "p0.high_share": float(table["label"].mean()),
            **position_metrics(answers, max(len(q.options) for q in questions)),
        }
        labels = table[["label", "score"]].reset_index()
        return ProxyOutcome(
            table=table,
            params={
                "samples": self.cfg.samples,
                "rotate": self.cfg.rotate,
                "min_answer_share": minimum,
                "tie_rule": "no answer -> not correct; question tie -> unanswered (wrong); "
                "program High iff >= half correct",
            },
            metrics=metrics,
            records={"answers": answers, "p0_questions": per_question, "p0_labels": labels},
        )
