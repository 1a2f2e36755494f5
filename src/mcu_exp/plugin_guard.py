"""Who a plugin entry came from, and a guard around what a job calls of it.

A registry entry that a plugin distribution added (:func:`mcu_exp.registry.load_plugins`
knows which one is loading) is wrapped once, when it is registered (a lazy one when it is
imported): each callable of the entry (a metric's ``compute``, a rule's ``apply``, a proxy
class's own methods, a plain function) becomes one that turns a ``SystemExit`` or an
``Exception`` it raises into a :class:`PluginFailure`, a one-line error naming the
distribution, its version, the registry and the entry. The job then stops like any other
one-line error (its MLflow run FAILED) instead of exiting with the plugin's own code or a
traceback. ``KeyboardInterrupt`` passes unchanged. Built-in entries are never wrapped: their
numbers and their speed stay what they were.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable, Generator
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")

# What a registry's ``guard`` hook receives: wraps one callable of an entry.
Wrap = Callable[[F], F]


@dataclasses.dataclass(frozen=True)
class PluginDist:
    """An installed distribution whose ``mcu_exp.plugins`` entry point was loaded."""

    name: str
    version: str

    def __str__(self) -> str:
        return f"{self.name}=={self.version}"


@dataclasses.dataclass(frozen=True)
class Replacement:
    """A plugin that replaced (or removed) an entry it did not add itself."""

    plugin: PluginDist
    registry: str  # the registry's kind ("metric", "proxy", ...)
    name: str

    def __str__(self) -> str:
        return f"{self.registry} {self.name!r} by {self.plugin}"


class PluginFailure(RuntimeError):
    """A plugin entry that raised or called ``sys.exit`` while the job called it (one line)."""

    def __init__(self, plugin: PluginDist, registry: str, name: str, exc: BaseException) -> None:
        if isinstance(exc, SystemExit):
            what = f"called sys.exit({exc.code!r})"
        else:
            detail = " | ".join(line.strip() for line in str(exc).splitlines() if line.strip())
            what = f"raised {type(exc).__name__}" + (f": {detail}" if detail else "")
        super().__init__(f"plugin {plugin} ({registry} {name!r}) {what}; the job stopped")
        self.plugin, self.registry, self.name = plugin, registry, name


def call_guard(plugin: PluginDist, registry: str, name: str) -> Wrap[Any]:
    """The wrapper a registry hands its ``guard`` hook for entry ``name`` of ``plugin``."""

    def fail(exc: BaseException) -> PluginFailure:
        return PluginFailure(plugin, registry, name, exc)

    def wrap(fn: F) -> F:
        if getattr(fn, "__mcu_plugin_guard__", False):
            return fn
        if inspect.isgeneratorfunction(fn):

            @functools.wraps(fn)
            def guarded_generator(*args: Any, **kwargs: Any) -> Generator[Any, Any, Any]:
                try:
                    return (yield from fn(*args, **kwargs))
                except PluginFailure:
                    raise
                except (SystemExit, Exception) as exc:
                    raise fail(exc) from exc

            guarded_generator.__mcu_plugin_guard__ = True  # type: ignore[attr-defined]
            return guarded_generator  # type: ignore[return-value]

        @functools.wraps(fn)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except PluginFailure:
                raise
            except (SystemExit, Exception) as exc:
                raise fail(exc) from exc

        guarded.__mcu_plugin_guard__ = True  # type: ignore[attr-defined]
        return guarded  # type: ignore[return-value]

    return wrap


def guard_fields(entry: T, wrap: Wrap[Any], *names: str) -> T:
    """A copy of dataclass ``entry`` with its callable fields ``names`` wrapped (None kept)."""
    changes = {n: wrap(getattr(entry, n)) for n in names if callable(getattr(entry, n, None))}
    return dataclasses.replace(entry, **changes)  # type: ignore[type-var]


def guard_class(cls: type, wrap: Wrap[Any]) -> type:
    """A subclass of ``cls`` (same name and module) whose methods defined outside mcu_exp,
    i.e. the plugin's own (``__init__`` included), are wrapped; inherited mcu_exp methods
    run unwrapped but are reached through the plugin's, so their failures are named too."""
    methods: dict[str, Any] = {}
    seen: set[str] = set()
    for klass in cls.__mro__:
        own = klass is not object and klass.__module__.split(".")[0] != "mcu_exp"
        for attr, value in vars(klass).items():
            if attr in seen:
                continue
            seen.add(attr)
            public = not attr.startswith("_") or attr in ("__init__", "__call__")
            if own and public and inspect.isfunction(value):
                methods[attr] = wrap(value)
    if not methods:
        return cls
    namespace = {"__module__": cls.__module__, "__qualname__": cls.__qualname__, "__doc__": cls.__doc__, **methods}
    return type(cls.__name__, (cls,), namespace)


def guard_entry(entry: T, wrap: Wrap[Any]) -> T:
    """The default guard: a class through :func:`guard_class`, a function wrapped, anything
    else (a registry of dataclass entries passes its own ``guard``) as it is."""
    if isinstance(entry, type):
        return guard_class(entry, wrap)  # type: ignore[return-value]
    if inspect.isfunction(entry) or inspect.ismethod(entry) or isinstance(entry, functools.partial):
        return wrap(entry)  # type: ignore[no-any-return]
    return entry
