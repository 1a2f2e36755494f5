"""Twins: programs that differ in one known way, and the human effect of that difference.

A paired dataset names each program's twin in ``Program.meta``: ``pair`` (the twin's id) and
``pair_role`` (``control``: the original or clean twin; ``treatment``: the one changed), with a
``kind`` for tables (the atoms study's atom, a custom dataset's treatment ``variant``). The atoms
loader fills them from the study (the Non-confusing program is the control); a custom dataset
from its ``pair`` and ``variant`` columns (docs/dataset-format.md).

The human per-pair effect is the difference in mean correctness (``correct / total`` of each
reader, :func:`~mcu_exp.data.labels.share_correct`) between the treatment and the control,
over the evaluations the run's ``labels.group`` and ``labels.readers`` keep; its interval comes
from resampling readers (a bootstrap over participants: every resample draws participants with
replacement and recomputes both twins' means from the drawn participants' evaluations, so a
reader who saw both twins moves both).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from mcu_exp.data.labels import ALL, label_evaluations, share_correct
from mcu_exp.data.types import Dataset, DatasetError

PAIR, ROLE, KIND = "pair", "pair_role", "pair_kind"
CONTROL, TREATMENT = "control", "treatment"
EFFECT_COLUMNS = ("control", "treatment", "kind", "human_control", "human_treatment", "delta_human")


@dataclass(frozen=True)
class Twins:
    """One pair: the control's id, the treatment's id, and what kind of change separates them."""

    control: str
    treatment: str
    kind: str

    @property
    def name(self) -> str:
        """The pair's name in tables: ``control|treatment``."""
        return f"{self.control}|{self.treatment}"


def twin_pairs(dataset: Dataset) -> list[Twins]:
    """The pairs of ``dataset`` whose two programs are both present, in the controls' order
    (empty for a dataset without twins)."""
    present = {p.id for p in dataset.programs}
    found = []
    for program in dataset.programs:
        twin = program.meta.get(PAIR)
        if program.meta.get(ROLE) != CONTROL or not twin or str(twin) not in present:
            continue
        other = dataset.program(str(twin))
        kind = other.meta.get(KIND) or program.meta.get(KIND) or ""
        found.append(Twins(program.id, other.id, str(kind)))
    return found


def mark_pairs(rows: list[tuple[str, str, str]], where: str) -> dict[str, dict[str, str]]:
    """``{program id: {pair, pair_role, pair_kind}}`` from ``(program id, twin id, variant)`` rows
    in file order (empty twin: unpaired). The variant of the first paired row is the control;
    each pair must be mutual and hold one twin of that variant; the other twin's variant is the
    pair's kind. A one-line :class:`DatasetError` (``where``: the file) names the first problem."""
    twin = {pid: other for pid, other, _ in rows if other}
    variant = {pid: v for pid, _, v in rows}
    if not twin:
        return {}
    control = next(variant[pid] for pid, other, _ in rows if other)
    for pid, other, _ in rows:
        if other and other not in variant:
            raise DatasetError(f"{where}: program {pid!r} pairs with {other!r}, which is not a program_id of the file")
    marks: dict[str, dict[str, str]] = {}
    for pid, other, _ in rows:
        if not other:
            continue
        if other == pid or twin.get(other) != pid:
            raise DatasetError(
                f"{where}: program {pid!r} pairs with {other!r} but {other!r} pairs with "
                f"{twin.get(other) or 'no program'!r}; expected a mutual pair (each names the other)"
            )
        if not variant[pid]:
            raise DatasetError(f"{where}: program {pid!r} has a pair but no variant; expected e.g. original / edited")
        if (variant[pid] == control) == (variant[other] == control):
            raise DatasetError(
                f"{where}: programs {pid!r} and {other!r} have variants {variant[pid]!r} and {variant[other]!r}; "
                f"expected one twin of the control variant {control!r} (the first paired row's) and one other"
            )
        role = CONTROL if variant[pid] == control else TREATMENT
        kind = variant[other] if role == CONTROL else variant[pid]
        marks[pid] = {PAIR: other, ROLE: role, KIND: kind}
    return marks


def human_pair_effects(
    dataset: Dataset,
    pairs: list[Twins],
    group: str = ALL,
    readers: str = ALL,
    resamples: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Per pair (index: :attr:`Twins.name`): the two twins' mean correctness, ``delta_human``
    (treatment − control), its percentile interval over ``resamples`` bootstrap draws of the
    readers (``delta_human_low``/``_high``; NaN where a draw left a twin without readers in more
    than half the draws) and each twin's reader count. Pairs with an unread twin get NaN."""
    evaluations = label_evaluations(dataset, group, readers)
    share = share_correct(evaluations)
    frame = pd.DataFrame(
        {"subject": evaluations["participant_id"].astype(str), "program": evaluations["program_id"].astype(str)}
    ).assign(share=share.to_numpy(), one=1.0)
    sums = frame.pivot_table(index="subject", columns="program", values="share", aggfunc="sum", fill_value=0.0)
    counts = frame.pivot_table(index="subject", columns="program", values="one", aggfunc="sum", fill_value=0.0)
    rows = []
    drawn_from = len(sums)  # the participants left by the filters
    rng = np.random.default_rng(seed)
    weights = rng.multinomial(drawn_from, np.full(drawn_from, 1 / drawn_from), size=resamples) if drawn_from else None
    alpha = (1 - confidence) / 2
    for twins in pairs:
        row: dict[str, object] = {"pair": twins.name, "control": twins.control, "treatment": twins.treatment}
        row["kind"] = twins.kind
        if weights is None or twins.control not in sums.columns or twins.treatment not in sums.columns:
            rows.append(row)
            continue
        s, c = sums[[twins.control, twins.treatment]].to_numpy(), counts[[twins.control, twins.treatment]].to_numpy()
        mean = s.sum(axis=0) / c.sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            drawn = (weights @ s) / (weights @ c)
        delta = drawn[:, 1] - drawn[:, 0]
        ok = delta[np.isfinite(delta)]
        low, high = np.quantile(ok, [alpha, 1 - alpha]) if len(ok) > resamples / 2 else (np.nan, np.nan)
        row.update(
            human_control=mean[0],
            human_treatment=mean[1],
            delta_human=mean[1] - mean[0],
            delta_human_low=low,
            delta_human_high=high,
            n_control=int(c[:, 0].sum()),
            n_treatment=int(c[:, 1].sum()),
        )
        rows.append(row)
    columns = ["pair", *EFFECT_COLUMNS, "delta_human_low", "delta_human_high", "n_control", "n_treatment"]
    return pd.DataFrame(rows, columns=columns).set_index("pair")
