"""One way to plug in: a named, typed registry that every extension point uses.

Metrics, measures, decision rules, providers, proxies and dataset formats each keep one
:class:`Registry`. An entry is registered directly (a decorator or :meth:`Registry.add`) or
lazily as ``"package.module:attr"`` (imported on first use, so a registry of providers does
not import every SDK). An unknown name is a one-line :class:`UnknownName` error with a
"did you mean" drawn from the config-key suggester. After start-up (:func:`freeze_all`,
called once the job's plugins are loaded) a registry refuses new entries, so a module
imported halfway through a job cannot change what an earlier stage saw.

A separate pip-installed package adds entries through the ``mcu_exp.plugins`` entry-point
group: each entry point names a module (imported: its decorators register) or a callable
(called once with no arguments). :func:`load_plugins` loads them all, once.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from importlib.metadata import entry_points
from typing import Any, Generic, TypeVar, overload

T = TypeVar("T")

PLUGIN_GROUP = "mcu_exp.plugins"  # the entry-point group a plugin package declares

_ALL: list[Registry[Any]] = []  # every registry, for freeze_all
_LOADED: list[str] = []  # the entry points load_plugins has loaded, in order
_plugins_done = False


class UnknownName(KeyError, ValueError):
    """A name no registry entry has: its message is one line with a suggestion."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class FrozenRegistry(RuntimeError):
    """An entry added after start-up."""


class PluginError(ImportError):
    """A plugin entry point that failed to load (one line naming it)."""


def import_attr(spec: str) -> object:
    """The object ``"package.module:attr"`` (``attr`` may be dotted) names."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"{spec!r} is not of the form 'package.module:attr'")
    obj: object = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


class Registry(Generic[T]):
    """Named entries of one kind, in registration order.

    ``kind`` names the kind in errors ("unknown metric 'f11'"); ``key`` is the config key
    that selects an entry, if any ("proxy.measure"), for the error's hint.
    """

    def __init__(self, kind: str, key: str | None = None) -> None:
        self.kind = kind
        self.key = key
        self._entries: dict[str, T] = {}
        self._lazy: dict[str, str] = {}
        self._order: list[str] = []
        self._frozen = False
        _ALL.append(self)

    # -- adding ---------------------------------------------------------------------------

    def _claim(self, name: str, replace: bool) -> None:
        if self._frozen:
            raise FrozenRegistry(
                f"cannot add {self.kind} {name!r}: registries are frozen after start-up "
                f"(register it at import time or from a {PLUGIN_GROUP} entry point)"
            )
        if not name or not isinstance(name, str):
            raise ValueError(f"a {self.kind} name must be a non-empty string, got {name!r}")
        if name in self._order and not replace:
            raise ValueError(f"{self.kind} {name!r} is already registered")
        if name not in self._order:
            self._order.append(name)

    def add(self, name: str, entry: T, *, replace: bool = False) -> T:
        """Register ``entry`` under ``name`` (a second entry of one name is an error unless
        ``replace``); returns ``entry``."""
        self._claim(name, replace)
        self._lazy.pop(name, None)
        self._entries[name] = entry
        return entry

    def add_lazy(self, name: str, spec: str, *, replace: bool = False) -> None:
        """Register ``"package.module:attr"`` under ``name``: imported on first use."""
        if ":" not in spec:
            raise ValueError(f"{self.kind} {name!r}: {spec!r} is not of the form 'package.module:attr'")
        self._claim(name, replace)
        self._entries.pop(name, None)
        self._lazy[name] = spec

    @overload
    def register(self, name: str) -> Callable[[T], T]: ...

    @overload
    def register(self, name: str, entry: T) -> T: ...

    def register(self, name: str, entry: T | None = None) -> T | Callable[[T], T]:
        """``@registry.register("name")`` as a decorator, or ``registry.register("name", obj)``."""
        if entry is not None:
            return self.add(name, entry)

        def decorate(obj: T) -> T:
            return self.add(name, obj)

        return decorate

    def remove(self, name: str) -> T:
        """Take entry ``name`` out (e.g. one a test registered) and return it (imported if lazy)."""
        if self._frozen:
            raise FrozenRegistry(f"cannot remove {self.kind} {name!r}: registries are frozen after start-up")
        entry = self[name]
        self._entries.pop(name, None)
        self._order.remove(name)
        return entry

    def spec(self, name: str) -> str | None:
        """The ``"package.module:attr"`` of a lazy entry not imported yet (None otherwise)."""
        return self._lazy.get(name)

    def freeze(self) -> None:
        """Refuse new entries from now on."""
        self._frozen = True

    @property
    def frozen(self) -> bool:
        """Whether :meth:`freeze` was called."""
        return self._frozen

    # -- reading --------------------------------------------------------------------------

    def __contains__(self, name: object) -> bool:
        return name in self._entries or name in self._lazy

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._order))

    def __len__(self) -> int:
        return len(self._order)

    def names(self) -> tuple[str, ...]:
        """Every registered name, in registration order."""
        return tuple(self._order)

    def __getitem__(self, name: str) -> T:
        if name in self._entries:
            return self._entries[name]
        if name in self._lazy:
            spec = self._lazy[name]
            try:
                entry = import_attr(spec)
            except (ImportError, AttributeError) as exc:
                raise PluginError(f"{self.kind} {name!r}: cannot import {spec} ({exc})") from exc
            self._entries[name] = entry  # type: ignore[assignment]
            del self._lazy[name]
            return entry  # type: ignore[return-value]
        raise UnknownName(self.unknown_message(name))

    def get(self, name: str, default: T | None = None) -> T | None:
        """The entry ``name``, or ``default`` when none is registered."""
        return self[name] if name in self else default

    def items(self) -> list[tuple[str, T]]:
        """``(name, entry)`` pairs in registration order (lazy entries imported)."""
        return [(name, self[name]) for name in self._order]

    def unknown_message(self, name: object) -> str:
        """One line: the unknown name, the closest known one, the known names."""
        from mcu_exp.config.suggest import suggest_key

        known = list(self._order)
        guess = suggest_key(str(name), known) if isinstance(name, str) and known else None
        where = f" ({self.key})" if self.key else ""
        hint = f": did you mean {guess!r}?" if guess else ""
        return f"unknown {self.kind} {name!r}{where}{hint} (known: {', '.join(known) or 'none'})"


def load_plugins(group: str = PLUGIN_GROUP) -> list[str]:
    """Load every installed package's ``group`` entry points once (a module is imported, a
    callable called); returns their names. A failing entry point is a :class:`PluginError`
    naming it and its distribution."""
    global _plugins_done
    if _plugins_done and group == PLUGIN_GROUP:
        return list(_LOADED)
    for ep in sorted(entry_points(group=group), key=lambda e: e.name):
        dist = getattr(getattr(ep, "dist", None), "name", "?")
        try:
            obj = ep.load()
            if callable(obj) and not isinstance(obj, type):
                obj()
        except Exception as exc:  # a plugin's own error, reported as one line
            raise PluginError(f"plugin {ep.name!r} ({ep.value}, from {dist}) failed to load: {exc}") from exc
        _LOADED.append(ep.name)
    if group == PLUGIN_GROUP:
        _plugins_done = True
    return list(_LOADED)


def freeze_all() -> None:
    """Freeze every registry (called by a job once its plugins are loaded)."""
    for registry in _ALL:
        registry.freeze()


def thaw_all() -> None:
    """Undo :func:`freeze_all` (for a second in-process job, e.g. in tests or a notebook)."""
    for registry in _ALL:
        registry._frozen = False
