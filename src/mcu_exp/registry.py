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
(called once with no arguments). :func:`load_plugins` loads them all, once, and remembers
which distribution each entry came from (:func:`loaded_plugins`): a plugin's entries are
wrapped so a failure inside one is a one-line :class:`~mcu_exp.plugin_guard.PluginFailure`,
and an entry a plugin replaces (``replace=True``, or ``remove`` then ``add``) is recorded
(:func:`replacements`) for the job to refuse unless its config allows it
(:func:`replacement_problems`, ``plugins.allow_replace``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Sequence
from importlib.metadata import entry_points
from typing import Any, Generic, TypeVar, overload

from mcu_exp.plugin_guard import PluginDist, Replacement, Wrap, call_guard, guard_entry

T = TypeVar("T")

PLUGIN_GROUP = "mcu_exp.plugins"  # the entry-point group a plugin package declares

_ALL: list[Registry[Any]] = []  # every registry, for freeze_all
_LOADED: list[str] = []  # the entry points load_plugins has loaded, in order
_DISTS: dict[PluginDist, list[str]] = {}  # each plugin distribution loaded → its entry points
_REPLACED: list[Replacement] = []  # entries a plugin replaced or removed, in order
_loading: PluginDist | None = None  # the distribution whose entry point is loading now
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
    that selects an entry, if any ("proxy.measure"), for the error's hint. ``guard(entry,
    wrap)`` returns a plugin's entry with its callables wrapped by ``wrap`` (default
    :func:`~mcu_exp.plugin_guard.guard_entry`: a class's own methods, or a function).
    """

    def __init__(self, kind: str, key: str | None = None, guard: Callable[[T, Wrap[Any]], T] | None = None) -> None:
        self.kind = kind
        self.key = key
        self._entries: dict[str, T] = {}
        self._lazy: dict[str, str] = {}
        self._order: list[str] = []
        self._origin: dict[str, PluginDist] = {}  # entries a plugin distribution added
        self._guard: Callable[[T, Wrap[Any]], T] = guard or guard_entry
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
        if name in self._order:
            self._note_replaced(name)
        else:
            self._order.append(name)
        if _loading is not None:
            self._origin[name] = _loading
        else:
            self._origin.pop(name, None)

    def _note_replaced(self, name: str) -> None:
        """Record a plugin replacing or removing an entry it did not add itself."""
        if _loading is not None and self._origin.get(name) != _loading:
            found = Replacement(_loading, self.kind, name)
            if found not in _REPLACED:
                _REPLACED.append(found)

    def _guarded(self, name: str, entry: T) -> T:
        """``entry`` with its callables guarded when a plugin distribution added it."""
        plugin = self._origin.get(name)
        return entry if plugin is None else self._guard(entry, call_guard(plugin, self.kind, name))

    def add(self, name: str, entry: T, *, replace: bool = False) -> T:
        """Register ``entry`` under ``name`` (a second entry of one name is an error unless
        ``replace``); returns ``entry`` (guarded when a plugin adds it)."""
        self._claim(name, replace)
        self._lazy.pop(name, None)
        entry = self._guarded(name, entry)
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
        self._note_replaced(name)
        self._entries.pop(name, None)
        self._order.remove(name)
        self._origin.pop(name, None)
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
            guarded = self._guarded(name, entry)  # type: ignore[arg-type]
            self._entries[name] = guarded
            del self._lazy[name]
            return guarded
        raise UnknownName(self.unknown_message(name))

    def origin(self, name: str) -> PluginDist | None:
        """The plugin distribution that added entry ``name`` (None: a built-in)."""
        return self._origin.get(name)

    def get(self, name: str, default: T | None = None) -> T | None:
        """The entry ``name``, or ``default`` when none is registered."""
        return self[name] if name in self else default  # noqa: SIM401 (this is get itself)

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
    global _plugins_done, _loading
    if _plugins_done and group == PLUGIN_GROUP:
        return list(_LOADED)
    for ep in sorted(entry_points(group=group), key=lambda e: e.name):
        found = getattr(ep, "dist", None)
        dist = getattr(found, "name", None) or "?"
        plugin = PluginDist(dist, getattr(found, "version", None) or "?")
        _loading = plugin
        try:
            obj = ep.load()
            if callable(obj) and not isinstance(obj, type):
                obj()
        except (SystemExit, Exception) as exc:  # a plugin's own error (or exit), reported as one line
            why = f"called sys.exit({exc.code!r})" if isinstance(exc, SystemExit) else str(exc)
            raise PluginError(f"plugin {ep.name!r} ({ep.value}, from {dist}) failed to load: {why}") from exc
        finally:
            _loading = None
        _LOADED.append(ep.name)
        _DISTS.setdefault(plugin, []).append(ep.name)
    if group == PLUGIN_GROUP:
        _plugins_done = True
    return list(_LOADED)


def registries() -> list[Registry[Any]]:
    """Every registry made so far, in creation order (what ``mcu-exp list`` prints)."""
    return list(_ALL)


def freeze_all() -> None:
    """Freeze every registry (called by a job once its plugins are loaded)."""
    for registry in _ALL:
        registry.freeze()


def thaw_all() -> None:
    """Undo :func:`freeze_all` (for a second in-process job, e.g. in tests or a notebook)."""
    for registry in _ALL:
        registry._frozen = False


def loaded_plugins() -> list[PluginDist]:
    """The plugin distributions whose entry points :func:`load_plugins` loaded, in order."""
    return list(_DISTS)


def replacements() -> list[Replacement]:
    """The entries plugins replaced or removed (pending: a job refuses them unless allowed)."""
    return list(_REPLACED)


def plugin_record() -> list[dict[str, Any]]:
    """Each loaded plugin distribution, its version, entry points and the entries it
    replaced: what a job writes to ``specs.json`` and a bundle's manifest."""
    return [
        {
            "distribution": plugin.name,
            "version": plugin.version,
            "entry_points": list(points),
            "replaced": [f"{r.registry}:{r.name}" for r in _REPLACED if r.plugin == plugin],
        }
        for plugin, points in _DISTS.items()
    ]


def replacement_problems(allowed: Sequence[str], key: str = "plugins.allow_replace") -> list[str]:
    """One line for each entry a plugin replaced without ``allowed`` naming it, and for each
    name in ``allowed`` that no registry has (with the closest known name)."""
    from mcu_exp.config.suggest import suggest_key

    known = sorted({name for registry in _ALL for name in registry.names()})
    problems = []
    for name in allowed:
        if name not in known:
            guess = suggest_key(str(name), known)
            hint = f": did you mean {guess!r}?" if guess else ""
            problems.append(f"{key}: {name!r} is no registered entry{hint} (expected names a plugin replaces)")
    valid = [str(name) for name in allowed if name in known]
    names = ", ".join(dict.fromkeys([*valid, *(r.name for r in _REPLACED)]))  # allows them all at once
    for found in _REPLACED:
        if found.name not in allowed:
            problems.append(
                f"plugin {found.plugin} replaces the {found.registry} {found.name!r}; refused: "
                f"allow it with {key}=[{names}]"
            )
    return problems
