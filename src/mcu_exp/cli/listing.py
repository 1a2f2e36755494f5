"""``mcu-exp list``: each registry's entries and the package each came from.

Built-in entries say ``mcu_exp``; an entry a plugin added says its distribution and version
(``my-plugin==1.2``), read from :meth:`~mcu_exp.registry.Registry.origin`, so a job's
config can be checked against what is installed without running one. Lazy entries are
listed without being imported.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from mcu_exp.plugins import load_builtins
from mcu_exp.registry import Registry, load_plugins, registries

BUILTIN = "mcu_exp"


def lines(found: Sequence[Registry[object]]) -> list[str]:
    """One heading per registry (its kind and config key), then one line per entry: its
    name and the package that added it."""
    out: list[str] = []
    for registry in found:
        key = f" ({registry.key})" if registry.key else ""
        out.append(f"{registry.kind}{key}:")
        width = max((len(name) for name in registry.names()), default=0)
        for name in registry.names():
            origin = registry.origin(name)
            out.append(f"  {name:<{width}}  {origin if origin is not None else BUILTIN}")
    return out


def main(argv: Sequence[str] | None = None) -> None:
    """Print every registry's entries, built-ins first, then those of installed plugins."""
    parser = argparse.ArgumentParser(
        prog="mcu-exp list", description="Each registry's entries and the package each came from."
    )
    parser.parse_args(list(argv) if argv is not None else None)
    load_builtins()
    load_plugins()
    print("\n".join(lines(registries())))
