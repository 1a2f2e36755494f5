"""``mcu-exp tune``: tune ε or τ for F1 on a finished run's cached scores, in-sample and with
nested cross-validation, and print how far apart the two are.

The scores come from the run's ``scores.csv`` (``--run-id``, fetched from MLflow: the
α_cal/α_test its decision rule used, whatever the calibrated proxy, P1 or P2) or a file
(``--per-program``: any CSV with columns alpha_cal, alpha_test, human_label). No model is loaded. ``--storage`` keeps the Optuna studies in a
SQLite file, so an interrupted or extended search (more ``--trials``) resumes.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mcu_exp.calibration.threshold import QUANTILE_RULES
from mcu_exp.interrupts import raise_if_interrupted
from mcu_exp.registry import load_plugins


def outputs_dir() -> Path:
    """``$MCU_EXP_OUTPUTS`` or ``./outputs``, as the app resolves ``paths.outputs``."""
    return Path(os.environ.get("MCU_EXP_OUTPUTS") or "outputs")


def build_parser(prog: str = "mcu-exp tune") -> argparse.ArgumentParser:
    """The command's arguments."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description=(
            "Tune ε or the threshold τ for F1 on a finished run's cached scores, in-sample and with nested "
            "cross-validation over programs, and show how much in-sample tuning overstates alignment."
        ),
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--run-id", help="a finished MLflow run of a calibrated proxy (its scores.csv is used)")
    source.add_argument(
        "--per-program",
        type=Path,
        metavar="CSV",
        help="a CSV with columns alpha_cal, alpha_test, human_label (a run's scores.csv)",
    )
    parser.add_argument(
        "--tracking-uri", default=None, help="default: $MLFLOW_TRACKING_URI, else sqlite:///<outputs>/mlflow.db"
    )
    parser.add_argument(
        "--search",
        choices=("epsilon", "threshold", "both"),
        default="both",
        help="tune ε (τ from α_cal), the threshold τ on α_test directly, or both (default)",
    )
    parser.add_argument("--trials", type=int, default=100, help="Optuna trials per study (default 100)")
    parser.add_argument("--folds", type=int, default=5, help="outer cross-validation folds (default 5)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the folds and the TPE samplers")
    parser.add_argument(
        "--quantile",
        choices=QUANTILE_RULES,
        default=None,
        help="quantile rule for τ in ε mode (default: the run's, else empirical)",
    )
    parser.add_argument("--epsilon-range", type=float, nargs=2, default=(0.01, 0.6), metavar=("LOW", "HIGH"))
    parser.add_argument(
        "--reference-epsilon",
        type=float,
        default=None,
        help="the untuned ε shown for reference (default: the run's, else 0.1)",
    )
    parser.add_argument(
        "--storage",
        nargs="?",
        const="",
        default=None,
        metavar="DB",
        help="keep studies in SQLite to resume (default file: <outputs>/tune/optuna.db)",
    )
    parser.add_argument("--out", type=Path, default=None, help="also write the results to this CSV")
    return parser


class TuneError(ValueError):
    """A bad input to ``mcu-exp tune``; the message is one line."""


def fetch_run(run_id: str, uri: str, folder: Path) -> tuple[Path, dict[str, str], str]:
    """Download the run's ``scores.csv``; return it with the run's params and the table's
    source in words (:func:`run_source`)."""
    from mcu_exp.names import SCORES_FILE
    from mcu_exp.tracking.artifacts import RunArtifacts, RunLookupError, fetch_run

    try:
        client, run = fetch_run(uri, run_id)
    except RunLookupError as exc:
        raise TuneError(
            f"{exc}: pass --tracking-uri or --per-program"
            if exc.missing_store
            else f"run {run_id} not found in {uri}: {exc}"
        ) from None
    path = RunArtifacts(client, run_id, run.info.artifact_uri).get(SCORES_FILE, folder)
    if path is None:
        raise TuneError(f"run {run_id} has no {SCORES_FILE} artifact: tune needs a calibrated proxy's run (P1, P2)")
    return path, dict(run.data.params), run_source(run_id, run.info.run_name or "", run.data.params, run.data.tags)


CONFIGURATION = (  # what the title names of a run's configuration: (header, param key, tag)
    ("model", "model.name", "mcu.model"),
    ("proxy", "proxy.name", "mcu.proxy"),
    ("readers", "labels.group", "mcu.labels.group"),
    ("rule", "decision.rule", "mcu.decision.rule"),
    ("ε", "decision.epsilon", ""),
    ("dataset", "dataset.name", "mcu.dataset"),
)


def run_source(run_id: str, name: str, params: Mapping[str, str], tags: Mapping[str, str]) -> str:
    """ "run gpt-4o · p1 · ε=0.1 (3f2c81d0; model=gpt-4o, proxy=p1, readers=all, ε=0.1, …)": the
    run's name, its short id and the settings that make its configuration."""
    settings = []
    for header, key, tag in CONFIGURATION:
        value = tags.get(tag) if tag else None
        value = value or params.get(key)
        if value not in (None, "", "None", "null"):
            settings.append(f"{header}={value}")
    inside = "; ".join(filter(None, [run_id[:8], ", ".join(settings)]))
    return f"run {name} ({inside})" if name else f"run {run_id} ({', '.join(settings) or 'no params'})"


def check_folds(labels: Any, folds: int) -> None:
    """Refuse ``--folds`` larger than the smaller class (each stratified fold needs a program of
    each class), naming the largest value that works."""
    import numpy as np

    positives = int(np.sum(labels))
    smallest = min(positives, int(np.size(labels)) - positives)
    if folds < 2:
        raise TuneError(f"--folds must be at least 2, got {folds}")
    if smallest < folds:
        hint = (
            f"use --folds {smallest} (or fewer)"
            if smallest >= 2
            else "cross-validation needs at least 2 programs of each class"
        )
        raise TuneError(
            f"--folds {folds}: each stratified fold needs a program of each class, and the smaller class has "
            f"{smallest} of {np.size(labels)} programs; {hint}"
        )


def storage_url(value: str | None) -> str | None:
    """An Optuna storage URL: None, a given URL, or SQLite at a path (default under outputs)."""
    if value is None:
        return None
    if "://" in value:
        return value
    path = Path(value) if value else outputs_dir() / "tune" / "optuna.db"
    path.parent.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{path.resolve()}"


def render(results: Sequence[Any], folds: int, trials: int, seed: int, source: str, rule: str | None = None) -> str:
    """The results as a text table (rich, no colour) with a one-line caption; ``rule``: the
    run's decision rule when it is not the conformal one that tune searches (said in the caption)."""
    import io

    from rich.console import Console
    from rich.table import Table

    from mcu_exp.evaluation import metric
    from mcu_exp.tune.nested_cv import OBJECTIVE

    name, show = metric(OBJECTIVE).header, metric(OBJECTIVE).format
    first = results[0]
    table = Table(
        title=f"Tuning for {name} on {source}",
        caption=(
            f"n = {first.n} programs, prevalence {100 * first.prevalence:.1f}%; {folds} stratified outer folds, "
            f"{trials} TPE trials per study, seed {seed}"
            + (
                f" (the stored in-sample studies hold up to {held} trials, all used)"
                if (held := max(r.in_sample.trials for r in results)) > trials
                else ""
            )
            + f". Held-out {name} pools the folds' held-out labels."
            + (
                f" Every column is the conformal rule's (α_test ≤ τ), not the run's own rule {rule}: "
                f"the ε={first.reference_epsilon:g} column is not the run's {name}."
                if rule
                else ""
            )
        ),
    )
    for header in (
        "search",
        "tuned on all",
        f"in-sample {name}",
        f"held-out {name}",
        "per fold",
        "optimism",
        f"ε={first.reference_epsilon:g} {name}",
        f"always-1 {name}",
        f"random {name}",
    ):
        table.add_column(header, justify="left" if header == "search" else "right")
    for res in results:
        mean, sd = res.fold_f1
        value = f"ε={res.in_sample.value:.3f}" if res.search == "epsilon" else f"τ={res.in_sample.value:.4f}"
        table.add_row(
            res.search,
            value,
            show(res.in_sample.f1),
            show(res.held_out_f1),
            f"{100 * mean:.1f} ± {100 * sd:.1f}%",
            f"{100 * res.optimism:+.1f} pts",
            show(res.reference_f1),
            show(res.baseline_always_f1),
            show(res.baseline_random_f1),
        )
    buffer = io.StringIO()
    Console(file=buffer, width=130, color_system=None, force_terminal=False, soft_wrap=False).print(table)
    return buffer.getvalue()


def run(args: argparse.Namespace) -> list[Any]:
    """Load the scores, run the searches, print and optionally save the table."""
    import pandas as pd

    from mcu_exp.report.build import default_tracking_uri
    from mcu_exp.tune.nested_cv import nested_cv, read_per_program

    if args.trials < 1:
        raise TuneError(f"--trials must be at least 1, got {args.trials}")
    low, high = args.epsilon_range
    if not 0.0 < low < high < 1.0:
        raise TuneError(f"--epsilon-range must satisfy 0 < LOW < HIGH < 1, got {low} {high}")
    params: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        if args.run_id:
            path, params, source = fetch_run(args.run_id, args.tracking_uri or default_tracking_uri(), Path(tmp))
        else:
            path, source = args.per_program, str(args.per_program)
        scores = read_per_program(path)
    quantile = args.quantile or params.get("decision.quantile", "empirical")
    reference = (
        args.reference_epsilon if args.reference_epsilon is not None else float(params.get("decision.epsilon", 0.1))
    )
    if scores.dropped:
        print(f"{scores.dropped} programs without scores or a human label left out")
    rule = params.get("decision.rule")
    other_rule = rule if rule not in (None, "", "conformal") else None
    if other_rule:
        print(
            f"mcu-exp tune: note: the run labels programs by the rule {other_rule}; tune searches the conformal "
            "rule's ε and τ on its α_cal/α_test, so no column is the run's own F1",
            file=sys.stderr,
        )
    check_folds(scores.labels, args.folds)
    searches = ("epsilon", "threshold") if args.search == "both" else (args.search,)
    storage = storage_url(args.storage)
    results = [
        nested_cv(
            scores,
            search,
            folds=args.folds,
            trials=args.trials,
            seed=args.seed,
            quantile=quantile,
            epsilon_range=(low, high),
            reference_epsilon=reference,
            storage=storage,
        )
        for search in searches
    ]
    print(render(results, args.folds, args.trials, args.seed, source, other_rule))
    if storage:
        print(f"Optuna studies in {storage}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        pd.DataFrame([r.row() for r in results]).to_csv(args.out, index=False)
        print(f"Results: {args.out}")
    return results


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of ``mcu-exp tune``."""
    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    load_plugins()  # metrics (and rules) a plugin package adds are known by name here too
    try:
        run(args)
    except (ValueError, FileNotFoundError) as exc:  # TuneError is a ValueError
        raise_if_interrupted(exc)
        print(f"mcu-exp tune: error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
