"""``mcu-exp reliability [OVERRIDES…]``: a dataset's human reliability, without any model.

The ``dataset``, ``labels`` and ``evaluation`` sections are composed as a job composes them
(``dataset=custom dataset.root=…``, ``labels.readers=tested``, ``evaluation.ceiling_splits=…``),
so a researcher sees the ceiling a sweep's proxies would be read against before paying for
the sweep: all readers and each reader subgroup of ``evaluation.subgroups``.
"""

from __future__ import annotations

import argparse
import io
import math
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from mcu_exp.interrupts import raise_if_interrupted

if TYPE_CHECKING:
    from mcu_exp.config import Config

PROG = "mcu-exp reliability"
COLUMNS = (
    ("auc_score", "AUC (lower)", "auc_score"),
    ("f1", "F1 (lower)", "f1"),
    ("split_half_rho", "ρ (lower)", "spearman"),
    ("reliability", "reliability (full)", "spearman"),
    ("spearman", "ceiling on ρ (full)", "spearman"),
    ("upper_auc_score", "AUC (upper)", "auc_score"),
    ("second_panel_auc_score", "AUC (2nd panel)", "auc_score"),
)


def build_parser(prog: str = PROG) -> argparse.ArgumentParser:
    """The command's arguments: Hydra overrides of the dataset, labels and evaluation sections."""
    parser = argparse.ArgumentParser(
        prog=prog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Print the humans' own ceiling of a dataset as two bounds: the lower (pessimistic) one\n"
            "splits each program's readers in half at random many times (evaluation.ceiling_splits,\n"
            "seed evaluation.seed): the half-panel AUC and F1 of one half against the other's label,\n"
            "their rank correlation, its Spearman-Brown extrapolation to the full panel and the\n"
            "ceiling on any predictor's rho; the upper one fits a beta-binomial reader model: the AUC\n"
            "of the programs' true understandability against a full panel's labels. Intervals are\n"
            "over programs (evaluation.ceiling_resamples stratified resamples). With Krippendorff's\n"
            "alpha; for all readers and each reader subgroup. No model is run."
        ),
        epilog="examples: mcu-exp reliability\n"
        "          mcu-exp reliability dataset=custom dataset.root=/path/to/folder labels.readers=tested",
    )
    parser.add_argument(
        "overrides",
        nargs="*",
        metavar="OVERRIDE",
        help="Hydra overrides, as for a job (dataset=…, dataset.*, labels.*, evaluation.*)",
    )
    return parser


def render(found: dict[str, dict[str, float]], dataset: str, labels: str, confidence: float) -> str:
    """The ceiling of every label set as a text table, with what each column is."""
    from rich.console import Console
    from rich.table import Table

    from mcu_exp.evaluation.ceiling_lines import CEILING, estimate, value

    first = next(iter(found.values()))
    table = Table(
        title=f"Human reliability of {dataset} ({labels})",
        caption=(
            f"[ ] = {100 * confidence:g} % CI over programs ({value(first, CEILING + 'resamples'):,.0f} stratified "
            f"program resamples × {value(first, CEILING + 'inner_splits'):,.0f} reader splits); lower: one half of "
            "each program's readers (AUC: its mean ABU50; ρ: its mean correctness) against the other, mean over "
            f"{value(first, CEILING + 'splits'):,.0f} splits (pessimistic); full: the whole panel, by Spearman–Brown; "
            "ceiling on ρ = √reliability; upper: the programs' true understandability against a full panel's "
            "labels under a beta-binomial reader model (labels.rule=mean_abu50); 2nd panel: a second, "
            "independent full panel; α: Krippendorff's α (nominal) on each evaluation's ABU50; programs: with "
            "two or more readers (1 reader: left out); undefined below 10 programs"
        ),
    )
    table.add_column("group")
    table.add_column("programs (1 reader)", justify="right", no_wrap=True)
    table.add_column("α", justify="right")
    for _, head, _ in COLUMNS:
        table.add_column(head, justify="right", no_wrap=True)
    for name, figures in found.items():
        alpha = value(figures, CEILING + "krippendorff_alpha")
        table.add_row(
            name,
            f"{value(figures, CEILING + 'programs'):.0f} ({value(figures, CEILING + 'programs_left_out'):.0f})",
            f"{alpha:.3f}" if math.isfinite(alpha) else "undefined",
            *(estimate(figures, CEILING + key, kind) for key, _, kind in COLUMNS),
        )
    buffer = io.StringIO()
    Console(file=buffer, width=210, color_system=None, force_terminal=False, soft_wrap=False).print(table)
    return buffer.getvalue()


def main(argv: Sequence[str] | None = None, config_dir: str | None = None) -> None:
    """Console entry: ``mcu-exp reliability [OVERRIDE…]``; one-line errors, exit 1."""
    import hydra.errors
    from omegaconf.errors import OmegaConfBaseException

    args = build_parser().parse_args(argv)
    if config_dir is None:
        raise SystemExit(f"{PROG}: no config folder given")
    try:
        print(report(config_dir, args.overrides), end="")
    except (ValueError, FileNotFoundError, OmegaConfBaseException, hydra.errors.HydraException) as exc:
        raise_if_interrupted(exc)
        message = " | ".join(line.strip() for line in str(exc).splitlines() if line.strip()) or type(exc).__name__
        print(f"{PROG}: error: {message}", file=sys.stderr)
        raise SystemExit(1) from None


def report(config_dir: str, overrides: Sequence[str]) -> str:
    """The printed reliability of the dataset the overrides compose."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from mcu_exp.ceiling.versus import ceilings
    from mcu_exp.data import load_dataset
    from mcu_exp.job.validate import check_config

    with initialize_config_dir(config_dir=config_dir, version_base="1.3"):
        cfg: Config = OmegaConf.to_object(compose("config", overrides=list(overrides)))  # type: ignore[assignment]
    check_config(cfg)
    dataset = load_dataset(cfg.dataset)
    lab, ev = cfg.labels, cfg.evaluation
    present = set(dataset.evaluations["group"].dropna())
    found = ceilings(dataset, None, lab, ev, [g for g in ev.subgroups if g in present])
    labels = f"{lab.rule} ≥ {lab.min_fraction:g}, group {lab.group}, readers {lab.readers}"
    return (
        f"Dataset {dataset.name}: {len(dataset.programs)} programs, {len(dataset.evaluations)} evaluations\n"
        + render(found, dataset.name, labels, ev.confidence)
    )
