"""Composing many jobs' configs of one sweep: the config files read once, each distinct
defaults list built and merged once (:class:`MergeOnceLoader`). Used by the sweeper that
composes each job once (``hydra_plugins.mcu_exp_sweeper.compose_once``) and by the sweep's
check of its jobs before it starts (:mod:`mcu_exp.job.preflight`).

Composing a job's config is mostly reading the YAML files its defaults list names and merging
them, and a decision-only sweep's jobs share that list (they differ in values like
``decision.epsilon``, applied after the merge). :class:`MergeOnceLoader` reads the files once per
sweep and merges each distinct defaults list once, handing every job a deep copy; parsing the
overrides, building the defaults list, applying the overrides and the ``hydra.*`` fields stay
Hydra's own code, per job, so each job's config is the one Hydra would compose (0.12 -> 0.03 s
of CPU a job here).

The defaults list itself depends only on the config name and the overrides that choose config
groups (``proxy=p0``, ``+experiment=x``, ``~debug``): values like ``decision.epsilon=0.1`` are
applied to the merged config afterwards. :class:`MergeOnceLoader` builds it once per distinct
set of group choices, through Hydra's own ``create_defaults_list``, and hands later jobs a copy
with their own value overrides (about a fifth of a decision-only job's Hydra time).
"""

from __future__ import annotations

import pickle
import types
import weakref
from typing import Any

from hydra._internal import config_loader_impl
from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra._internal.config_repository import CachingConfigRepository, IConfigRepository
from hydra._internal.defaults_list import DefaultsList, Overrides, create_defaults_list
from hydra.core.config_loader import ConfigLoader
from hydra.core.default_element import ResultDefault
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override
from omegaconf import DictConfig

MAX_KEPT = 512  # merged configs (and, in the sweeper, composed ones) held; beyond that, made again

# Defaults lists built per repository (MergeOnceLoader keeps one repository per config name and
# search path for the whole sweep), keyed by what decides the list; dropped with the repository.
_DEFAULTS_LISTS: weakref.WeakKeyDictionary[IConfigRepository, dict[tuple[Any, ...], DefaultsList]] = (
    weakref.WeakKeyDictionary()
)


def defaults_list_once(
    repo: IConfigRepository,
    config_name: str | None,
    overrides_list: list[Override],
    prepend_hydra: bool,
    skip_missing: bool,
) -> DefaultsList:
    """Hydra's ``create_defaults_list``, built once per repository, config name and group
    choices: a later call with the same group overrides (in the same order) gets the list, tree
    and choices of the first build with its own value overrides. Hydra's own split
    (:class:`Overrides`) says which overrides choose groups; its checks (an unknown group or
    option) ran on the first build, for the same group overrides."""
    split = Overrides(repo=repo, overrides_list=overrides_list)  # Hydra's split of group and value overrides
    values = {id(o) for o in split.config_overrides}
    groups = tuple(o.input_line for o in overrides_list if id(o) not in values)
    key = (config_name, prepend_hydra, skip_missing, groups)
    built = _DEFAULTS_LISTS.setdefault(repo, {})
    found = built.get(key)
    if found is None:
        found = create_defaults_list(repo, config_name, overrides_list, prepend_hydra, skip_missing)
        built[key] = found
    # The rest of a composition only reads the list, the tree and the choices (it merges the
    # configs the list names and copies the choices into ``hydra.runtime.choices``): shared.
    return DefaultsList(
        defaults=list(found.defaults),
        defaults_tree=found.defaults_tree,
        config_overrides=split.config_overrides,
        overrides=found.overrides,
    )


# Hydra's ``ConfigLoaderImpl._load_configuration_impl`` (the same code object) with its one
# call of ``create_defaults_list`` resolved to :func:`defaults_list_once`; Hydra's module is left
# as it is, so every other loader keeps building the list per call.
_load_configuration_once = types.FunctionType(
    ConfigLoaderImpl._load_configuration_impl.__code__,
    {**vars(config_loader_impl), "create_defaults_list": defaults_list_once},
    "_load_configuration_once",
    ConfigLoaderImpl._load_configuration_impl.__defaults__,
)


class MergeOnceLoader(ConfigLoaderImpl):
    """Hydra's config loader that reads the config files once per sweep, builds the defaults
    list once per distinct set of group choices (:func:`defaults_list_once`) and merges the
    configs of a defaults list once per distinct list (same files, packages, order and search
    path), handing each later job a deep copy.

    The files read are shared only by the defaults-list step, which reads them and changes
    nothing; a merge (which changes what it reads) reads its own fresh copies."""

    merged: dict[tuple[Any, ...], bytes]
    repos: dict[tuple[str | None, str | None], CachingConfigRepository]
    _load_configuration_impl = _load_configuration_once  # the defaults list once per group choices

    @classmethod
    def wrapping(cls, loader: ConfigLoader) -> ConfigLoader:
        """The same loader (its search path and repository) with the memos; a loader of
        another type is returned as it is."""
        if type(loader) is not ConfigLoaderImpl:
            return loader
        found = cls.__new__(cls)
        found.__dict__.update(vars(loader))
        found.merged, found.repos = {}, {}
        return found

    def _parse_overrides_and_create_caching_repo(
        self, config_name: str | None, overrides: list[str]
    ) -> tuple[list[Override], CachingConfigRepository]:
        parsed = OverridesParser.create().parse_overrides(overrides=overrides)
        searchpath = next((o.input_line for o in parsed if o.get_key_element() == "hydra.searchpath"), None)
        key = (config_name, searchpath)  # all that decides the sources (with the primary config)
        repo = self.repos.get(key)
        if repo is None:
            parsed, repo = super()._parse_overrides_and_create_caching_repo(config_name, overrides)
            self.repos[key] = repo
        return parsed, repo

    def _compose_config_from_defaults_list(self, defaults: list[ResultDefault], repo: IConfigRepository) -> DictConfig:
        sources = tuple((s.provider, s.path) for s in repo.get_sources())
        key = (sources, *((d.config_path, d.package, d.parent, d.is_self, d.primary, d.override_key) for d in defaults))
        kept = self.merged.get(key)
        if kept is not None:
            copied: DictConfig = pickle.loads(kept)  # a deep copy (flags, structured types), faster than deepcopy
            return copied
        fresh = CachingConfigRepository(repo.delegate) if isinstance(repo, CachingConfigRepository) else repo
        config = super()._compose_config_from_defaults_list(defaults, fresh)
        if len(self.merged) >= MAX_KEPT:
            self.merged.clear()
        self.merged[key] = pickle.dumps(config)
        return config
