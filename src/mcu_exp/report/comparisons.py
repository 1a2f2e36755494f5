"""The report's "Paired comparisons" section: configurations compared program by program.

For the configurations whose run left a ``per_program.csv`` with a ``score`` column (at most
:data:`MAX_COMPARED`, in table order), :func:`mcu_exp.evaluation.paired.compare_many` gives
every pair's ΔF1 and ΔAUC(score) with paired bootstrap CIs, DeLong's and McNemar's tests. A run
whose ``scores.csv`` and decision settings (the rule, ε, quantile and θ columns) allow it is
recalibrated in each resample, as its own intervals are
(:mod:`mcu_exp.evaluation.paired_recalibration`); the others keep their labels fixed, and a note
says which.
Only runs scored against the same human labels are compared: the configurations are first
put in groups whose human labels agree on every shared program (:func:`label_groups`, with
:func:`~mcu_exp.evaluation.paired.pair`'s check), pairs are formed within each group, and
the p-values are Holm-adjusted across every pair shown (the family). A configuration that
labels and scores every program as an earlier one of its group does (:func:`same_outputs`)
is not paired again: each such pair would read ΔF1 0 [0, 0], p = 1.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from mcu_exp.names import HUMAN_LABEL, LABEL, PER_PROGRAM_FILE, PROGRAM_ID, SCORE, SCORES_FILE
from mcu_exp.report.columns import cell
from mcu_exp.report.display import count_text, p_text
from mcu_exp.report.identity import row_label

if TYPE_CHECKING:
    from mcu_exp.evaluation.paired_recalibration import RunCalibration
    from mcu_exp.evaluation.pairing import Pairings
    from mcu_exp.report.sources import RunFiles

TITLE = "Paired comparisons"
COMPARISONS_FILE = "comparisons.csv"  # the report's file of every pair's numbers
RESAMPLES, SEED, CONFIDENCE = 2000, 0, 0.95  # the report's bootstrap (mcu-exp compare's defaults)
MAX_COMPARED = 10  # configurations compared: at most 45 pairs (~2-4 s at 2000 resamples)
HOLM_COLUMNS = ("delong_p_holm", "mcnemar_p_holm")


@dataclass
class ComparisonPart:
    """What :func:`comparison_part` makes: the text table, caption, notes and the numbers
    for ``comparisons.csv``."""

    table: pd.DataFrame
    caption: str
    notes: list[str] = field(default_factory=list)
    csv: pd.DataFrame = field(default_factory=pd.DataFrame)


def read_per_program(files: RunFiles, run_ids: Sequence[str]) -> dict[str, pd.DataFrame]:
    """Each run's ``per_program.csv`` (index ``program_id`` as text) by run id; runs without
    one are absent."""
    found = {}
    for run_id in run_ids:
        frame = files.table(run_id, PER_PROGRAM_FILE, PROGRAM_ID)
        if frame is not None:
            found[run_id] = frame
    return found


def read_calibrations(files: RunFiles, rows: pd.DataFrame) -> dict[str, RunCalibration]:
    """Each run's ``scores.csv`` with its decision settings (the rows' rule, epsilon, quantile and
    theta columns) by run id; runs without either are absent (their labels stay fixed)."""
    from mcu_exp.evaluation.paired_recalibration import SETTINGS, RunCalibration, decision_from

    found = {}
    for run_id in rows.index:
        decision = decision_from({key: rows.at[run_id, key] for key in SETTINGS if key in rows.columns})
        scores = files.table(run_id, SCORES_FILE, PROGRAM_ID) if decision is not None else None
        if scores is not None and decision is not None:
            found[run_id] = RunCalibration(scores, decision)
    return found


def has_score(frame: pd.DataFrame) -> bool:
    """Whether a per-program table can be compared: human labels, labels and a finite score."""
    if not {HUMAN_LABEL, LABEL, SCORE} <= set(frame.columns):
        return False
    return bool(np.isfinite(pd.to_numeric(frame[SCORE], errors="coerce").to_numpy(dtype=float)).any())


def unique_labels(rows: pd.DataFrame, keys: Sequence[str]) -> dict[str, str]:
    """Each run's row label; a run name (or id) added where two rows read the same."""
    labels = {run_id: row_label(rows.loc[run_id], keys) for run_id in rows.index}
    seen: dict[str, int] = {}
    for text in labels.values():
        seen[text] = seen.get(text, 0) + 1
    return {
        run_id: text if seen[text] == 1 else f"{text} ({rows.at[run_id, 'run_name'] or run_id})"
        for run_id, text in labels.items()
    }


def label_groups(
    frames: Mapping[str, pd.DataFrame], pairings: Pairings | None = None
) -> tuple[list[list[str]], dict[str, str]]:
    """The names of ``frames`` in groups whose human labels agree: each joins the first group
    with whose every member :func:`~mcu_exp.evaluation.paired.pair` pairs it (shared programs,
    equal human labels on them), else starts a group. Returns the groups and, for each name
    that could not join the first group, why (the first :class:`PairingError`'s message).
    ``pairings`` keeps the pairs it builds, for the comparisons of the same runs."""
    from mcu_exp.evaluation.paired import PairingError
    from mcu_exp.evaluation.pairing import Pairings

    pairings = pairings if pairings is not None and pairings.serves(frames) else Pairings(frames)

    groups: list[list[str]] = []
    why: dict[str, str] = {}
    for name in frames:
        for group in groups:
            try:
                for member in group:
                    pairings(member, name)
            except PairingError as exc:
                why.setdefault(name, str(exc))
                continue
            group.append(name)
            break
        else:
            groups.append([name])
    return groups, why


def same_outputs(
    a: pd.DataFrame, b: pd.DataFrame, calibration_a: RunCalibration | None, calibration_b: RunCalibration | None
) -> bool:
    """Whether two runs gave every program the same label and score and decide alike in a
    resample (the same decision settings, or neither recalibrated): then every paired
    difference is 0 and p = 1, so comparing them says nothing (they differ only in settings that
    do not change the labels, e.g. a reader group whose labels agree on these programs)."""
    columns = [LABEL, SCORE]
    if not set(columns) <= set(a.columns) or not set(columns) <= set(b.columns):
        return False
    left, right = a[columns].sort_index(), b[columns].sort_index()
    if not left.index.equals(right.index):
        return False
    values = [pd.to_numeric(f[c], errors="coerce").to_numpy(dtype=float) for f in (left, right) for c in columns]
    if not all(np.array_equal(values[j], values[j + 2], equal_nan=True) for j in range(2)):
        return False
    if calibration_a is None or calibration_b is None:
        return calibration_a is calibration_b
    return calibration_a.decision == calibration_b.decision


def distinct(
    members: Sequence[str],
    frames: Mapping[str, pd.DataFrame],
    calibrations: Mapping[str, RunCalibration | None],
    notes: list[str],
) -> list[str]:
    """``members`` less those with :func:`same_outputs` as an earlier one (a note names each)."""
    kept: list[str] = []
    for name in members:
        twin = next(
            (k for k in kept if same_outputs(frames[k], frames[name], calibrations[k], calibrations[name])), None
        )
        if twin is None:
            kept.append(name)
        else:
            notes.append(
                f"{name}: the same labels and scores as {twin} on every program (it differs only in settings "
                "that do not change them here); not compared."
            )
    return kept


def compare_group(
    frames: Mapping[str, pd.DataFrame],
    resamples: int,
    seed: int,
    notes: list[str],
    calibrations: Mapping[str, RunCalibration] | None = None,
    pairings: Pairings | None = None,
) -> pd.DataFrame:
    """:func:`~mcu_exp.evaluation.paired.compare_many` of one group (``pairings``: pairs
    already built, see :func:`label_groups`); should a pair still not pair (program ids
    repeated in a table…), every pair on its own, the failing ones skipped with a note."""
    from mcu_exp.evaluation.paired import PairingError, compare_many

    try:
        return compare_many(frames, resamples, seed, CONFIDENCE, calibrations, pairings)
    except PairingError:
        pass
    names = list(frames)
    parts = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            try:
                parts.append(compare_many({a: frames[a], b: frames[b]}, resamples, seed, CONFIDENCE, calibrations))
            except PairingError as exc:
                notes.append(f"{a} vs {b}: not compared ({exc}).")
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def comparison_part(
    rows: pd.DataFrame,
    keys: Sequence[str],
    found: Mapping[str, pd.DataFrame],
    most: int = MAX_COMPARED,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    calibrations: Mapping[str, RunCalibration] | None = None,
) -> ComparisonPart | None:
    """The section over ``rows`` (the report's configurations, newest run each, in table
    order) and their runs' per-program tables ``found`` by run id (``calibrations``: the runs to
    recalibrate in the resamples, by run id); None when fewer than two configurations have a score."""
    from mcu_exp.evaluation.paired import holm
    from mcu_exp.evaluation.pairing import Pairings

    labels = unique_labels(rows, keys)
    scored = [r for r in rows.index if r in found and has_score(found[r])]
    if len(scored) < 2:
        return None
    notes = []
    unscored = [labels[r] for r in rows.index if r not in scored]
    if unscored:
        notes.append(
            f"Not compared, no {SCORE} in a {PER_PROGRAM_FILE} (older runs, or a proxy without a "
            f"continuous score): {'; '.join(unscored)}."
        )
    compared, left_out = scored[:most], scored[most:]
    if left_out:
        notes.append(
            f"{len(left_out)} more configuration{'' if len(left_out) == 1 else 's'} with a score left out "
            f"(at most {most} are compared, {most * (most - 1) // 2} pairs): "
            f"{'; '.join(labels[r] for r in left_out)}. Compare any two runs with "
            "`mcu-exp compare RUN_A RUN_B`."
        )
    frames = {labels[r]: found[r] for r in compared}
    run_ids = {labels[r]: r for r in compared}
    pairings = Pairings(frames)  # each pair built once, for the groups and the comparisons
    groups, why = label_groups(frames, pairings)
    if len(groups) > 1:
        listing = "; ".join(f"labels {i}: {', '.join(g)}" for i, g in enumerate(groups, 1))
        notes.append(
            f"Runs scored against different human labels are not compared with each other; "
            f"{len(groups)} sets of labels: {listing}."
        )
        for group in groups[1:]:  # why each later set's first run did not join the first set
            notes.append(f"{group[0]}: not compared with {', '.join(groups[0])} ({why[group[0]].splitlines()[0]}).")
    parts = []
    by_run = calibrations or {}
    for i, members in enumerate(groups, 1):
        group = distinct(members, frames, {n: by_run.get(run_ids[n]) for n in members}, notes)
        if len(group) < 2 and len(members) > 1:
            continue
        if len(group) < 2:
            notes.append(f"{group[0]}: no other configuration shares its human labels; not compared.")
            continue
        by_name = {n: by_run[run_ids[n]] for n in group if run_ids[n] in by_run}
        table = compare_group({n: frames[n] for n in group}, resamples, seed, notes, by_name, pairings)
        if not table.empty:
            parts.append(table.assign(labels=i))
    numbers = (
        pd.concat(parts, ignore_index=True)
        if parts
        else pd.DataFrame(columns=["run_a", "run_b", "labels", "delong_p", "mcnemar_p"])
    )
    numbers["delong_p_holm"] = holm(numbers["delong_p"].to_numpy(dtype=float))  # across every pair shown
    numbers["mcnemar_p_holm"] = holm(numbers["mcnemar_p"].to_numpy(dtype=float))
    numbers.insert(2, "run_id_a", [run_ids[a] for a in numbers["run_a"]])
    numbers.insert(3, "run_id_b", [run_ids[b] for b in numbers["run_b"]])
    front = ["labels", "run_a", "run_b", "run_id_a", "run_id_b"]
    numbers = numbers[front + [c for c in numbers.columns if c not in front]]
    notes.extend(labels_notes(numbers))
    pairs = len(numbers)
    caption = (
        f"A − B on the programs both runs scored, paired program by program: ΔF1 and ΔAUC (score) with "
        f"unadjusted {100 * CONFIDENCE:g} % paired stratified bootstrap CIs ({resamples} resamples, seed "
        f"{seed}; a family of {2 * pairs} intervals, 2 per pair, none widened for multiplicity; calibrated "
        "runs recalibrated in each resample); DeLong's test of ΔAUC (score) and McNemar's test of the labels' "
        f"accuracy, p-values Holm-adjusted across the {pairs} pair{'' if pairs == 1 else 's'} shown (each "
        "test its own family). Only configurations scored against the same human labels are compared. All "
        f"numbers, raw p-values included, are in {COMPARISONS_FILE}."
    )
    return ComparisonPart(display_comparisons(numbers, len(groups) > 1), caption, notes, numbers)


def labels_notes(numbers: pd.DataFrame) -> list[str]:
    """Which compared runs were recalibrated in the resamples and which kept their labels."""
    if numbers.empty or "ci_labels_a" not in numbers.columns:
        return []
    from mcu_exp.evaluation.paired_recalibration import RECALIBRATED

    state = dict(zip(numbers["run_a"], numbers["ci_labels_a"], strict=True))
    state.update(zip(numbers["run_b"], numbers["ci_labels_b"], strict=True))
    recalibrated = [name for name, how in state.items() if how == RECALIBRATED]
    kept = [name for name, how in state.items() if how != RECALIBRATED]
    lines = []
    if recalibrated:
        lines.append(f"Recalibrated in each resample (τ recomputed from its scores.csv): {'; '.join(recalibrated)}.")
    if kept:
        lines.append(
            f"Labels fixed in the resamples (no scores.csv or settings that give back the run's labels, "
            f"or no calibrated threshold): {'; '.join(kept)}."
        )
    return lines


def display_comparisons(numbers: pd.DataFrame, by_labels: bool) -> pd.DataFrame:
    """The pairs as text cells: A, B (the set of labels when there are several), n, ΔF1 and
    ΔAUC (score) with CIs, the Holm-adjusted p-values."""

    def num(row: pd.Series, column: str) -> float | None:
        raw = row.get(column)
        return None if raw is None else float(raw)

    out = []
    for _, row in numbers.iterrows():
        item = {"A": str(row["run_a"]), "B": str(row["run_b"])}
        if by_labels:
            item["labels"] = str(row["labels"])
        item.update(
            {
                "n": count_text(num(row, "n")),
                "ΔF1": cell("f1", num(row, "delta_f1"), num(row, "delta_f1_ci_low"), num(row, "delta_f1_ci_high")),
                "ΔAUC (score)": cell(
                    "auc_score",
                    num(row, "delta_auc_score"),
                    num(row, "delta_auc_score_ci_low"),
                    num(row, "delta_auc_score_ci_high"),
                ),
                "DeLong p (Holm)": p_text(num(row, "delong_p_holm")),
                "McNemar (accuracy) p (Holm)": p_text(num(row, "mcnemar_p_holm")),
            }
        )
        out.append(item)
    return pd.DataFrame(out)
