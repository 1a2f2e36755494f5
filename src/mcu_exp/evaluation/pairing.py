"""Pairing two runs' per-program tables: the programs both scored, in one order, refused in one
line when they share none or were scored against different human labels (a paired comparison
of them would have no meaning). :mod:`mcu_exp.evaluation.paired` compares what this pairs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from mcu_exp import names
from mcu_exp.evaluation.metrics import as_binary

_SHOWN = 5  # program ids named in an error


class PairingError(ValueError):
    """Two per-program tables that cannot be compared; the message is one line."""


@dataclass(frozen=True)
class Paired:
    """Two runs on their shared programs, in one order: the human labels, each run's 0/1
    labels and (None when the run has no finite score on every shared program) scores."""

    program_ids: np.ndarray
    truth: np.ndarray
    label_a: np.ndarray
    label_b: np.ndarray
    score_a: np.ndarray | None
    score_b: np.ndarray | None
    only_a: int = 0  # scored programs that the other run lacks (left out)
    only_b: int = 0

    @property
    def n(self) -> int:
        """Shared programs."""
        return int(self.truth.size)


def _scored(frame: pd.DataFrame, name: str) -> pd.DataFrame:
    """The rows of a per-program table that carry a human label and a proxy label."""
    missing = [c for c in (names.HUMAN_LABEL, names.LABEL) if c not in frame.columns]
    if missing:
        raise PairingError(f"run {name}'s per-program table lacks column(s) {', '.join(missing)}")
    kept = frame[frame[names.HUMAN_LABEL].notna() & frame[names.LABEL].notna()]
    return kept.set_axis(kept.index.astype(str), axis=0)


def _score_column(frame: pd.DataFrame) -> np.ndarray | None:
    if names.SCORE not in frame.columns:
        return None
    values = pd.to_numeric(frame[names.SCORE], errors="coerce").to_numpy(dtype=float)
    return values if np.isfinite(values).all() else None


def _listing(ids: Sequence[Any]) -> str:
    shown = ", ".join(str(i) for i in list(ids)[:_SHOWN])
    return shown + (", …" if len(ids) > _SHOWN else "")


def pair(a: pd.DataFrame, b: pd.DataFrame, names_ab: tuple[str, str] = ("A", "B")) -> Paired:
    """The programs both per-program tables (index ``program_id``) scored, i.e. with a human
    label and a proxy label in both, in A's order. Refuses (:class:`PairingError`) when they
    share no program or when their human labels differ on a shared one (the runs were scored
    against different human labels, e.g. another ``labels.group``)."""
    name_a, name_b = names_ab
    left, right = _scored(a, name_a), _scored(b, name_b)
    shared = left.index[left.index.isin(right.index)]
    if shared.has_duplicates or right.index.has_duplicates:
        dup = shared[shared.duplicated()].tolist() or right.index[right.index.duplicated()].tolist()
        raise PairingError(f"program ids repeat in a per-program table: {_listing(dup)}")
    if shared.empty:
        raise PairingError(
            f"runs {name_a} and {name_b} share no scored program ({name_a}: {len(left)} programs, "
            f"e.g. {_listing(left.index) or 'none'}; {name_b}: {len(right)}, "
            f"e.g. {_listing(right.index) or 'none'})"
        )
    only_a, only_b = len(left) - len(shared), len(right) - len(shared)
    left, right = left.loc[shared], right.loc[shared]
    truth_a = as_binary(left[names.HUMAN_LABEL].to_numpy(), f"{name_a}'s {names.HUMAN_LABEL}")
    truth_b = as_binary(right[names.HUMAN_LABEL].to_numpy(), f"{name_b}'s {names.HUMAN_LABEL}")
    differ = np.flatnonzero(truth_a != truth_b)
    if differ.size:
        cases = [f"{shared[i]}: {truth_a[i]} vs {truth_b[i]}" for i in differ]
        raise PairingError(
            f"the human labels of runs {name_a} and {name_b} differ on {differ.size} of {len(shared)} "
            f"shared programs ({_listing(cases)}): they were scored against different human labels "
            "(labels.* settings or data), so a paired comparison has no meaning"
        )
    return Paired(
        program_ids=shared.to_numpy(),
        truth=truth_a,
        label_a=as_binary(left[names.LABEL].to_numpy(), f"{name_a}'s {names.LABEL}"),
        label_b=as_binary(right[names.LABEL].to_numpy(), f"{name_b}'s {names.LABEL}"),
        score_a=_score_column(left),
        score_b=_score_column(right),
        only_a=only_a,
        only_b=only_b,
    )


class Pairings:
    """:func:`pair` of named per-program tables, each ordered pair built once: a sweep's report
    pairs its runs to put them in groups of equal human labels, then compares the same pairs
    (:func:`mcu_exp.evaluation.paired.compare_many`). A pair that fails is not kept (it raises
    again)."""

    def __init__(self, frames: Mapping[str, pd.DataFrame]) -> None:
        self.frames = frames
        self.built: dict[tuple[str, str], Paired] = {}

    def __call__(self, name_a: str, name_b: str) -> Paired:
        """The pair of ``frames[name_a]`` and ``frames[name_b]`` (:func:`pair`)."""
        found = self.built.get((name_a, name_b))
        if found is None:
            found = pair(self.frames[name_a], self.frames[name_b], (name_a, name_b))
            self.built[(name_a, name_b)] = found
        return found

    def serves(self, frames: Mapping[str, pd.DataFrame]) -> bool:
        """Whether these are the tables it pairs (the same objects under the same names)."""
        return all(self.frames.get(name) is frame for name, frame in frames.items())
