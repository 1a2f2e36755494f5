"""Typed records for programs, human evaluations and comprehension questions.

Every loader returns a :class:`Dataset`, so the rest of the pipeline never sees a file format.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import pandas as pd

from mcu_exp.data.duplicates import Duplicates, collapse_duplicates

GROUPS: tuple[str, ...] = ("bachelor", "master", "phd", "professional")
"""Human reader subgroups, in order of experience."""

EVALUATION_COLUMNS: tuple[str, ...] = (
    "program_id",
    "participant_id",
    "correct",
    "total",
    "perceived",
    "group",
)


class DatasetError(ValueError):
    """A dataset is missing, malformed or inconsistent; the message names the file and line."""


class DatasetWarning(UserWarning):
    """A dataset is usable but has something the user should know about."""


@dataclass(frozen=True)
class Program:
    """One program shown to humans and models."""

    id: str
    language: str
    code: str
    meta: dict[str, Any] = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class Question:
    """A multiple-choice comprehension question with exactly one correct option (0-based).

    ``correct`` is None when the dataset does not give the key (proxy P0, which scores the
    answers, then refuses to run; P1–P3 never read questions). ``source`` says where the
    question was read (``file:line``) for messages; it takes no part in equality.
    """

    program_id: str
    question_id: str
    text: str
    options: tuple[str, ...]
    correct: int | None
    source: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if len(self.options) < 2:
            raise DatasetError(
                f"question {self.program_id}/{self.question_id}: expected at least 2 options, got {len(self.options)}"
            )
        if self.correct is not None and not 0 <= self.correct < len(self.options):
            raise DatasetError(
                f"question {self.program_id}/{self.question_id}: correct option index "
                f"{self.correct} is outside 0..{len(self.options) - 1}"
            )


def natural_key(text: str) -> tuple[Any, ...]:
    """Sort key that orders digit runs by value: ``2-X`` before ``10-X``."""
    parts = re.split(r"(\d+)", text)
    return (*tuple(int(p) if i % 2 else p.lower() for i, p in enumerate(parts)), text)


def evaluations_frame(
    program_id: Sequence[str],
    participant_id: Sequence[str],
    correct: Sequence[int],
    total: Sequence[int],
    perceived: Sequence[bool | None] | None = None,
    group: Sequence[str | None] | None = None,
    answer: Sequence[str | None] | None = None,
) -> pd.DataFrame:
    """Build the evaluations table with the canonical columns and nullable dtypes; ``answer``
    (the reader's own answer text, for datasets whose task has a free answer, like atoms') adds
    the optional column of that name."""
    n = len(program_id)
    frame = pd.DataFrame(
        {
            "program_id": pd.array(list(program_id), dtype="string"),
            "participant_id": pd.array(list(participant_id), dtype="string"),
            "correct": pd.array(list(correct), dtype="Int64"),
            "total": pd.array(list(total), dtype="Int64"),
            "perceived": pd.array(list(perceived) if perceived is not None else [None] * n, dtype="boolean"),
            "group": pd.array(list(group) if group is not None else [None] * n, dtype="string"),
        }
    )
    if answer is not None:
        frame["answer"] = pd.array(list(answer), dtype="string")
    return frame


@dataclass(frozen=True, eq=False)
class Dataset:
    """Programs, one row per (participant, program) evaluation, and optional questions.

    ``evaluations`` columns: ``program_id, participant_id, correct, total`` (questions answered
    correctly out of the ``total`` asked; ``total`` 0: the participant was not asked any),
    ``perceived`` (nullable boolean: said they understood) and ``group`` (nullable string, one
    of :data:`GROUPS`); a loader may add ``answer`` (nullable string: what the reader answered,
    where the task has a free answer; atoms keeps it for error alignment). Repeated (participant, program) rows are collapsed on construction (see
    :mod:`mcu_exp.data.duplicates`), with one :class:`DatasetWarning`; ``duplicates`` records
    them. ``evaluations_file`` names the file they came from in messages.
    """

    name: str
    programs: list[Program]
    evaluations: pd.DataFrame
    questions: list[Question]
    source: str
    evaluations_file: str = ""
    duplicates: Duplicates = field(default_factory=Duplicates)

    def __post_init__(self) -> None:
        missing = [c for c in EVALUATION_COLUMNS if c not in self.evaluations.columns]
        if missing:
            raise DatasetError(f"dataset {self.name}: evaluations lack columns {missing}")
        collapsed, found = collapse_duplicates(self.evaluations)
        if len(found):
            where = self.evaluations_file or f"dataset {self.name}"
            warnings.warn(
                found.describe(where, len(self.evaluations), len(collapsed)),
                DatasetWarning,
                stacklevel=4,
            )
            object.__setattr__(self, "evaluations", collapsed)
            object.__setattr__(self, "duplicates", self.duplicates.plus(found))

    @cached_property
    def _by_id(self) -> dict[str, Program]:
        return {p.id: p for p in self.programs}

    @property
    def program_ids(self) -> list[str]:
        """Program ids in dataset order."""
        return [p.id for p in self.programs]

    def program(self, program_id: str) -> Program:
        """The program with this id; ``KeyError`` naming it when absent."""
        try:
            return self._by_id[program_id]
        except KeyError:
            raise KeyError(f"dataset {self.name} has no program {program_id!r}") from None

    def questions_for(self, program_id: str) -> list[Question]:
        """The comprehension questions of one program, in file order."""
        return [q for q in self.questions if q.program_id == program_id]

    @property
    def unevaluated_program_ids(self) -> list[str]:
        """Programs that no participant evaluated (they get no human label)."""
        seen = set(self.evaluations["program_id"].dropna())
        return [p.id for p in self.programs if p.id not in seen]

    def subset(self, program_ids: Iterable[str]) -> Dataset:
        """A dataset restricted to these programs (evaluations and questions follow)."""
        keep = set(program_ids)
        evaluations = self.evaluations[self.evaluations["program_id"].isin(keep)]
        return Dataset(
            name=self.name,
            programs=[p for p in self.programs if p.id in keep],
            evaluations=evaluations.reset_index(drop=True),
            questions=[q for q in self.questions if q.program_id in keep],
            source=self.source,
            evaluations_file=self.evaluations_file,
            duplicates=self.duplicates.subset(keep),
        )
