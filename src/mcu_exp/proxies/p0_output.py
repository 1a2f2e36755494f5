"""p0_output, the subjects' own task: the target model says what each program prints.

The atoms study asked its subjects "what does this program print?" and judged each answer
against an exact key (``Program.meta["answer"]``). This proxy asks the target model the same
question (``proxy.question``, shown after the program by
:func:`~mcu_exp.proxies.prompts.output_messages`) in one request of ``proxy.samples`` samples
per program, seeded from the program's ``outputs`` stream under ``proxy.sample_seed``
(:mod:`mcu_exp.rng_streams`), through the generation cache like every stage. Each sample and
the key are normalised by :func:`~mcu_exp.scoring.outputs.normalise_output` (surrounding
whitespace, code fence and quotes removed; whitespace runs made one space) and compared
exactly. Per program:

- ``score`` = the model's accuracy: the share of its ``proxy.samples`` samples that are right
  (a failed sample, left out within ``generation.max_failed_share``, counts as not right), the
  continuous score set against the humans' accuracy;
- ``label`` High iff the accuracy ≥ ``proxy.threshold`` (default 1/2: the model, like a
  subject under ABU50, gets it right at least half the time);
- its answer distribution (``output_answers.csv``: program, normalised answer, count, right).

A program without an answer key is left out with a warning and counted
(``p0_output.programs_without_key``). When the dataset keeps its readers' own answers
(evaluations column ``answer``, as atoms' loader does), the job also reports the **error
alignment** of the model's wrong answers with the humans' (:mod:`mcu_exp.evaluation.error_alignment`;
humans' wrong answers are those the study judged wrong, normalised the same way): the
``error_alignment.csv`` table, the ``errors.*`` metrics and a few lines at the end of the job.
"""

from __future__ import annotations

import dataclasses
import logging
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import pandas as pd

from mcu_exp.data import Dataset
from mcu_exp.evaluation.error_alignment import error_alignment
from mcu_exp.llm import GenerationRequest, request_for
from mcu_exp.proxies.base import Proxy, ProxyOutcome
from mcu_exp.proxies.prompts import output_messages
from mcu_exp.proxies.stages import Stage, StageResults
from mcu_exp.rng_streams import OUTPUTS, program_seed
from mcu_exp.scoring.outputs import normalise_output, output_key

log = logging.getLogger(__name__)

OUTPUT_ANSWERS = "output answers"
SAMPLE_COLUMNS = ("program_id", "sample_index", "text", "answer", "is_correct")


@dataclass
class OutputConfig:
    """How the target model takes the subjects' output-prediction test."""

    name: str = "p0_output"
    question: str = "What does this C program print? Answer with the exact output only."
    samples: int = 10  # samples per program
    answer_max_new_tokens: int = 32
    sample_seed: int = 0  # seeds each program's request (its own stream per program)
    threshold: float = 0.5  # High iff the share of right samples is at least this
    error_resamples: int = 2000  # program bootstrap of the error alignment
    error_permutations: int = 2000  # shuffled-programs null of the error alignment
    error_seed: int = 0


def answer_keys(dataset: Dataset, program_ids: Sequence[str]) -> tuple[dict[str, str], list[str]]:
    """``({program: normalised key}, [programs without a key])``, each in the given order."""
    keys, keyless = {}, []
    for pid in program_ids:
        key = output_key(dataset.program(pid).meta.get("answer"))
        if key is None:
            keyless.append(pid)
        else:
            keys[pid] = key
    return keys, keyless


def output_requests(
    model: Any, dataset: Dataset, program_ids: Sequence[str], cfg: OutputConfig
) -> list[GenerationRequest]:
    """One request per program: ``cfg.samples`` answers of at most ``cfg.answer_max_new_tokens``
    tokens, seeded from the program's own stream."""
    requests = []
    for pid in program_ids:
        program = dataset.program(pid)
        messages = output_messages(program.code, program.language, cfg.question)
        request = request_for(model, messages, n=cfg.samples, seed=program_seed(cfg.sample_seed, pid, OUTPUTS))
        requests.append(dataclasses.replace(request, max_new_tokens=cfg.answer_max_new_tokens))
    return requests


def sample_rows(keys: dict[str, str], texts: Sequence[Sequence[str]]) -> pd.DataFrame:
    """One row per sample: program, sample index, raw text, normalised answer, whether right."""
    rows = [
        {"program_id": pid, "sample_index": j, "text": text, "answer": normalise_output(text)}
        for pid, samples in zip(keys, texts)
        for j, text in enumerate(samples)
    ]
    frame = pd.DataFrame(rows, columns=list(SAMPLE_COLUMNS[:-1]))
    frame["is_correct"] = [answer == keys[pid] for pid, answer in zip(frame["program_id"], frame["answer"])]
    return frame


def answer_distribution(samples: pd.DataFrame) -> pd.DataFrame:
    """Per program and normalised answer: how many samples gave it, and whether it is right."""
    grouped = samples.groupby(["program_id", "answer", "is_correct"], sort=False).size()
    return grouped.rename("count").reset_index()[["program_id", "answer", "count", "is_correct"]]


def wrong_counts(frame: pd.DataFrame, program_ids: Sequence[str]) -> dict[str, Counter[str]]:
    """Each program's wrong answers (rows with ``is_correct`` false) counted by ``answer``."""
    out: dict[str, Counter[str]] = {pid: Counter() for pid in program_ids}
    for pid, answer in frame.loc[~frame["is_correct"].astype(bool), ["program_id", "answer"]].itertuples(index=False):
        if pid in out:
            out[pid][answer] += 1
    return out


def human_answers(dataset: Dataset, program_ids: Sequence[str]) -> pd.DataFrame | None:
    """The readers' answers (normalised) with the study's own judgement (``is_correct``: all of
    the evaluation's questions right), or None when the dataset keeps no answer text."""
    ev = dataset.evaluations
    if "answer" not in ev.columns:
        return None
    kept = ev[ev["program_id"].isin(set(program_ids)) & ev["answer"].notna()]
    right = ((kept["total"] > 0) & (kept["correct"] >= kept["total"])).fillna(False)  # unknown: not right
    return pd.DataFrame(
        {
            "program_id": kept["program_id"].astype(str).to_numpy(),
            "answer": [normalise_output(str(a)) for a in kept["answer"]],
            "is_correct": right.astype(bool).to_numpy(),
        }
    )


class OutputProxy(Proxy):
    """p0_output: the target model answers the subjects' "what does this program print?"."""

    Config = OutputConfig
    sections: ClassVar[frozenset[str]] = frozenset()  # the model alone

    def problems(self) -> Iterator[str]:
        if self.cfg.samples < 1:
            yield f"proxy.samples={self.cfg.samples}: expected at least 1 sample per program"
        if not 0.0 <= self.cfg.threshold <= 1.0:
            yield f"proxy.threshold={self.cfg.threshold}: expected a share in [0, 1]"
        if self.cfg.error_resamples < 1 or self.cfg.error_permutations < 1:
            yield (
                f"proxy.error_resamples={self.cfg.error_resamples}, proxy.error_permutations="
                f"{self.cfg.error_permutations}: expected at least 1 each"
            )
        if not str(self.cfg.question).strip():
            yield "proxy.question is empty: expected the question the subjects were asked"

    def keys(self) -> tuple[dict[str, str], list[str]]:
        """The programs' answer keys and the programs without one; a one-line error when none has one."""
        keys, keyless = answer_keys(self.ctx.dataset, self.ctx.program_ids)
        if not keys:
            raise ValueError(
                f"p0_output needs each program's expected output in Program.meta['answer'] "
                f"(dataset=atoms has it; a custom dataset: an 'answer' column in programs.csv); "
                f"none of the {len(self.ctx.program_ids)} programs has one"
            )
        return keys, keyless

    def applies(self) -> bool:
        return bool(answer_keys(self.ctx.dataset, self.ctx.program_ids)[0])

    def stages(self, done: StageResults) -> Iterator[Stage]:
        keys, _ = self.keys()
        requests = output_requests(self.ctx.model, self.ctx.dataset, list(keys), self.cfg)
        yield Stage(OUTPUT_ANSWERS, OUTPUT_ANSWERS, self.ctx.model.name, self.ctx.model, requests)

    def outcome(self, done: StageResults) -> ProxyOutcome:
        keys, keyless = self.keys()
        if keyless:
            log.warning(
                "p0_output: %d of %d programs have no answer key and are left out (first: %s)",
                len(keyless),
                len(self.ctx.program_ids),
                keyless[0],
            )
        ids = list(keys)
        samples = sample_rows(keys, done.texts(OUTPUT_ANSWERS))
        right = samples.groupby("program_id", sort=False)["is_correct"].sum().reindex(ids, fill_value=0)
        table = pd.DataFrame(
            {"key": [keys[pid] for pid in ids], "n_samples": samples.groupby("program_id").size().reindex(ids)},
            index=pd.Index(ids, name="program_id"),
        )
        table["n_samples"] = table["n_samples"].fillna(0).astype(int)
        table["n_correct"] = right.astype(int)
        table["score"] = table["n_correct"] / self.cfg.samples
        table["label"] = (table["score"] >= self.cfg.threshold).astype(int)
        n = len(samples)
        metrics = {
            "p0_output.programs": float(len(ids)),
            "p0_output.programs_without_key": float(len(keyless)),
            "p0_output.samples": float(n),
            "p0_output.sample_accuracy": float(samples["is_correct"].mean()) if n else float("nan"),
            "p0_output.empty_answers": float((samples["answer"] == "").sum()),
            "p0_output.high_share": float(table["label"].mean()),
        }
        records = {"output_samples": samples, "output_answers": answer_distribution(samples)}
        report: list[str] = []
        humans = human_answers(self.ctx.dataset, ids)
        if humans is None:
            log.info(
                "p0_output: the dataset keeps no readers' answers (evaluations column 'answer'): no error alignment"
            )
        else:
            found = error_alignment(
                wrong_counts(samples, ids),
                wrong_counts(humans, ids),
                self.cfg.error_resamples,
                self.cfg.error_permutations,
                self.cfg.error_seed,
            )
            metrics.update(found.metrics)
            records["error_alignment"] = found.table
            report = found.lines()
        return ProxyOutcome(
            table=table,
            params={
                "samples": self.cfg.samples,
                "threshold": self.cfg.threshold,
                "normalisation": "strip whitespace, code fence, quotes; whitespace runs -> one space; exact",
                "rule": f"High iff share of right samples >= {self.cfg.threshold:g}",
            },
            metrics=metrics,
            records=records,
            report=report,
        )
