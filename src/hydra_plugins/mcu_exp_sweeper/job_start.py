"""Hydra's in-process job start with cheaper copies of the config and cheaper YAML files.

For every job, Hydra's ``run_job`` (:mod:`hydra.core.utils`) deep-copies the composed config
twice (the task's config and the hydra node) and writes ``.hydra/config.yaml``,
``hydra.yaml`` and ``overrides.yaml`` through PyYAML's pure-Python emitter: about 20 ms of CPU
a job of a decision-only sweep. :func:`run_job` is Hydra's own function (the same code
object) with two names resolved differently:

- ``copy.deepcopy`` of a config is :func:`config_copy`, a pickle round trip arranged as
  OmegaConf's ``__deepcopy__`` arranges the copy (the root keeps its parent, its children
  point at the copy): the same values, flags and structured types, in a third of the time;
- ``_save_config`` writes :func:`mcu_exp.job.config_yaml.config_yaml` of the same container,
  the bytes ``OmegaConf.to_yaml`` gives, its unchanged parts emitted once per process.

:func:`launch` is Hydra's ``BasicLauncher.launch`` calling it; :class:`ComposeOnceSweeper`
installs it on the in-process launcher. Hydra's modules are left as they are.
"""

from __future__ import annotations

import copy
import pickle
import types
from pathlib import Path
from typing import Any

from hydra._internal.core_plugins import basic_launcher
from hydra.core import utils as hydra_utils
from omegaconf import DictConfig, OmegaConf


def config_copy(node: Any, memo: dict[int, Any] | None = None) -> Any:
    """``copy.deepcopy(node)`` for a config: a pickle round trip for a :class:`DictConfig`
    holding a mapping, with its parent kept and its children's parent the copy, as
    OmegaConf's ``__deepcopy__`` leaves them; anything else through ``copy.deepcopy``."""
    if memo is not None or not isinstance(node, DictConfig) or not isinstance(node.__dict__["_content"], dict):
        return copy.deepcopy(node, memo)
    children = list(node.__dict__["_content"].values())
    outer = node.__dict__["_parent"]
    parents = [child.__dict__["_parent"] for child in children]
    try:
        node.__dict__["_parent"] = None
        for child in children:
            child.__dict__["_parent"] = None
        data = pickle.dumps(node, protocol=pickle.HIGHEST_PROTOCOL)
    finally:
        node.__dict__["_parent"] = outer
        for child, parent in zip(children, parents, strict=True):
            child.__dict__["_parent"] = parent
    copied: DictConfig = pickle.loads(data)
    for child in copied.__dict__["_content"].values():
        child.__dict__["_parent"] = copied
    copied.__dict__["_parent"] = outer
    return copied


def save_config(cfg: DictConfig, filename: str, output_dir: Path) -> None:
    """Hydra's ``_save_config``: ``OmegaConf.to_yaml(cfg)`` into ``output_dir / filename``,
    the text made by :func:`~mcu_exp.job.config_yaml.config_yaml`."""
    from mcu_exp.job.config_yaml import config_yaml

    output_dir.mkdir(parents=True, exist_ok=True)
    text = config_yaml(OmegaConf.to_container(cfg, resolve=False, enum_to_str=True))
    with open(str(output_dir / filename), "w", encoding="utf-8") as file:
        file.write(text)


# ``copy`` as run_job uses it (``copy.deepcopy``), with configs copied by config_copy.
_copying = types.SimpleNamespace(deepcopy=config_copy)


def _rebuilt(function: Any, name: str, names: dict[str, Any]) -> Any:
    """``function`` (a plain module-level function) with some of its global ``names`` resolved
    to other objects; ``function`` itself when something wrapped it (a closure: not Hydra's code)."""
    if not isinstance(function, types.FunctionType) or function.__closure__ is not None:
        return function
    return types.FunctionType(function.__code__, {**function.__globals__, **names}, name, function.__defaults__)


run_job = _rebuilt(hydra_utils.run_job, "run_job", {"copy": _copying, "_save_config": save_config})
launch = _rebuilt(basic_launcher.BasicLauncher.launch, "launch", {"run_job": run_job})
