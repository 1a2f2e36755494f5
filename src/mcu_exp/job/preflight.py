"""What a command checks and says before its first job: the data can be had, and where its
store is when that store is new.

:class:`Preflight` (a Hydra callback in ``conf/config.yaml``, after the paths' check and before
the sweep's parent run is opened) loads a sweep's dataset once when it starts: data that cannot
be had (offline, no copy in ``$MCU_EXP_DATA``, ``dataset.root`` or the user cache) stops the
sweep with one line, before any MLflow run exists, instead of failing every job the same way.
Before that it composes the sweep's first job and a few more that between them hold every swept
value (:func:`compose_jobs`): a misspelled key, or a value out of range in any of them, is one
line, and nothing is made under the outputs folder.

The default outputs folder, ``outputs`` (MLflow store and generation cache), lies under the
folder the command starts in, as Hydra's run folders do. So that a command started from another
folder does not silently begin an empty store and generate everything again, each command on the
default records its store's path in the user cache (:data:`LAST_STORE`); one that then starts a
new, empty store elsewhere says so in one line naming the store it would have reused
(:func:`store_notice`). A store chosen explicitly (``paths.outputs``, ``$MCU_EXP_OUTPUTS``) is
neither announced nor recorded.
"""

from __future__ import annotations

import copy
import os
import sys
import warnings
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback

DEFAULT_OUTPUTS = "outputs"
LAST_STORE = "last_outputs"  # in the user cache: the last default store a command used
STORE_FILES = ("mlflow.db", "cache")  # what makes an outputs folder a store that holds something
# Swept keys that may change which data a job reads: the sweep's own config cannot stand for its jobs'.
DATASET_KEYS = ("dataset", "dataset.root", "dataset.format", "dataset.name", "dataset.questions", "experiment")


def holds_store(folder: Path) -> bool:
    """True when ``folder`` holds an MLflow store or a generation cache."""
    return any((folder / name).exists() for name in STORE_FILES)


def store_notice(outputs: str, state: Path) -> str | None:
    """Record the default store ``outputs`` (as configured) in ``state``; the line saying that a
    new, empty store starts here while the last recorded one still holds runs, or None. Only the
    default relative ``outputs`` is recorded or announced."""
    if outputs != DEFAULT_OUTPUTS:
        return None
    here = Path(os.path.abspath(outputs))
    try:
        last = Path(state.read_text(encoding="utf-8").strip())
    except OSError:
        last = None
    line = None
    if last is not None and last != here and not holds_store(here) and holds_store(last):
        line = (
            f"mcu-exp: note: starting a new, empty store {here} (MLflow runs and generation cache); the last "
            f"run used {last}: start from {last.parent} or pass paths.outputs={last} to reuse its cache and runs"
        )
    try:
        state.parent.mkdir(parents=True, exist_ok=True)
        state.write_text(f"{here}\n", encoding="utf-8")
    except OSError:
        pass  # a read-only home: no note next time, nothing else lost
    return line


def data_problem(config: Any) -> str | None:
    """The one-line problem of loading the dataset of a composed config (``hydra`` node
    included), or None: it loads, or the config is left to the jobs' own checks (a value that
    does not resolve, a plugin's format)."""
    from omegaconf import open_dict, read_write
    from omegaconf.errors import OmegaConfBaseException

    from mcu_exp.config.schema import typed_config
    from mcu_exp.data import DatasetError, load_dataset
    from mcu_exp.redact import redact_text

    try:
        task = copy.deepcopy(config)
        with read_write(task), open_dict(task):
            task.pop("hydra", None)
        dataset = typed_config(task).dataset
    except (OmegaConfBaseException, ValueError, TypeError, AttributeError):
        return None
    try:
        with warnings.catch_warnings(record=True):  # each job shows the dataset's warnings itself
            warnings.simplefilter("always")
            load_dataset(dataset)
    except DatasetError as exc:
        return redact_text(str(exc).splitlines()[0] if str(exc) else repr(exc))
    except Exception:  # noqa: BLE001 (anything else is the job's to report, with its context)
        return None
    return None


def swept_keys(config: Any) -> list[str]:
    """The keys a sweep's overrides vary."""
    from mcu_exp.tracking.sweep import swept

    return [key for key, _ in swept(list(config.hydra.overrides.task))]


# Sweepers that expand the command line into jobs as Hydra's basic sweeper does.
BASIC_SWEEPERS = (
    "hydra._internal.core_plugins.basic_sweeper.BasicSweeper",
    "hydra_plugins.mcu_exp_sweeper.compose_once.ComposeOnceSweeper",
)


def sweep_jobs(config: Any) -> list[list[str]]:
    """Every job of a sweep as its sweeper will run them, each as its overrides
    (``hydra.sweeper.params``, then the command line's, expanded by :class:`BasicSweeper`); none
    for other sweepers (Optuna's search spaces) or a sweep the basic sweeper cannot expand (it
    says so itself)."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    sweeper = config.hydra.sweeper
    if sweeper.get("_target_") not in BASIC_SWEEPERS:
        return []
    lines = [f"{key}={value}" for key, value in (sweeper.get("params") or {}).items()]
    lines += list(config.hydra.overrides.task)
    try:
        batches = BasicSweeper.split_arguments(OverridesParser.create().parse_overrides(lines), None)
    except HydraException:
        return []
    return [list(job) for batch in batches for job in batch]


def covering_jobs(jobs: list[list[str]]) -> list[list[str]]:
    """The first job, then as few more as it takes for every override of any job (each value
    of each swept key) to appear in one of them: each next job is the one that adds the most
    overrides not yet seen (the earliest on a tie). A sweep of k values of one key and m of
    another takes max(k, m) jobs, not k × m."""
    if not jobs:
        return []
    chosen = [jobs[0]]
    missing = {line for job in jobs for line in job} - set(jobs[0])
    while missing:
        best = max(jobs, key=lambda job: len(missing.intersection(job)))
        chosen.append(best)
        missing -= set(best)
    return chosen


def compose_jobs(config: Any) -> str | None:
    """Compose a sweep's first job, and a few more that between them hold every swept value
    (:func:`covering_jobs`), as its sweeper will, and check each one's values as its job will
    (:func:`mcu_exp.job.validate.config_problems`). A misspelled key or a value of the wrong
    type raises Hydra's composition error; a value out of range is returned as one line naming
    the job by its swept values. Hydra calls the callbacks before the sweeper composes any job, and the
    sweep's callback opens the MLflow store and its parent run, so without this a misspelled key
    failed after the store, the run and the sweep's folder had been made, and a value out of
    range in a later job failed that job after the earlier ones had run."""
    from hydra.core.global_hydra import GlobalHydra

    from mcu_exp.job.merge_once import MergeOnceLoader

    loader = MergeOnceLoader.wrapping(GlobalHydra.instance().config_loader())  # files read once, lists merged once
    jobs = sweep_jobs(config)
    shared = set(jobs[0]).intersection(*jobs[1:]) if jobs else set()
    for job in covering_jobs(jobs):
        problem = job_problem(loader.load_sweep_config(config, job))
        if problem is not None:
            swept = " ".join(line for line in job if line not in shared)
            where = f"found in the sweep's job {swept}; " if swept else ""
            return f"{problem} ({where}no job was started)"
    return None


def job_problem(composed: Any) -> str | None:
    """The first out-of-range value of one composed job (``hydra`` node included), or None:
    its values pass, or the job's config is left to its own checks (a value that does not
    resolve until the job runs)."""
    from omegaconf import open_dict, read_write
    from omegaconf.errors import OmegaConfBaseException

    from mcu_exp.config.schema import typed_config
    from mcu_exp.job.validate import config_problems

    try:
        with read_write(composed), open_dict(composed):
            composed.pop("hydra", None)
        return next(config_problems(typed_config(composed)), None)
    except (OmegaConfBaseException, ValueError, TypeError, AttributeError, ImportError):
        return None


class Preflight(Callback):
    """Hydra callback: the store's note (:func:`store_notice`) for a run or a sweep; a sweep's
    jobs composed and checked (:func:`compose_jobs`) and its dataset loaded once
    (:func:`data_problem`) before its parent run."""

    def on_run_start(self, config: Any, **kwargs: Any) -> None:
        _note(config)

    def on_multirun_start(self, config: Any, **kwargs: Any) -> None:
        from hydra.errors import CompactHydraException

        from mcu_exp.config.suggest import USER_FULL_ERROR, composition_message

        try:
            problem = compose_jobs(config)
        except Exception as exc:  # noqa: BLE001 (Hydra would only warn of it: the sweeper composes the job again and reports it)
            message = composition_message(exc) if isinstance(exc, CompactHydraException) else None
            if message is not None and os.environ.get(USER_FULL_ERROR) != "1":
                raise SystemExit(f"mcu-exp: error: {message}") from None
            problem = None
        if problem is not None:
            raise SystemExit(f"mcu-exp: error: {problem}")
        varies_data = any(key in DATASET_KEYS for key in swept_keys(config))
        problem = None if varies_data else data_problem(config)
        if problem is not None:
            raise SystemExit(f"mcu-exp: error: {problem} (no job was started)")
        _note(config)


def _note(config: Any) -> None:
    """Print the store's note when there is one."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    from mcu_exp.user_cache import user_cache

    try:
        outputs = str(OmegaConf.select(config, "paths.outputs"))
    except OmegaConfBaseException:
        return
    line = store_notice(outputs, user_cache() / LAST_STORE)
    if line is not None:
        print(line, file=sys.stderr)
