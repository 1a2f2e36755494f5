"""The ``mcu-exp`` command: a thin Hydra entry point around :func:`mcu_exp.pipeline.run_job`.

Configs come from ``conf/`` at the repository's top level, or from ``mcu_exp/conf`` inside
an installed wheel (the wheel ships them there).
"""

from __future__ import annotations

import logging
import os
import secrets
import sys
import traceback
import warnings
from pathlib import Path

import hydra
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from mcu_exp import collector, console, interrupts
from mcu_exp.cli.commands import SUBCOMMAND_HELP, SUBCOMMANDS
from mcu_exp.config import register_configs
from mcu_exp.config.suggest import USER_FULL_ERROR, composition_message
from mcu_exp.interrupts import exit_interrupted, interrupted_by
from mcu_exp.llm.errors import BackendError
from mcu_exp.plugin_guard import PluginFailure
from mcu_exp.redact import install_log_redaction, redact_text, redact_yaml_file, remember, secret_values
from mcu_exp.store.faults import disk_full_message, quiet_disk_full_traces
from mcu_exp.yaml_limits import YamlLimitError, check_yaml_folder, safe_load

log = logging.getLogger("mcu_exp")

# Mistakes in the input (config values, data files, missing models or keys) and remote failures
# (rejected key, retries exhausted, budget reached): one line, no traceback.
USER_ERRORS: tuple[type[BaseException], ...] = (
    ValueError,
    FileNotFoundError,
    ImportError,
    BackendError,
    OmegaConfBaseException,
    PluginFailure,  # a plugin's entry raised or called sys.exit: named, the run FAILED
)
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
    _restore_full_error()
    collector.tune()  # a launcher's worker (joblib, submitit) never ran the entry point
    from mcu_exp.pipeline import run_job
    from mcu_exp.plugins import freeze_registries, start_plugins

    start_plugins(config_dir())  # once per process (a launcher's worker too), then no more entries
    freeze_registries()

    interrupts.watch(chain=True)  # a launcher's worker (submitit) never ran the entry point's watch()
    try:
        interrupts.check()
        _protect_secrets(cfg)
        with console.job_console(
            progress=not bool(cfg.get("quiet", False)), verbose=_hydra_verbose(), quiet_job=_quiet_job(cfg)
        ):
            primary = run_job(cfg)
        console.job_finished()
        return primary
    except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM: one line, no traceback, the shell's 130 or 143
        message = interrupts.label(console.interrupted_line(exc))
        console.to_log_files(log, message, logging.ERROR)
        exit_interrupted(message, then=interrupts.hand_over)
    except USER_ERRORS as exc:
        if interrupted_by(exc):
            raise KeyboardInterrupt from None
        return _stop(one_line(exc))
    except Exception as exc:  # a full disk under the cache or the outputs, whatever reported it
        if interrupted_by(exc):  # a library's clean-up that failed under a Ctrl-C
            raise KeyboardInterrupt from None
        full = disk_full_message(exc)
        if full is None:
            raise
        return _stop(redact_text(full))


def _quiet_job(cfg: DictConfig) -> str | None:
    """The job's number when it is a job of a sweep whose output goes to its log file (``-m``
    without ``verbose=true``); None when the job prints in full."""
    from hydra.core.hydra_config import HydraConfig

    if _single_run() or bool(cfg.get("verbose", False)):
        return None
    return str(HydraConfig.get().job.num)


def _stop(message: str) -> float:
    """Report a job's one-line error: exit 1 in a single run; in a sweep, log it and mark the
    job failed, and the next job goes on (the sweep ends with its table and a non-zero exit,
    :mod:`mcu_exp.tracking.sweep`)."""
    if _single_run():
        _report(message)
        raise SystemExit(1) from None
    log.error("%s", message)
    try:
        mark_failed(message)
    except OSError as exc:  # the disk that is full holds the job's folder too
        log.error("could not leave the FAILED marker: %s", exc)
    return float("nan")


def mark_failed(message: str) -> None:
    """Leave ``FAILED`` (holding the message) in the job's output folder, where the sweep's
    end counts it."""
    from hydra.core.hydra_config import HydraConfig

    from mcu_exp.tracking.sweep import FAILED_MARKER

    folder = Path(HydraConfig.get().runtime.output_dir)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / FAILED_MARKER).write_text(message + "\n", encoding="utf-8")


def one_line(exc: BaseException) -> str:
    """The error's message on one line, secrets masked."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return redact_text(" | ".join(lines) or type(exc).__name__)


def _report(message: str) -> None:
    """Show the error once, on stderr; the job's log file gets it too (not the console again)."""
    console.to_log_files(log, message, logging.ERROR)
    print(f"mcu-exp: error: {message}", file=sys.stderr)


def _hydra_verbose() -> object:
    """``hydra.verbose`` of the running job (false, true, or logger names)."""
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return False
    verbose = HydraConfig.get().verbose
    return OmegaConf.to_container(verbose) if OmegaConf.is_config(verbose) else verbose


def _protect_secrets(cfg: DictConfig) -> None:
    """Remember the config's secrets (so log lines mask them) and mask them in the copies of
    the config Hydra wrote before the job started (``.hydra/*.yaml``, ``multirun.yaml``)."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    try:
        found = secret_values(OmegaConf.to_container(cfg, resolve=True))
    except OmegaConfBaseException:  # an unresolvable value: run_job reports it in one line
        found = secret_values(OmegaConf.to_container(cfg, resolve=False))
    remember(found)
    _remembered.update(found)
    hc = HydraConfig.get()
    if hc.output_subdir is not None:
        for name in HYDRA_FILES:
            redact_yaml_file(Path(hc.runtime.output_dir) / str(hc.output_subdir) / name)
    if hc.mode == RunMode.MULTIRUN:
        redact_shared_file(Path(str(hc.sweep.dir)) / "multirun.yaml")


# The secrets _protect_secrets remembered in this process, and the shared files it checked:
# path -> (inode, size, mtime in ns) after the check, with the secrets remembered by then.
_remembered: set[str] = set()
_checked: dict[Path, tuple[tuple[int, int, int], frozenset[str]]] = {}


def _identity(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def redact_shared_file(path: Path) -> None:
    """:func:`redact_yaml_file` for a file every job of a sweep checks (``multirun.yaml``), once
    per process while it stays as it was after the last check (same inode, size and mtime) and
    no new secret was remembered since: a sweep's jobs read it once, not once each."""
    before = _identity(path)
    secrets_now = frozenset(_remembered)
    if before is not None and _checked.get(path) == (before, secrets_now):
        return
    redact_yaml_file(path)
    after = _identity(path)
    if after is not None:
        _checked[path] = (after, secrets_now)


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
    """Console entry point. Everything, the set-up included, runs inside the Ctrl-C handler: the
    set-up imports the data package (pandas: a second on a busy machine), and a Ctrl-C there
    printed an import traceback and exited -2 instead of one line and 130."""
    try:
        install_log_redaction()
        quiet_disk_full_traces()
        _one_line_warnings()
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        if not any(arg.lstrip("+~").startswith("hydra.verbose") for arg in sys.argv[1:]):
            # MLflow's INFO lines ("Creating initial MLflow database tables…") only when asked:
            # MLFLOW_LOGGING_LEVEL=INFO or hydra.verbose (see mcu_exp.console).
            os.environ.setdefault("MLFLOW_LOGGING_LEVEL", "WARNING")
        if len(sys.argv) > 1 and sys.argv[1] in SUBCOMMANDS:
            SUBCOMMANDS[sys.argv[1]](sys.argv[2:], config_dir())
            return
        _compose_and_run()
    except KeyboardInterrupt as exc:  # a Ctrl-C outside a job (composing, a subcommand): one line, 130
        exit_interrupted(console.interrupted_line(exc))
    except Exception as exc:  # a library's clean-up that failed under a Ctrl-C (see interrupted_by)
        if not interrupted_by(exc):
            raise
        exit_interrupted(console.interrupted_line(KeyboardInterrupt()))


# Composition errors reach _compose_and_run as exceptions (not as Hydra's printed report) while
# this is set; _job restores the user's own setting before the job starts, so failures of the
# job itself keep Hydra's reporting. The user's value travels in this variable so that jobs in
# other processes (joblib, submitit) restore it too.
_FULL_ERROR = "HYDRA_FULL_ERROR"
_UNSET = "<unset>"


def _compose_and_run() -> None:
    """Run the Hydra app; a misspelled key in an override becomes one line with a suggestion
    (never Hydra's hint to add it with ``+``, which would silently add an unused key)."""
    from hydra.errors import CompactHydraException

    user = os.environ.get(_FULL_ERROR)
    os.environ[USER_FULL_ERROR] = _UNSET if user is None else user
    os.environ[_FULL_ERROR] = "1"
    try:
        from mcu_exp.plugins import start_plugins

        start_plugins(config_dir())  # before composing: decision=<rule> and proxy=<name> of plugins compose
    except ImportError as exc:  # a plugin that fails to load: one line naming it
        if interrupted_by(exc):
            raise KeyboardInterrupt from None
        print(f"mcu-exp: error: {one_line(exc)}", file=sys.stderr)
        raise SystemExit(1) from None
    try:
        check_config_dirs(sys.argv[1:])
    except YamlLimitError as exc:  # an alias bomb in a --config-dir file: one line, before Hydra hangs on it
        print(f"mcu-exp: error: {one_line(exc)}", file=sys.stderr)
        raise SystemExit(1) from None
    try:
        _job()
    except CompactHydraException as exc:
        if interrupted_by(exc):  # Hydra or OmegaConf stopped halfway by a Ctrl-C
            raise KeyboardInterrupt from None
        if user == "1":
            raise
        message = composition_message(exc)
        if message is not None:
            print(f"mcu-exp: error: {message}", file=sys.stderr)
            raise SystemExit(1) from None
        # Hydra's own compact report, as without this wrapper.
        sys.stderr.write(str(exc) + os.linesep)
        if isinstance(exc.__cause__, OmegaConfBaseException):
            sys.stderr.write(str(exc.__cause__) + os.linesep)
        sys.stderr.write("\nSet the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.\n")
        raise SystemExit(1) from None
    except Exception as exc:  # a job of another process that failed (its traceback, as Hydra shows it)
        if interrupted_by(exc):
            raise KeyboardInterrupt from None
        if user == "1":
            raise
        traceback.print_exc()
        raise SystemExit(1) from None
    finally:
        _restore_full_error()


def check_config_dirs(argv: list[str]) -> None:
    """Scan (:func:`~mcu_exp.yaml_limits.check_yaml_folder`) every YAML file of the config
    folders the command line adds, ``--config-dir``, ``--config-path`` and ``hydra.searchpath``
    (given there or in those folders' primary config), before Hydra composes: Hydra's loader
    would expand an alias bomb in one until the job is killed. The packaged ``conf/`` ships with
    the tool and is not scanned; a malformed command line is left to Hydra to report."""
    import yaml
    from hydra._internal.utils import get_args_parser  # the parser hydra.main reads argv with
    from hydra.core.override_parser.overrides_parser import OverridesParser

    if not any(arg.startswith(("-c", "--c")) or "searchpath" in arg for arg in argv):
        return
    parser = get_args_parser()
    parser.exit_on_error = False
    try:
        args, _ = parser.parse_known_args(argv)
        overrides = OverridesParser.create().parse_overrides(args.overrides)
    except Exception:  # noqa: BLE001 (whatever the parsers raise: Hydra reports a malformed command line itself)
        return
    folders = [Path(args.config_dir)] if args.config_dir else []
    if args.config_path and "://" not in args.config_path:
        folders.append(Path(__file__).resolve().parent / args.config_path)  # Hydra: relative to this module
    given = next((o.value() for o in overrides if o.get_key_element() == "hydra.searchpath"), None)
    for folder in list(folders):
        check_yaml_folder(folder)
        primary = folder / f"{args.config_name or 'config'}.yaml"
        if given is None and primary.is_file():
            try:
                found = safe_load(primary.read_bytes(), str(primary))
            except yaml.YAMLError:  # not YAML: Hydra names the error (the file passed the scan above)
                found = None
            hydra_node = found.get("hydra") if isinstance(found, dict) else None
            given = hydra_node.get("searchpath") if isinstance(hydra_node, dict) else None
    for entry in given if isinstance(given, list) else []:
        text = str(entry)
        if text.startswith("file://") or ("://" not in text and "${" not in text):
            check_yaml_folder(Path(text.removeprefix("file://")))


def _restore_full_error() -> None:
    """Put the user's ``HYDRA_FULL_ERROR`` back (see :func:`_compose_and_run`)."""
    saved = os.environ.pop(USER_FULL_ERROR, None)
    if saved is None:
        return
    if saved == _UNSET:
        os.environ.pop(_FULL_ERROR, None)
    else:
        os.environ[_FULL_ERROR] = saved


def _subcommand_lines() -> str:
    """The subcommands, one line each, for ``mcu-exp --help`` (resolver ``mcu_subcommands``)."""
    return "\n".join(f"  {'mcu-exp ' + name + ' [options]':<37}{line}" for name, line in SUBCOMMAND_HELP.items())


OmegaConf.register_new_resolver("mcu_subcommands", _subcommand_lines, replace=True)
