"""The report's "Uncertainty measures and code-metric baselines" section.

Each job writes ``measures.csv`` (index ``column``; one row per ``measure.*`` uncertainty
measure of a P1 run, per ``code.*`` code metric and per ``dataset.*`` metric of the dataset;
columns n, auc_score, spearman and prr with their CI bounds, prr_perm_p, ``spearman_vs`` and
``direction``; see :mod:`mcu_exp.evaluation.measure_table`). The section shows, for each configuration of the
report (its newest run), its ``measure.*`` rows, then the ``code.*`` baselines once: they
depend only on the programs and the human labels, so they are taken from the first run and
shown per label set only when runs on different labels disagree. ``dataset.*`` rows go only
to the report's ``measures.csv``, which holds every row of every run shown.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pandas as pd

from mcu_exp.names import CODE_PREFIX, MEASURE_PREFIX, MEASURES_FILE
from mcu_exp.report.columns import cell
from mcu_exp.report.display import count_text
from mcu_exp.report.identity import PARAM_PREFIX, row_label

if TYPE_CHECKING:
    from mcu_exp.report.sources import RunFiles

TITLE = "Uncertainty measures and code-metric baselines"
AUC, SPEARMAN = "auc_score", "spearman"
PRR, PRR_P = "prr", "prr_perm_p"
VALUE_COLUMNS = (
    "n",
    AUC,
    f"{AUC}_ci_low",
    f"{AUC}_ci_high",
    SPEARMAN,
    f"{SPEARMAN}_ci_low",
    f"{SPEARMAN}_ci_high",
    PRR,
    f"{PRR}_ci_low",
    f"{PRR}_ci_high",
    PRR_P,
    "spearman_vs",
    "direction",
)
CODE_LABEL = "code metrics"
DIRECTION_NOTE = (
    ", scored as −value: each metric's declared direction, higher = harder to understand, so AUC > "
    "0.5 means as the literature expects; raw values in runs whose measures.csv has no direction column"
)
LABEL_KEYS = ("dataset", "labels_group")  # keys that name a label set (with params.labels.*, params.dataset.*)


@dataclass
class MeasuresPart:
    """What :func:`measures_part` makes: the text table, its caption and notes, and the
    numbers for ``measures.csv``."""

    table: pd.DataFrame
    caption: str
    notes: list[str] = field(default_factory=list)
    csv: pd.DataFrame = field(default_factory=pd.DataFrame)


def read_measures(files: RunFiles, run_ids: Sequence[str]) -> dict[str, pd.DataFrame]:
    """Each run's ``measures.csv`` (index ``column``) by run id; runs without one are absent."""
    found = {}
    for run_id in run_ids:
        frame = files.table(run_id, MEASURES_FILE, "column")
        if frame is not None:
            found[run_id] = frame
    return found


def _rows(frame: pd.DataFrame, prefix: str) -> pd.DataFrame:
    return frame[[str(c).startswith(prefix) for c in frame.index]]


def _text_rows(label: str, frame: pd.DataFrame, vs_column: bool) -> list[dict[str, str]]:
    """One text row per measure column: "0.612 [0.450, 0.766]" cells, as the main table's."""
    out = []
    for column, row in frame.iterrows():

        def num(name: str, row: pd.Series = row) -> float | None:
            raw = row.get(name)
            return None if raw is None else float(pd.to_numeric(raw, errors="coerce"))

        item = {
            "configuration": label,
            "measure": str(column),
            "n": count_text(num("n")),
            "AUC (score)": cell(AUC, num(AUC), num(f"{AUC}_ci_low"), num(f"{AUC}_ci_high")),
            "Spearman ρ": cell(SPEARMAN, num(SPEARMAN), num(f"{SPEARMAN}_ci_low"), num(f"{SPEARMAN}_ci_high")),
            "PRR": cell(SPEARMAN, num(PRR), num(f"{PRR}_ci_low"), num(f"{PRR}_ci_high")),
            "p (PRR)": cell(PRR_P, num(PRR_P)),
        }
        if vs_column:
            item["ρ vs"] = str(row.get("spearman_vs", "—"))
        out.append(item)
    return out


def _fingerprint(frame: pd.DataFrame) -> str:
    """The code rows' content as text, to tell equal baselines apart from different ones."""
    return str(frame.reindex(columns=list(VALUE_COLUMNS)).astype(object).to_csv())


def label_set(row: pd.Series, keys: Sequence[str]) -> str:
    """A configuration's human labels in words ("reader group=professional"), from the
    varying keys that concern the data and labels; the whole row label when none does."""
    label_keys = [
        k for k in keys if k in LABEL_KEYS or k.startswith((f"{PARAM_PREFIX}labels.", f"{PARAM_PREFIX}dataset."))
    ]
    return row_label(row, label_keys) if label_keys else row_label(row, keys)


def measures_part(
    rows: pd.DataFrame, keys: Sequence[str], found: Mapping[str, pd.DataFrame], scope: str, gone: Collection[str] = ()
) -> MeasuresPart | None:
    """The section's table over ``rows`` (the report's configurations, newest run each, in
    table order) and the runs' ``measures.csv`` frames ``found`` by run id; None when no run
    has one. ``scope`` opens the caption (what the labels are); ``gone``: runs whose artifacts
    are missing (named as such, not as runs from before measures were logged)."""
    shown = [run_id for run_id in rows.index if run_id in found]
    if not shown:
        return None
    labels = {run_id: row_label(rows.loc[run_id], keys) for run_id in rows.index}
    measures = {run_id: _rows(found[run_id], MEASURE_PREFIX) for run_id in shown}
    codes = {run_id: _rows(found[run_id], CODE_PREFIX) for run_id in shown}
    vs = sorted(
        {
            str(v)
            for frame in (*measures.values(), *codes.values())
            for v in frame.get("spearman_vs", pd.Series(dtype=str)).dropna()
        }
    )
    text: list[dict[str, str]] = []
    for run_id in shown:
        text += _text_rows(labels[run_id], measures[run_id], len(vs) > 1)

    sets: dict[str, list[str]] = {}  # code rows' content → runs with it, first run first
    for run_id in shown:
        if not codes[run_id].empty:
            sets.setdefault(_fingerprint(codes[run_id]), []).append(run_id)
    notes = []
    if len(sets) == 1:
        (owners,) = sets.values()
        text += _text_rows(CODE_LABEL, codes[owners[0]], len(vs) > 1)
        baseline = (
            f" Code-metric baselines (code.*{DIRECTION_NOTE}) depend only on the programs and the human labels: "
            f"shown once, taken from the first run ({labels[owners[0]]})"
            + ("; every other run with a measures.csv has the same." if len(owners) > 1 else ".")
        )
    elif sets:
        for owners in sets.values():
            named = f"{CODE_LABEL} · {label_set(rows.loc[owners[0]], keys)}"
            text += _text_rows(named, codes[owners[0]], len(vs) > 1)
            notes.append(
                f"{named}: taken from {labels[owners[0]]}"
                + (f"; identical in {', '.join(labels[r] for r in owners[1:])}." if owners[1:] else ".")
            )
        baseline = (
            f" Code-metric baselines (code.*{DIRECTION_NOTE}) depend only on the programs and the human labels; "
            f"the runs hold {len(sets)} different sets of them (different labels), each shown once, "
            "taken from the first run that has it."
        )
    else:
        baseline = " No run has code-metric baselines (code.*)."
    lost = [f"{labels[r]} (run {r})" for r in rows.index if r not in found and r in gone]
    if lost:
        notes.append(
            f"{len(lost)} configuration{'' if len(lost) == 1 else 's'} whose run's artifacts are missing "
            f"(restore them to report their measures), left out: {'; '.join(lost)}."
        )
    missing = [labels[r] for r in rows.index if r not in found and r not in gone]
    if missing:
        notes.append(
            f"{len(missing)} configuration{'' if len(missing) == 1 else 's'} without {MEASURES_FILE} "
            f"(runs from before measures were logged), left out: {'; '.join(missing)}."
        )
    caption = (
        f"{scope}. Uncertainty measures (measure.*: −uncertainty, higher = more understandable) of each "
        "configuration's run, as scores against the human labels: AUC (score) and Spearman ρ with the "
        f"humans' {' or '.join(vs) or 'correctness'}, and PRR (prediction rejection ratio, 0 = random), "
        "value [95 % stratified bootstrap CI] as the run computed them, with PRR's two-sided permutation "
        f"p-value against 0 (— for runs from before PRR had an interval); n: programs. Intervals and p-values are "
        f"unadjusted for multiplicity: {len(text)} rows × 3 metrics = {3 * len(text)} intervals shown."
        f"{baseline} The dataset's own metrics (dataset.*) and every row are in {MEASURES_FILE}."
    )
    return MeasuresPart(pd.DataFrame(text), caption, notes, measures_csv(rows, keys, found))


def measures_csv(rows: pd.DataFrame, keys: Sequence[str], found: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Every row (measure.*, code.*, dataset.*) of every configuration's ``measures.csv``:
    the keys, run id and name, ``column`` and the file's values."""
    frames = []
    for run_id in [r for r in rows.index if r in found]:
        frame = found[run_id].reset_index()
        front = {k: rows.at[run_id, k] for k in keys}
        front.update(run_id=run_id, run_name=rows.at[run_id, "run_name"])
        for i, (name, value) in enumerate(front.items()):
            frame.insert(i, name, [value] * len(frame))
        frames.append(frame)
    if not frames:
        return pd.DataFrame(columns=[*keys, "run_id", "run_name", "column", *VALUE_COLUMNS])
    return pd.concat(frames, ignore_index=True)
