"""The ``mcu-exp`` subcommands: each name's entry and its line in ``mcu-exp --help``.

Every entry takes the command's own arguments and the folder of the app's ``config.yaml``
(which ``model`` and ``reliability`` compose from). The modules are light to import (argparse
only; their work imports what it needs when it runs), so ``mcu-exp`` stays quick to start.
"""

from __future__ import annotations

from collections.abc import Callable

from mcu_exp.cli.bundle import main as bundle_main
from mcu_exp.cli.cache import main as cache_main
from mcu_exp.cli.compare import main as compare_main
from mcu_exp.cli.figures import main as figures_main
from mcu_exp.cli.listing import main as list_main
from mcu_exp.cli.model import main as model_main
from mcu_exp.cli.reliability import main as reliability_main
from mcu_exp.cli.report import main as report_main
from mcu_exp.cli.tune import main as tune_main

SUBCOMMANDS: dict[str, Callable[[list[str], str], None]] = {
    "report": lambda argv, conf: report_main(argv),
    "compare": lambda argv, conf: compare_main(argv),
    "tune": lambda argv, conf: tune_main(argv),
    "model": model_main,
    "cache": lambda argv, conf: cache_main(argv),
    "bundle": lambda argv, conf: bundle_main(argv),
    "reliability": reliability_main,
    "list": lambda argv, conf: list_main(argv),
    "figures": lambda argv, conf: figures_main(argv),
}
SUBCOMMAND_HELP: dict[str, str] = {
    "report": "tables and figures comparing finished MLflow runs (its own --help)",
    "compare": "two runs on their shared programs: paired CIs, DeLong, McNemar, PRR (its own --help)",
    "tune": "tune epsilon or tau for F1 on a finished run's scores, in-sample and nested CV (its own --help)",
    "model": "convert: a GGUF model as a Hugging Face folder (safetensors) in the user cache (its own --help)",
    "cache": "export, import: move cached generations and scores between SQLite files and PostgreSQL (its own --help)",
    "bundle": "export, replay, show: a run's table with the samples that made it, replayed anywhere (its own --help)",
    "reliability": "a dataset's human noise ceiling (split-half, Krippendorff's alpha) without a model (its own --help)",
    "list": "each registry's entries (metrics, rules, backends, ...) and the package each came from",
    "figures": "draw finished jobs' own figures from their files (a sweep's jobs leave them out by default)",
}
