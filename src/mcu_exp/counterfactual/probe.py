"""A job's probe: one counterfactual edit applied to every program of a loaded dataset.

``probe=<edit>`` runs a job on the edited programs. Each program keeps its id (so a probe run
and its control, ``probe=none``, pair program by program), its edit is checked with
:func:`~mcu_exp.counterfactual.checks.check_edit`, and a program whose edit raises or fails
the check is excluded from the run and listed, never dropped silently; so is a program the edit
leaves as it was (no comment to strip), which would be a pair of one program with itself. :class:`Probed` holds
the edited dataset and the pairing table the job writes (``probe.csv``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

import pandas as pd

from mcu_exp.counterfactual.checks import check_edit
from mcu_exp.counterfactual.parsing import parse, syntax_errors
from mcu_exp.counterfactual.registry import EDITS, apply_edit
from mcu_exp.data.types import Dataset, Program

NO_PROBE = "none"  # probe.edit of a job on the programs as written
EDITED, EXCLUDED = "edited", "excluded"
UNCHANGED = "the edit changed nothing (e.g. no comment to strip): not a pair"
JAVA_CLASS = "class Snippet {\n"
PAIRING_COLUMNS = ("program_id", "probe", "status", "problem", "original_code", "edited_code")


@dataclass(frozen=True)
class Probed:
    """The dataset with every program that passed its edit replaced by the edited one (the
    others left out), and one row per program of the original: ``program_id``, ``probe`` (the
    edit), ``status`` (``edited`` / ``excluded``), ``problem`` (why excluded), ``original_code``
    and ``edited_code``."""

    dataset: Dataset
    pairing: pd.DataFrame
    edit: str

    @property
    def excluded(self) -> pd.DataFrame:
        """The rows of the programs left out, with their problem."""
        return self.pairing[self.pairing["status"] == EXCLUDED]

    def describe(self) -> str:
        """One line: how many programs were edited, how many excluded and the first reasons."""
        n, out = len(self.pairing), self.excluded
        line = f"probe {self.edit}: {n - len(out)} of {n} programs edited and checked"
        same = int((out["problem"] == UNCHANGED).sum())
        if same:
            line += f", {same} left out unchanged (nothing to edit)"
            out = out[out["problem"] != UNCHANGED]
        if len(out):
            shown = "; ".join(f"{r.program_id}: {r.problem}" for r in out.head(3).itertuples())
            more = f"; and {len(out) - 3} more" if len(out) > 3 else ""
            line += f", {len(out)} excluded (edit failed its check: {shown}{more}; all in probe.csv)"
        return line


def probe_problems(edit: str) -> Iterator[str]:
    """``probe.edit``'s problem, checked when the job starts: a name no registered edit has
    (one line with the closest name), or nothing."""
    if edit != NO_PROBE and edit not in EDITS:
        yield EDITS.unknown_message(edit).replace("(known: ", f"(known: {NO_PROBE}, ", 1)


def _wrapper(code: str, language: str) -> tuple[str, str]:
    """``(prefix, suffix)`` that make ``code`` a compilation unit: a Java constructor or method
    standing alone (Scalabrino's snippets, as their readers saw them) parses only inside a class,
    so it is edited inside ``class Snippet { … }`` and unwrapped; anything else needs none."""
    if language != "java" or not syntax_errors(parse(code, language)):
        return "", ""
    return JAVA_CLASS, "\n}"


def edit_program(program: Program, edit: str, seed: int) -> tuple[Program | None, str, str]:
    """``(edited program or None, problem, edited code)`` for one program: the problem is the
    first line :func:`check_edit` returns, or why the edit could not run (a language the edit's
    grammar lacks)."""
    language = program.language.strip().lower()
    try:
        prefix, suffix = _wrapper(program.code, language)
        original = prefix + program.code + suffix
        edited = apply_edit(edit, original, language, seed)
        problems = check_edit(original, edited, language, edit)
    except ValueError as exc:
        return None, str(exc).splitlines()[0], ""
    code = edited.code
    if not problems and not (code.startswith(prefix) and code.endswith(suffix)):
        problems = [f"the edit changed the class around the snippet ({JAVA_CLASS.strip()!r} … '}}')"]
    code = code[len(prefix) : len(code) - len(suffix)] if not problems else code
    if not problems and code == program.code:
        problems = [UNCHANGED]
    if problems:
        return None, problems[0], code
    return replace(program, code=code, meta={**program.meta, "probe": edit}), "", code


def apply_probe(dataset: Dataset, edit: str, seed: int = 0) -> Probed:
    """Edit every program of ``dataset`` with the registered edit ``edit`` (a one-line
    ``KeyError``-free ``ValueError`` with a did-you-mean when no edit has that name)."""
    if edit not in EDITS:
        raise ValueError(EDITS.unknown_message(edit))
    rows, kept = [], []
    for program in dataset.programs:
        edited, problem, code = edit_program(program, edit, seed)
        rows.append((program.id, edit, EXCLUDED if edited is None else EDITED, problem, program.code, code))
        if edited is not None:
            kept.append(edited)
    pairing = pd.DataFrame(rows, columns=list(PAIRING_COLUMNS))
    subset = dataset.subset(p.id for p in kept)
    return Probed(dataset=replace(subset, programs=kept), pairing=pairing, edit=edit)
