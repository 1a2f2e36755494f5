"""Hydra's basic sweeper, composing each job's config once instead of twice.

The basic sweeper composes every job's config to check the whole batch before any job starts,
and its launcher composes it again when it starts the job: on a decision-only sweep of cached
generations that second composition was about a third of a job's CPU. With the in-process
launcher (``hydra/launcher=basic``, the default), :class:`ComposeOnceSweeper` keeps the configs
its check composed and hands each to the launcher in place of composing it again: the same call
(:meth:`ConfigLoader.load_sweep_config` with the same master config and overrides), so the job
gets the config it would have got. Launchers that start jobs in other processes (joblib,
submitit, Ray) compose there, as before.

How each config is composed cheaply (the files read once, each defaults list merged once) is
:mod:`mcu_exp.job.merge_once`.
"""

from __future__ import annotations

import types
from collections.abc import Sequence
from typing import Any

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.config_loader import ConfigLoader
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig

from hydra_plugins.mcu_exp_sweeper import job_start
from mcu_exp.job.merge_once import MAX_KEPT, MergeOnceLoader

IN_PROCESS = "hydra._internal.core_plugins.basic_launcher.BasicLauncher"  # by name: Hydra's plugin scan reloads it


class ComposedOnce:
    """A config loader that serves each job's config from the batch check, once, and passes
    everything else (and any job it did not keep) to Hydra's own loader."""

    def __init__(self, loader: ConfigLoader) -> None:
        self.loader = MergeOnceLoader.wrapping(loader)
        self.kept: dict[tuple[str, ...], DictConfig] = {}

    def compose(self, master_config: DictConfig, sweep_overrides: Sequence[str]) -> None:
        """Compose one job's config as the launcher would, and keep it for the launcher."""
        config = self.loader.load_sweep_config(master_config=master_config, sweep_overrides=list(sweep_overrides))
        if len(self.kept) < MAX_KEPT:
            self.kept[tuple(sweep_overrides)] = config

    def load_sweep_config(self, master_config: DictConfig, sweep_overrides: list[str]) -> DictConfig:
        """The config the check composed for these overrides (handed out once), else a new one."""
        found = self.kept.pop(tuple(sweep_overrides), None)
        if found is not None:
            return found
        return self.loader.load_sweep_config(master_config=master_config, sweep_overrides=sweep_overrides)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.loader, name)


class ComposeOnceSweeper(BasicSweeper):
    """:class:`BasicSweeper` (same settings, same batches, same early check of every job's
    config) whose in-process launcher reuses the configs the check composed and starts each
    job through :func:`~hydra_plugins.mcu_exp_sweeper.job_start.run_job` (cheaper copies and
    YAML files, the same files)."""

    def __init__(self, max_batch_size: int | None = None, params: dict[str, str] | None = None) -> None:
        super().__init__(max_batch_size=max_batch_size, params=params)
        self.composed: ComposedOnce | None = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        super().setup(hydra_context=hydra_context, task_function=task_function, config=config)
        launcher = type(self.launcher)
        if self.launcher is not None and f"{launcher.__module__}.{launcher.__qualname__}" == IN_PROCESS:
            self.composed = ComposedOnce(hydra_context.config_loader)
            context = HydraContext(config_loader=self.composed, callbacks=hydra_context.callbacks)  # type: ignore[arg-type]
            self.launcher.hydra_context = context  # type: ignore[attr-defined]
            self.launcher.launch = types.MethodType(job_start.launch, self.launcher)  # type: ignore[method-assign]

    def validate_batch_is_legal(self, batch: Sequence[Sequence[str]]) -> None:
        """Compose every job's config of ``batch`` (a mistake stops the sweep before any job
        runs), keeping them for the launcher when it runs the jobs in this process."""
        if self.composed is None or self.config is None:
            super().validate_batch_is_legal(batch)
            return
        self.composed.kept.clear()
        for overrides in batch:
            self.composed.compose(self.config, overrides)
