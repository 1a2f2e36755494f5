"""The project's config composed in the test process as ``hydra.compose`` composes it, through
one config loader per config folder for the whole test process.

A test composing the job config through ``initialize_config_dir`` and ``compose`` paid Hydra's
full price every time (reading and parsing every YAML file the defaults list names, building
the list, merging), about a quarter of a second, and the suite composes it hundreds of times,
mostly with the default groups and a few values changed. :func:`config_folder` is
``initialize_config_dir`` whose Hydra composes with the sweeper's
:class:`~mcu_exp.job.merge_once.MergeOnceLoader`, kept for the process:
the files are read once, each distinct defaults list is built and merged once, and every
composition gets a copy with Hydra's own overrides, ``hydra.*`` fields and checks applied (the
sweeper's tests show the configs are Hydra's own, and ``tests/app/test_compose_once_sweeper.py``
checks this helper against a plain ``compose``).

Tests store and remove entries of Hydra's ConfigStore (plugins' generated ``decision/<rule>``
entries, a stand-in launcher schema): the loader is kept per config folder *and* per content
of the ConfigStore, so a changed store composes afresh.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

CONF = Path(__file__).resolve().parents[2] / "conf"
_LOADERS: dict[tuple[str, str], Any] = {}
_NODE_DIGESTS: dict[int, tuple[Any, str]] = {}  # id(node) -> (node, digest of its content)


def _digest(node: Any, seen: dict[int, tuple[Any, str]]) -> str:
    """A digest of a ConfigStore node's content, remembered per node object in ``seen`` (the
    schema is stored again, with the same content, by every ``register_configs()``)."""
    found = _NODE_DIGESTS.get(id(node))
    if found is None or found[0] is not node:
        text = OmegaConf.to_yaml(node) if isinstance(node, DictConfig) else repr(node)
        found = (node, hashlib.sha256(text.encode()).hexdigest())
    seen[id(node)] = found
    return found[1]


def _store_state() -> str:
    """What the ConfigStore holds: every entry's path, package, provider and content. Only the
    digests of the nodes it holds now are remembered."""
    from hydra.core.config_store import ConfigNode, ConfigStore

    entries: list[str] = []
    seen: dict[int, tuple[Any, str]] = {}

    def walk(tree: dict[str, Any], path: str) -> None:
        for name, value in sorted(tree.items()):
            if isinstance(value, ConfigNode):
                entries.append(f"{path}/{name}|{value.package}|{value.provider}|{_digest(value.node, seen)}")
            else:
                walk(value, f"{path}/{name}")

    walk(ConfigStore.instance().repo, "")
    _NODE_DIGESTS.clear()
    _NODE_DIGESTS.update(seen)
    return hashlib.sha256("\n".join(entries).encode()).hexdigest()


@contextmanager
def config_folder(folder: Path | str = CONF, job_name: str = "app") -> Iterator[None]:
    """``hydra.initialize_config_dir(folder)``, its Hydra composing through the process's loader
    for ``folder`` and the ConfigStore as it is now."""
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    with initialize_config_dir(config_dir=str(folder), job_name=job_name, version_base="1.3"):
        hydra = GlobalHydra.instance().hydra
        assert hydra is not None
        hydra.config_loader = shared_loader(folder, hydra.config_loader)
        yield


def shared_loader(folder: Path | str, loader: Any) -> Any:
    """The process's loader for ``folder`` and the ConfigStore as it is now, made from ``loader``
    (Hydra's own, for that folder) the first time."""
    from mcu_exp.job.merge_once import MergeOnceLoader

    key = (str(folder), _store_state())
    found = _LOADERS.get(key)
    if found is None:
        found = _LOADERS[key] = MergeOnceLoader.wrapping(loader)
    return found


def compose(*overrides: str, return_hydra_config: bool = False, folder: Path | str = CONF) -> DictConfig:
    """``hydra.compose("config", overrides)`` on ``folder`` (the project's ``conf/``), the
    schema registered, through :func:`config_folder`."""
    from hydra import compose as hydra_compose

    from mcu_exp.config import register_configs

    register_configs()
    with config_folder(folder):
        return hydra_compose("config", overrides=list(overrides), return_hydra_config=return_hydra_config)
