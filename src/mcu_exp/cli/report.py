"""``mcu-exp report``: compare finished runs of MLflow in paper-style tables and figures.

Selects runs (an experiment, a sweep tag, any MLflow filter string; debug runs, tagged
``mcu.debug=true``, only with ``--debug``), collapses reruns of a configuration (every
result-changing parameter equal, see :mod:`mcu_exp.report.identity`) to the newest, and
writes ``report.md``, ``report.html`` (self-contained), ``summary.csv``, ``subgroups.csv``,
``runs.csv``, ``measures.csv`` and ``comparisons.csv`` (when the runs left what they need,
see :mod:`mcu_exp.report.measures` and :mod:`mcu_exp.report.comparisons`),
``figures/*.png`` and, for runs that share a configuration but differ in dataset, the pooled
``pooled/<k>/`` (:mod:`mcu_exp.report.pooled_report`) to ``--out``; then logs that folder as the artifacts of a
run named ``report · <sweep>`` (tag ``mcu.kind=report``), which later reports leave out, as
they leave out a multirun's parent run (``mcu.kind=sweep``). Each run's metrics and curves
come from its artifacts too (:mod:`mcu_exp.report.sources`). Heavy imports wait until a
report is actually made, so ``mcu-exp`` stays quick to start.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from mcu_exp.interrupts import raise_if_interrupted
from mcu_exp.registry import load_plugins
from mcu_exp.report.build import ReportError, default_tracking_uri, make_report


def build_parser(prog: str = "mcu-exp report") -> argparse.ArgumentParser:
    """The command's arguments."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description=(
            "Compare finished MLflow runs in paper-style tables (Markdown, CSV) and one self-contained "
            "HTML page with figures; the report is also logged as an MLflow run."
        ),
    )
    parser.add_argument(
        "--experiment", action="append", metavar="NAME", help="MLflow experiment name (repeatable; default: mcu_exp)"
    )
    parser.add_argument(
        "--sweep", metavar="TAG", help="only the runs of this sweep (tag mcu.sweep); 'latest' picks the newest sweep"
    )
    parser.add_argument(
        "--filter", metavar="EXPR", default="", help="MLflow search filter, e.g. \"tags.`mcu.model` = 'gpt-4o'\""
    )
    parser.add_argument("--status", default="FINISHED", help="run status to keep, or 'any' (default FINISHED)")
    parser.add_argument(
        "--tracking-uri", default=None, help="default: $MLFLOW_TRACKING_URI, else sqlite:///<outputs>/mlflow.db"
    )
    parser.add_argument("--out", type=Path, default=None, help="output folder (default outputs/reports/<time>)")
    parser.add_argument("--title", default=None, help="page title")
    parser.add_argument("--no-log", action="store_true", help="do not log the report as an MLflow run")
    parser.add_argument(
        "--debug",
        action="store_true",
        help="also compare debug and smoke runs (tag mcu.debug=true), which are skipped otherwise",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of ``mcu-exp report``."""
    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    load_plugins()  # metrics (and rules) a plugin package adds are known by name here too
    uri = args.tracking_uri or default_tracking_uri()
    try:
        out = make_report(
            uri,
            args.experiment or ["mcu_exp"],
            args.sweep,
            args.filter,
            args.status,
            args.out,
            args.title,
            log=not args.no_log,
            include_debug=args.debug,
            echo=True,
        )
    except ReportError as exc:
        raise_if_interrupted(exc)
        print(f"mcu-exp report: error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    print(f"Report: {out / 'report.html'}")
    print(f"  tables: {out / 'report.md'}, {out / 'summary.csv'}")
