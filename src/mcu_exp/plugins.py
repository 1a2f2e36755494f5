"""Start-up of the extension points: built-ins first, then installed plugin packages, then a
freeze, so every stage of a job sees the same metrics, measures, rules, proxies, backends
and dataset formats.

:func:`start_plugins` runs before Hydra composes a job: it loads every ``mcu_exp.plugins``
entry point (:func:`mcu_exp.registry.load_plugins`) and gives each registered decision rule
and proxy that has no YAML file of its own a generated config-group entry, so
``decision=<rule>`` and ``proxy=<name>`` compose for any registered name (a YAML file, when
there is one, wins: it is not replaced). A rule's entry lists its parameters with their
defaults, so ``decision.params.<name>=<value>`` overrides one without Hydra's ``+``. :func:`freeze_registries` runs when the job starts.
The subcommands that only read names (report, compare, tune) call :func:`load_plugins`.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from mcu_exp.registry import freeze_all, load_plugins

# The modules whose import registers the built-in entries of each registry.
BUILTIN_MODULES = (
    "mcu_exp.evaluation",  # metrics (mcu_exp.evaluation.definitions)
    "mcu_exp.measures",  # uncertainty measures
    "mcu_exp.calibration",  # decision rules
    "mcu_exp.proxies.registry",  # proxies
    "mcu_exp.data",  # dataset formats
    "mcu_exp.llm.providers",  # backends
    "mcu_exp.scoring.factory",  # scorer kinds (label rules: mcu_exp.data)
    "mcu_exp.counterfactual.registry",  # counterfactual edits (probe.edit)
)


def load_builtins() -> None:
    """Import every registry's built-in entries (before plugins, so they keep their order)."""
    for module in BUILTIN_MODULES:
        importlib.import_module(module)


def store_group_entries(conf_dir: str | Path | None = None) -> list[str]:
    """A config-group entry (``decision/<rule>``, ``proxy/<name>``) for each registered rule
    and proxy without a YAML file in ``conf_dir``; returns the entries stored."""
    from hydra.core.config_store import ConfigStore

    from mcu_exp.calibration import RULES
    from mcu_exp.proxies.registry import PROXIES

    def has_yaml(group: str, name: str) -> bool:
        return conf_dir is not None and (Path(conf_dir) / group / f"{name}.yaml").is_file()

    store = ConfigStore.instance()
    stored = []
    for group, names, node in (
        ("decision", RULES.names(), lambda n: {"rule": n, "params": dict(RULES[n].params)}),
        ("proxy", PROXIES.names(), lambda n: {"name": n}),
    ):
        for name in names:
            if not has_yaml(group, name):
                store.store(group=group, name=name, node=node(name))  # type: ignore[no-untyped-call]
                stored.append(f"{group}/{name}")
    return stored


def start_plugins(conf_dir: str | Path | None = None) -> list[str]:
    """Built-ins, then every installed plugin (once), then the generated group entries;
    returns the plugin entry points loaded."""
    load_builtins()
    loaded = load_plugins()
    store_group_entries(conf_dir)
    return loaded


def freeze_registries() -> None:
    """Freeze every registry once the job's plugins are in: a module imported halfway through
    a job cannot change what an earlier stage saw."""
    load_builtins()
    freeze_all()
