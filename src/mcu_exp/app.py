"""The ``mcu-exp`` command: a thin Hydra entry point around :func:`mcu_exp.pipeline.run_job`.

Configs come from ``conf/`` at the repository's top level, or from ``mcu_exp/conf`` inside
an installed wheel (the wheel ships them there).
"""

from __future__ import annotations

import logging
import os
import secrets
import sys
import warnings
from pathlib import Path

import hydra
from omegaconf import DictConfig, OmegaConf

from mcu_exp.config import register_configs

log = logging.getLogger("mcu_exp")

# Mistakes in the input (config values, data files, missing models): one line, no traceback.
USER_ERRORS: tuple[type[BaseException], ...] = (ValueError, FileNotFoundError, ImportError)


def config_dir() -> str:
    """The folder holding ``config.yaml``: packaged copy first, else the repository's ``conf/``."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "conf", here.parents[1] / "conf"):
        if (candidate / "config.yaml").is_file():
            return str(candidate)
    raise SystemExit(f"mcu-exp: no config.yaml found in {here / 'conf'} or {here.parents[1] / 'conf'}")


def _unique_suffix() -> str:
    """Process id plus randomness: two jobs started in the same second never share a folder."""
    return f"{os.getpid()}-{secrets.token_hex(2)}"


OmegaConf.register_new_resolver("mcu_uid", _unique_suffix, use_cache=True, replace=True)
register_configs()


@hydra.main(version_base="1.3", config_path=config_dir(), config_name="config")
def _job(cfg: DictConfig) -> float:
    from mcu_exp.pipeline import run_job

    try:
        return run_job(cfg)
    except KeyboardInterrupt:
        log.error("interrupted: everything generated so far is in the cache; rerun to resume")
        raise
    except USER_ERRORS as exc:
        log.error("%s", exc)
        if _single_run():
            print(f"mcu-exp: error: {exc}", file=sys.stderr)
            raise SystemExit(1) from None
        raise


def _single_run() -> bool:
    """True outside a multirun (where a failure must not stop the other jobs)."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    return HydraConfig.get().mode != RunMode.MULTIRUN


def _one_line_warnings() -> None:
    """Warnings about the user's data print as ``warning: <message>``, without Python's file
    and source-line trailer; other warnings keep the default format."""
    from mcu_exp.data.types import DatasetWarning

    default = warnings.formatwarning

    def format_warning(message, category, filename, lineno, line=None):  # type: ignore[no-untyped-def]
        if issubclass(category, DatasetWarning):
            return f"warning: {message}\n"
        return default(message, category, filename, lineno, line)

    warnings.formatwarning = format_warning


def main() -> None:
    """Console entry point."""
    _one_line_warnings()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if len(sys.argv) > 1 and sys.argv[1] in SUBCOMMANDS:
        SUBCOMMANDS[sys.argv[1]](sys.argv[2:])
        return
    _job()


from mcu_exp.report.cli import main as report_main  # noqa: E402  (light: argparse only)
from mcu_exp.tune.cli import main as tune_main  # noqa: E402

SUBCOMMANDS: dict = {"report": report_main, "tune": tune_main}
