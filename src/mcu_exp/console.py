"""What a job shows on the terminal: one line per loading step, progress bars that log lines and
warnings do not break, and third-party libraries quiet unless asked.

Two switches, both existing keys: ``quiet=true`` turns progress bars off (a loading step then
prints only its final line), and Hydra's own ``hydra.verbose`` lets libraries speak again:
``hydra.verbose=true`` for every logger, or a list of logger names
(``hydra.verbose=[transformers,mlflow]``) for those libraries only. Quiet means: MLflow and
alembic at WARNING (their "Creating initial MLflow database tables…" INFO lines gone),
transformers at ERROR with its load bars off (GGUF conversion, "Loading weights"). A variable the
user set (``MLFLOW_LOGGING_LEVEL``, ``TRANSFORMERS_VERBOSITY``) is left as it is.

The settings are the process's: :func:`job_console` sets them for one job; components read
them through :func:`progress_enabled` and :func:`loud` when their caller passed nothing.

A job of a sweep (``-m``) is quiet on the terminal unless ``verbose=true``: what it prints, its
info lines and its warnings go to its log file only (``<job folder>/<job name>.log``, which
always holds them), and the terminal gets the one line the job hands to :func:`job_line` (its
name, headline and verdict), errors, and the launcher's own lines. Ctrl-C inside a job's run
ends it with :class:`JobInterrupted`, which says in one line what was saved and how to resume.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from tqdm import tqdm
from tqdm.contrib.logging import logging_redirect_tqdm

log = logging.getLogger(__name__)

# Loggers made quiet (level at least this) unless hydra.verbose names them.
QUIET_LEVELS: dict[str, int] = {
    "mlflow": logging.WARNING,
    "alembic": logging.WARNING,
    "transformers": logging.ERROR,
    "huggingface_hub": logging.WARNING,
    "sentence_transformers": logging.WARNING,
    "bert_score": logging.WARNING,
}


@dataclass
class _Settings:
    progress: bool = True
    verbose: bool | tuple[str, ...] = False
    terminal: TextIO | None = None  # where job_line writes while a sweep job's output goes to its log
    job: str = ""  # the sweep job's number, shown by job_line
    warnings: int = 0  # warnings sent to the log file only, not counted by an earlier job
    seen: set[str] = field(default_factory=set)  # warning texts an earlier job of this process counted


_settings = _Settings()


def _verbose_names(verbose: Any) -> bool | tuple[str, ...]:
    """``hydra.verbose`` as Hydra takes it: a bool, one logger name, or a list of names."""
    if isinstance(verbose, bool) or verbose is None:
        return bool(verbose)
    if isinstance(verbose, str):
        return (verbose,)
    return tuple(str(name) for name in verbose)


def configure(*, progress: bool = True, verbose: Any = False) -> None:
    """Set the process's console settings (``progress``: bars on; ``verbose``: ``hydra.verbose``)."""
    _settings.progress = bool(progress)
    _settings.verbose = _verbose_names(verbose)


def progress_enabled(requested: bool | None = None) -> bool:
    """``requested`` when given, else the process's setting (``not quiet``)."""
    return _settings.progress if requested is None else bool(requested)


def loud(name: str) -> bool:
    """Whether logger ``name``'s library may speak: ``hydra.verbose`` is true or names it (or a parent)."""
    verbose = _settings.verbose
    if verbose is True:
        return True
    if not verbose:
        return False
    return any(name == v or name.startswith(v + ".") or v.startswith(name + ".") for v in verbose)


def quiet_libraries() -> None:
    """Quiet the libraries ``hydra.verbose`` does not name (idempotent, cheap; call again after
    importing one, since MLflow sets its logger's level when it is imported)."""
    for name, level in QUIET_LEVELS.items():
        if loud(name):
            continue
        if name == "mlflow":
            # MLflow reads it when imported; a value the user set wins.
            os.environ.setdefault("MLFLOW_LOGGING_LEVEL", logging.getLevelName(level))
            level = logging.getLevelName(os.environ["MLFLOW_LOGGING_LEVEL"].upper())
            if not isinstance(level, int):
                continue
        if name == "transformers" and "TRANSFORMERS_VERBOSITY" in os.environ:
            continue
        logger = logging.getLogger(name)
        if logger.getEffectiveLevel() < level:
            logger.setLevel(level)
    if not loud("transformers") and "transformers" in sys.modules:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]


class _Discard:
    """A text stream that drops what it is given (never closed, so late writers never fail)."""

    encoding = "utf-8"

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


_DISCARD = _Discard()


@contextlib.contextmanager
def quiet_output(library: str = "transformers") -> Iterator[None]:
    """Drop what ``library`` writes straight to stderr (progress bars it draws with plain tqdm,
    warnings) while the block runs, unless ``hydra.verbose`` names it. Log records still
    reach their handlers (which hold the real streams)."""
    if loud(library):
        yield
        return
    with contextlib.redirect_stderr(_DISCARD):
        yield


def _plain(text: str, stream: TextIO) -> str:
    """``text`` with … and → spelt in ASCII when ``stream`` cannot encode them."""
    try:
        text.encode(getattr(stream, "encoding", None) or "ascii")
        return text
    except (UnicodeEncodeError, LookupError):
        return text.replace("…", "...").replace("→", "->")


def to_log_files(logger: logging.Logger, message: str, level: int = logging.INFO) -> None:
    """Write ``message`` to the job's log files only (not to the console again)."""
    record = logger.makeRecord(logger.name, level, __file__, 0, "%s", (message,), None)
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.FileHandler) and record.levelno >= handler.level:
            handler.handle(record)


def _is_tty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


@contextlib.contextmanager
def step(text: str, progress: bool | None = None, logger: logging.Logger | None = None) -> Iterator[None]:
    """One loading step on one line of stderr: ``<text>… done in 21.3 s``.

    On a terminal with progress on, ``<text>…`` shows while the block runs (log lines and
    warnings print above it); otherwise only the final line is printed. The final line also
    goes to the job's log files. A failure prints ``<text>… failed`` and re-raises.
    """
    stream = sys.stderr
    live = progress_enabled(progress) and _is_tty(stream)
    started = time.perf_counter()
    bar = tqdm(
        total=None,
        desc=_plain(f"{text}…", stream),
        bar_format="{desc}",
        file=stream,
        disable=not live,
        leave=True,
        dynamic_ncols=True,
    )
    outcome = "failed"
    try:
        yield
        outcome = f"done in {time.perf_counter() - started:.1f} s"
    finally:
        line = _plain(f"{text}… {outcome}", stream)
        if live:
            bar.set_description_str(line, refresh=False)
            bar.close()
        else:
            bar.close()
            tqdm.write(line, file=stream)
        to_log_files(logger or log, line, logging.INFO if outcome != "failed" else logging.ERROR)


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """:func:`warnings.showwarning` through ``tqdm.write``: a warning never breaks a bar."""
    text = warnings.formatwarning(message, category, filename, lineno, line)
    with contextlib.suppress(OSError, ValueError):
        tqdm.write(text.rstrip("\n"), file=file or sys.stderr)


class JobInterrupted(KeyboardInterrupt):
    """Ctrl-C inside a job's MLflow run: how many samples this job saved to the cache, the run
    (ended KILLED) and the cache they are in, for the one line the command prints."""

    def __init__(self, saved: int, run_id: str | None, cache: str) -> None:
        super().__init__(saved, run_id, cache)
        self.saved, self.run_id, self.cache = saved, run_id, cache

    def line(self) -> str:
        """``interrupted: 12 samples saved …; MLflow run … marked KILLED; rerun … to resume``."""
        run = f"; MLflow run {self.run_id} marked KILLED" if self.run_id else ""
        return (
            f"interrupted: {self.saved} sample{'' if self.saved == 1 else 's'} generated by this job saved in the "
            f"cache ({self.cache}){run}; run the same command again to resume from them"
        )


_finished_jobs = 0  # jobs this process ran to their end (a sweep's, or the one job)


def job_finished() -> None:
    """Count a job that ran to its end, so a later Ctrl-C (between a sweep's jobs, after its
    summary) does not say that nothing was generated."""
    global _finished_jobs
    _finished_jobs += 1


def interrupted_line(exc: KeyboardInterrupt) -> str:
    """The one line for a Ctrl-C: :meth:`JobInterrupted.line` inside a job's run; else what the
    jobs that finished left (their runs, outputs and cached samples), or, before any job, that
    nothing was generated yet."""
    if isinstance(exc, JobInterrupted):
        return exc.line()
    if _finished_jobs:
        jobs = f"{_finished_jobs} job{'' if _finished_jobs == 1 else 's'}"
        return (
            f"interrupted after {jobs} finished (their runs, outputs and generated samples are saved); "
            "run the same command again: finished work comes back from the caches"
        )
    return "interrupted before the job generated anything; run the same command again to start it"


def job_line(text: str) -> None:
    """The job's one-line result: on the terminal while a sweep job is quiet (prefixed with its
    number), and in the job's log file always."""
    to_log_files(log, text)
    if _settings.terminal is None:
        return
    note = f" ({_settings.warnings} warning{'s' if _settings.warnings != 1 else ''} in the job's log)"
    prefix = f"[job {_settings.job}] " if _settings.job else ""
    _settings.terminal.write(f"{prefix}{text}{note if _settings.warnings else ''}\n")
    _settings.terminal.flush()


def _log_file() -> str | None:
    """The file of the root logger's first file handler (the job's log), if any."""
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.FileHandler):
            return handler.baseFilename
    return None


def _warning_to_log(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """:func:`warnings.showwarning` of a quiet sweep job: the warning goes to the log file, and
    is counted for :func:`job_line` unless an earlier job of the sweep (in this process) counted
    the same text: a dataset warning every job repeats is noted on the first job's line alone."""
    text = f"{category.__name__}: {message}"
    if text not in _settings.seen:  # the same dataset warning in every job of a sweep is said once
        _settings.seen.add(text)
        _settings.warnings += 1
    to_log_files(log, warnings.formatwarning(message, category, filename, lineno, line).rstrip("\n"), logging.WARNING)


@contextlib.contextmanager
def _to_log_file(path: str) -> Iterator[None]:
    """Print, info log lines and warnings into the job's log file at ``path``; log records of
    WARNING and above still reach the terminal."""
    console_handlers = [h for h in logging.getLogger().handlers if not isinstance(h, logging.FileHandler)]
    levels = [h.level for h in console_handlers]
    terminal = sys.stdout
    shown = warnings.showwarning
    with open(path, "a", encoding="utf-8", buffering=1) as stream:
        _settings.terminal, _settings.warnings = terminal, 0
        warnings.showwarning = _warning_to_log
        for handler in console_handlers:
            handler.setLevel(max(handler.level, logging.WARNING))
        try:
            with contextlib.redirect_stdout(stream):
                yield
        finally:
            for handler, level in zip(console_handlers, levels):
                handler.setLevel(level)
            warnings.showwarning = shown
            _settings.terminal = None


@contextlib.contextmanager
def job_console(
    *,
    progress: bool = True,
    verbose: Any = False,
    loggers: Sequence[logging.Logger] | None = None,
    quiet_job: str | None = None,
) -> Iterator[None]:
    """The console of one job: settings from ``quiet`` and ``hydra.verbose``, libraries quiet,
    and log lines (of ``loggers``' console handlers, the root's by default) and warnings
    written through ``tqdm.write`` so they print above the progress bars instead of through them.
    ``quiet_job`` (a sweep job's number; "" for an unnumbered one) sends the job's output to its
    log file and leaves the terminal :func:`job_line` (see the module docstring)."""
    before = _Settings(_settings.progress, _settings.verbose)
    configure(progress=progress, verbose=verbose)
    quiet_libraries()
    shown = warnings.showwarning
    warnings.showwarning = _show_warning
    _settings.job = quiet_job or ""
    try:
        with logging_redirect_tqdm(loggers=list(loggers) if loggers is not None else None):
            path = _log_file() if quiet_job is not None else None
            if path is None:
                yield
            else:
                with _to_log_file(path):
                    yield
    finally:
        warnings.showwarning = shown
        _settings.progress, _settings.verbose, _settings.job = before.progress, before.verbose, ""
