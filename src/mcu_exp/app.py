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
from omegaconf.errors import OmegaConfBaseException

from mcu_exp.config import register_configs
from mcu_exp.llm.errors import BackendError
from mcu_exp.redact import install_log_redaction, redact_text, redact_yaml_file, remember, secret_values

log = logging.getLogger("mcu_exp")

# Mistakes in the input (config values, data files, missing models or keys) and remote failures
# (rejected key, retries exhausted, budget reached): one line, no traceback.
USER_ERRORS: tuple[type[BaseException], ...] = (ValueError, FileNotFoundError, ImportError, BackendError,
                                                OmegaConfBaseException)
HYDRA_FILES = ("config.yaml", "hydra.yaml", "overrides.yaml")


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
        _protect_secrets(cfg)
        return run_job(cfg)
    except KeyboardInterrupt:
        log.error("interrupted: everything generated so far is in the cache; rerun to resume")
        raise
    except USER_ERRORS as exc:
        message = one_line(exc)
        if _single_run():
            _report(message)
            raise SystemExit(1) from None
        log.error("%s", message)
        raise


def one_line(exc: BaseException) -> str:
    """The error's message on one line, secrets masked."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return redact_text(" | ".join(lines) or type(exc).__name__)


def _report(message: str) -> None:
    """Show the error once, on stderr; the job's log file gets it too (not the console again)."""
    record = log.makeRecord(log.name, logging.ERROR, __file__, 0, "%s", (message,), None)
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.FileHandler):
            handler.handle(record)
    print(f"mcu-exp: error: {message}", file=sys.stderr)


def _protect_secrets(cfg: DictConfig) -> None:
    """Remember the config's secrets (so log lines mask them) and mask them in the copies of
    the config Hydra wrote before the job started (``.hydra/*.yaml``, ``multirun.yaml``)."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    try:
        remember(secret_values(OmegaConf.to_container(cfg, resolve=True)))
    except OmegaConfBaseException:  # an unresolvable value: run_job reports it in one line
        remember(secret_values(OmegaConf.to_container(cfg, resolve=False)))
    hc = HydraConfig.get()
    if hc.output_subdir is not None:
        for name in HYDRA_FILES:
            redact_yaml_file(Path(hc.runtime.output_dir) / str(hc.output_subdir) / name)
    if hc.mode == RunMode.MULTIRUN:
        redact_yaml_file(Path(str(hc.sweep.dir)) / "multirun.yaml")


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
    install_log_redaction()
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
