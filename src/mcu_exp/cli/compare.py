"""``mcu-exp compare RUN_A RUN_B``: two finished runs on the programs both scored.

Each run is an MLflow run id (its ``per_program.csv`` artifact, read through
:class:`mcu_exp.tracking.artifacts.RunArtifacts`) or a run folder holding
``results/per_program.csv`` (a job's output folder; a folder or a CSV file holding
``per_program.csv`` directly works too). Prints F1, accuracy, AUC(score) and the prediction
rejection ratio of each run, the paired bootstrap intervals of their differences, McNemar's
test of the accuracies and DeLong's of the AUCs (:mod:`mcu_exp.evaluation.paired`,
``docs/comparisons.md``); ``--out`` writes the same as CSV. A run with calibration scores
(``scores.csv`` beside its ``per_program.csv``: P1, P2) and its decision settings (MLflow
params ``decision.*``, or the ``decision`` section of ``config.yaml`` beside it) is
recalibrated in every resample, as its own intervals are; any other run keeps its labels
fixed, and the table says so. Where the runs logged the humans' ceiling (``ceiling.*``,
``vs_ceiling.*``, ``disattenuated.*``: MLflow metrics, ``metrics.json``, ``reliability.csv``),
each run's lower and upper bound on AUC (score), its AUC (score) minus each (paired), the ρ
ceiling and its disattenuated ρ are printed too, with intervals over programs (an old run's
``share.*`` in rows labelled as such), and the notes say when the two ceilings differ
(:mod:`mcu_exp.compare.ceiling`). Under the table, the parameters whose values differ between
A and B (:mod:`mcu_exp.compare.params`); the table and notes are drawn by
:mod:`mcu_exp.compare.display`. When one run ran under a probe (``probe=<edit>``) and the other
did not, on one dataset, the paired analysis follows (:mod:`mcu_exp.compare.probe`: each program
its own control; ``--out`` adds ``probe_pairs.csv`` and its figure). Heavy imports wait until a comparison is made, so
``mcu-exp`` stays quick to start.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mcu_exp.compare.sides import CompareError, Source
from mcu_exp.interrupts import raise_if_interrupted
from mcu_exp.names import (
    CONFIG_FILE,
    METRICS_FILE,
    PER_PROGRAM_FILE,
    PROGRAM_ID,
    RELIABILITY_FILE,
    RESULTS_DIR,
    SCORES_FILE,
)
from mcu_exp.registry import load_plugins

COMPARISON_FILE = "comparison.csv"
REJECTION_FILE = "rejection.csv"


def build_parser(prog: str = "mcu-exp compare") -> argparse.ArgumentParser:
    """The command's arguments."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description=(
            "Compare two finished runs on the programs both scored: F1, accuracy, AUC(score) and prediction "
            "rejection ratio with paired bootstrap intervals of the differences (calibrated runs recalibrated in "
            "each resample), McNemar's test of the accuracies and DeLong's of the AUCs."
        ),
    )
    parser.add_argument(
        "run_a",
        metavar="RUN_A",
        help=f"an MLflow run id or its first 6+ characters (as a sweep summary prints them), a job number "
        f"with --sweep, or a run folder holding {RESULTS_DIR}/{PER_PROGRAM_FILE}",
    )
    parser.add_argument("run_b", metavar="RUN_B", help="the run to compare it with (same forms)")
    parser.add_argument(
        "--sweep",
        default=None,
        metavar="SWEEP",
        help="RUN_A and RUN_B are job numbers of this sweep (its name, as `mcu-exp report --sweep` takes it)",
    )
    parser.add_argument(
        "--tracking-uri", default=None, help="default: $MLFLOW_TRACKING_URI, else sqlite:///<outputs>/mlflow.db"
    )
    parser.add_argument("--resamples", type=int, default=2000, help="paired bootstrap resamples (default 2000)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the bootstrap (default 0)")
    parser.add_argument(
        "--out", type=Path, default=None, help=f"also write {COMPARISON_FILE} and {REJECTION_FILE} to this folder"
    )
    return parser


def read_per_program(path: Path) -> Any:
    """A ``per_program.csv`` with ``program_id`` as a string index, or a one-line error."""
    import pandas as pd

    try:
        frame = pd.read_csv(path, dtype={PROGRAM_ID: str})
    except (OSError, ValueError) as exc:
        raise CompareError(f"cannot read {path}: {str(exc).splitlines()[0]}") from None
    if PROGRAM_ID not in frame.columns:
        raise CompareError(f"{path} has no {PROGRAM_ID} column (columns: {', '.join(map(str, frame.columns))})")
    return frame.set_index(PROGRAM_ID)


def folder_table(path: Path) -> Path:
    """The per-program CSV of a run folder (``results/per_program.csv``, or ``per_program.csv``
    in the folder itself), or the path itself when it is a file."""
    if path.is_file():
        return path
    for candidate in (path / RESULTS_DIR / PER_PROGRAM_FILE, path / PER_PROGRAM_FILE):
        if candidate.is_file():
            return candidate
    raise CompareError(
        f"no {PER_PROGRAM_FILE} in run folder {path} (looked for {path / RESULTS_DIR / PER_PROGRAM_FILE})"
    )


def calibration_of(scores: Path | None, settings: dict[str, Any] | None, where: str) -> tuple[Any, str]:
    """A run's :class:`~mcu_exp.evaluation.paired_recalibration.RunCalibration` from its
    ``scores.csv`` and decision settings, or (None, what is missing)."""
    from mcu_exp.evaluation.paired_recalibration import RunCalibration, decision_from

    if scores is None:
        return None, f"no {SCORES_FILE} (a proxy without calibration scores, P0/P3, or an older run)"
    decision = decision_from(settings or {})
    if decision is None:
        return None, f"no decision settings (rule, epsilon, quantile) in {where}"
    return RunCalibration(read_per_program(scores), decision), ""


def folder_calibration(table: Path) -> tuple[Any, str]:
    """The calibration of a run folder: ``scores.csv`` and ``config.yaml`` beside its table."""
    import yaml

    from mcu_exp.yaml_limits import safe_load

    scores = table.parent / SCORES_FILE
    config = table.parent / CONFIG_FILE
    settings = None
    if config.is_file():
        try:
            loaded = safe_load(config.read_text(), str(config))
        except (OSError, yaml.YAMLError) as exc:
            raise CompareError(f"cannot read {config}: {str(exc).splitlines()[0]}") from None
        decision = loaded.get("decision") if isinstance(loaded, dict) else None
        settings = decision if isinstance(decision, dict) else None
    return calibration_of(scores if scores.is_file() else None, settings, str(config))


def folder_ceiling(table: Path) -> tuple[dict[str, float], dict[str, str]]:
    """A run folder's ceiling (``metrics.json``, ``reliability.csv`` beside its table) and the
    ``labels`` section of its ``config.yaml``."""
    import yaml

    from mcu_exp.compare.ceiling import label_settings, run_ceiling
    from mcu_exp.yaml_limits import safe_load

    def beside(name: str) -> Path | None:
        return table.parent / name if (table.parent / name).is_file() else None

    config = beside(CONFIG_FILE)
    labels: Any = None
    if config is not None:
        try:
            loaded = safe_load(config.read_text(), str(config))
        except (OSError, yaml.YAMLError) as exc:
            raise CompareError(f"cannot read {config}: {str(exc).splitlines()[0]}") from None
        labels = loaded.get("labels") if isinstance(loaded, dict) else None
    found = run_ceiling({}, beside(METRICS_FILE), beside(RELIABILITY_FILE))
    return found, label_settings(labels if isinstance(labels, dict) else None)


def fetch_run(run_id: str, uri: str, dst: Path) -> Source:
    """An MLflow run's ``per_program.csv`` artifact (at its root, or under ``results/``)."""
    from mcu_exp.compare.ceiling import label_settings, run_ceiling
    from mcu_exp.tracking.artifacts import RunArtifacts, RunLookupError, fetch_run

    try:
        client, run = fetch_run(uri, run_id)
    except RunLookupError as exc:
        raise CompareError(
            f"{run_id!r} is no run folder, and there is {exc} to look it up in "
            "(pass --tracking-uri or set MLFLOW_TRACKING_URI)"
            if exc.missing_store
            else f"unknown run {run_id!r}: no such folder, and not a run of {uri} ({exc})"
        ) from None
    artifacts = RunArtifacts(client, run_id, run.info.artifact_uri)
    folder = dst / run_id
    folder.mkdir(parents=True, exist_ok=True)
    path = artifacts.get(PER_PROGRAM_FILE, folder) or artifacts.get(f"{RESULTS_DIR}/{PER_PROGRAM_FILE}", folder)
    if path is None:
        raise CompareError(f"run {run_id} has no {PER_PROGRAM_FILE} artifact (is it a finished job of mcu-exp?)")
    name = run.info.run_name or run_id
    scores = artifacts.get(SCORES_FILE, folder) or artifacts.get(f"{RESULTS_DIR}/{SCORES_FILE}", folder)
    calibration, missing = calibration_of(scores, dict(run.data.params), f"the params of run {run_id}")
    found = run_ceiling(
        run.data.metrics,
        *(
            artifacts.get(f, folder) or artifacts.get(f"{RESULTS_DIR}/{f}", folder)
            for f in (METRICS_FILE, RELIABILITY_FILE)
        ),
    )
    return Source(
        name=name,
        where=f"MLflow run {run_id} ({name})",
        frame=read_per_program(path),
        calibration=calibration,
        missing=missing,
        ceiling=found,
        labels=label_settings(dict(run.data.params), "labels."),
        params=dict(run.data.params),
    )


def load_source(ref: str, uri: str, dst: Path, sweep: str | None = None) -> Source:
    """A run folder or CSV when ``ref`` is an existing path, else an MLflow run id (or a unique
    prefix of one, or with ``sweep`` a job number of that sweep)."""
    from mcu_exp.compare.params import folder_params
    from mcu_exp.tracking.artifacts import RunLookupError, resolve_run_id

    path = Path(ref)
    if sweep is not None or not path.exists():
        try:
            run_id = resolve_run_id(uri, ref, sweep)
        except RunLookupError as exc:
            if exc.missing_store:
                raise CompareError(f"{ref!r} is no run folder, and there is {exc} to look it up in") from None
            raise CompareError(f"unknown run {ref!r}: {exc}") from None
        return fetch_run(run_id, uri, dst)
    table = folder_table(path)
    calibration, missing = folder_calibration(table)
    found, labels = folder_ceiling(table)
    return Source(
        name=path.name or str(path),
        where=f"{table}",
        frame=read_per_program(table),
        calibration=calibration,
        missing=missing,
        ceiling=found,
        labels=labels,
        params=folder_params(table.parent / CONFIG_FILE),
    )


def write_csv(cmp: Any, a: Source, b: Source, data: Any, out: Path) -> Path:
    """``comparison.csv`` (one row) and ``rejection.csv`` (each scored run's curves) in ``out``."""
    import pandas as pd

    from mcu_exp.evaluation.rejection import rejection_curves

    out.mkdir(parents=True, exist_ok=True)
    from mcu_exp.compare.ceiling import csv_columns

    row = {
        "run_a": a.name,
        "run_b": b.name,
        "source_a": a.where,
        "source_b": b.where,
        **cmp.row(),
        **csv_columns(a.ceiling, b.ceiling),
    }
    pd.DataFrame([row]).to_csv(out / COMPARISON_FILE, index=False)
    curves = [
        rejection_curves(data.truth, score).assign(run=side)
        for side, score in (("A", data.score_a), ("B", data.score_b))
        if score is not None
    ]
    if curves:
        pd.concat(curves, ignore_index=True).to_csv(out / REJECTION_FILE, index=False)
    return out / COMPARISON_FILE


def run(args: argparse.Namespace) -> Any:
    """Load both runs, compare, print, optionally write the CSVs; return the comparison."""
    from mcu_exp.compare.display import render
    from mcu_exp.compare.probe import probe_comparison
    from mcu_exp.evaluation.bootstrap import MIN_RESAMPLES
    from mcu_exp.evaluation.paired import arms, compare_paired, pair
    from mcu_exp.report.build import default_tracking_uri

    if args.resamples < MIN_RESAMPLES:
        raise CompareError(f"--resamples must be at least {MIN_RESAMPLES}, got {args.resamples}")
    uri = args.tracking_uri or default_tracking_uri()
    with tempfile.TemporaryDirectory(prefix="mcu-compare-") as tmp:  # downloads of remote stores only
        a = load_source(args.run_a, uri, Path(tmp), args.sweep)
        b = load_source(args.run_b, uri, Path(tmp), args.sweep)
    data = pair(a.frame, b.frame, ("A", "B"))
    arm_a, arm_b = arms(data, a.calibration, b.calibration, args.seed, (a.missing, b.missing))
    cmp = compare_paired(data, args.resamples, args.seed, arm_a=arm_a, arm_b=arm_b)
    print(render(cmp, a, b, data.only_a, data.only_b), end="")
    probe, why_not = probe_comparison(a, b, args.resamples, args.seed)
    if probe is not None:
        print(probe.text(), end="")
    elif why_not:
        print(why_not)
    if args.out:
        print(f"Results: {write_csv(cmp, a, b, data, args.out)}")
        if probe is not None:
            print(f"Paired analysis: {probe.write(args.out)}")
    return cmp


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of ``mcu-exp compare``."""
    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    load_plugins()  # metrics (and rules) a plugin package adds are known by name here too
    try:
        run(args)
    except ValueError as exc:  # CompareError, PairingError and bad values are ValueErrors
        raise_if_interrupted(exc)
        print(f"mcu-exp compare: error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
