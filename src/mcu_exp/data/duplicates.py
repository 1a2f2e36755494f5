"""Repeated (participant, program) evaluations, collapsed so each participant counts once.

Rows of one pair that are identical in every column collapse into one. Rows that differ are
averaged: ``correct`` and ``total`` become their means over the pair's rows, so the pair's
``correct / total`` is the share of all the questions the participant was asked that they
answered correctly (a row without questions, ``total`` 0, adds nothing to either, and the pair
counts as tested when any of its rows was). Every other column keeps its value when the rows
agree and becomes missing when they do not.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import pandas as pd

PAIR: list[str] = ["program_id", "participant_id"]
AVERAGED: tuple[str, ...] = ("correct", "total")


def _no_pairs() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "program_id": pd.array([], dtype="string"),
            "participant_id": pd.array([], dtype="string"),
            "rows": pd.array([], dtype="int64"),
            "conflicting": pd.array([], dtype="bool"),
        }
    )


@dataclass(frozen=True, eq=False)
class Duplicates:
    """The (participant, program) pairs that had several evaluation rows when loaded.

    ``pairs`` has one row per such pair: ``program_id, participant_id``, ``rows`` (how many)
    and ``conflicting`` (False when the rows were identical, True when they were averaged).
    """

    pairs: pd.DataFrame = field(default_factory=_no_pairs)

    @property
    def identical(self) -> int:
        """Pairs whose rows were all identical (collapsed into one)."""
        return int((~self.pairs["conflicting"].astype(bool)).sum())

    @property
    def conflicting(self) -> int:
        """Pairs whose rows differed (averaged into one)."""
        return int(self.pairs["conflicting"].astype(bool).sum())

    def __len__(self) -> int:
        return len(self.pairs)

    def plus(self, other: Duplicates) -> Duplicates:
        """Both records together (an empty one adds nothing)."""
        if not len(other):
            return self
        if not len(self):
            return other
        return Duplicates(pd.concat([self.pairs, other.pairs], ignore_index=True))

    def subset(self, program_ids: Iterable[str]) -> Duplicates:
        """The pairs of these programs only."""
        keep = self.pairs["program_id"].isin(set(program_ids))
        return Duplicates(self.pairs[keep].reset_index(drop=True))

    def describe(self, where: str, rows: int, evaluations: int) -> str:
        """One line for a console, e.g. ``f.csv: 7 repeated (participant, program) pairs, …``."""
        return (
            f"{where}: {len(self)} repeated (participant, program) pairs, each now counted once: "
            f"{self.identical} with identical rows collapsed, {self.conflicting} conflicting "
            f"averaged (mean correct and mean total); {rows} rows, {evaluations} evaluations"
        )


def _merged(rows: pd.DataFrame) -> dict[str, object]:
    """One row from a pair's differing rows (see the module docstring)."""
    merged: dict[str, object] = {}
    for column in rows.columns:
        if column in AVERAGED:
            merged[column] = float(rows[column].astype(float).mean())
        else:
            values = rows[column].drop_duplicates()
            merged[column] = values.iloc[0] if len(values) == 1 else pd.NA
    return merged


def collapse_duplicates(evaluations: pd.DataFrame) -> tuple[pd.DataFrame, Duplicates]:
    """The evaluations with one row per (participant, program), and what was collapsed.

    Rows keep the order of each pair's first row. ``correct`` and ``total`` turn ``Float64``
    only when an average is not a whole number.
    """
    if not evaluations.duplicated(PAIR).any():
        return evaluations, Duplicates()
    repeated = evaluations.duplicated(PAIR, keep=False)
    sizes = evaluations[repeated].groupby(PAIR, sort=False).size()
    distinct = evaluations.drop_duplicates()
    differing = distinct.duplicated(PAIR, keep=False)
    out = distinct[~distinct.duplicated(PAIR)].copy()
    conflicting: set[tuple[str, str]] = set()
    if differing.any():
        out = out.astype(dict.fromkeys(AVERAGED, "Float64"))
        for key, rows in distinct[differing].groupby(PAIR, sort=False):
            first = rows.index[0]
            for column, value in _merged(rows).items():
                out.at[first, column] = value
            conflicting.add((str(key[0]), str(key[1])))
        whole = all((out[c].dropna() == out[c].dropna().round()).all() for c in AVERAGED)
        if whole:
            out = out.astype(dict.fromkeys(AVERAGED, "Int64"))
    pairs = pd.DataFrame(
        {
            "program_id": pd.array([k[0] for k in sizes.index], dtype="string"),
            "participant_id": pd.array([k[1] for k in sizes.index], dtype="string"),
            "rows": sizes.to_numpy(dtype="int64"),
            "conflicting": [(str(k[0]), str(k[1])) in conflicting for k in sizes.index],
        }
    )
    return out.reset_index(drop=True), Duplicates(pairs)
