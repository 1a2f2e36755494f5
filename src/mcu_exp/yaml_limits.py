"""YAML that comes from a user, checked before anything builds it.

An alias names a node written once; a loader that copies the aliased node (OmegaConf does, to
make its config nodes) turns a few lines such as ``a: &a [x, x]``, ``b: &b [*a, *a]``, … into
billions of nodes (the "billion laughs"): the process hangs until it is killed. So every YAML
text the tool reads from a user (a run bundle's ``config.yaml``, the files of a ``--config-dir``
or ``hydra.searchpath`` folder, a run folder's ``config.yaml``) is first scanned as a stream of
events, without building it: the nodes its aliases would add, and how deeply it nests, are
counted, and past :data:`MAX_ALIAS_NODES` or :data:`MAX_DEPTH` it is refused in one line.

The scan never builds a node and never recurses, so it costs a few milliseconds for a config.
A YAML syntax error is left to the loader that reads the text next, which reports it as before.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

MAX_ALIAS_NODES = 10_000  # nodes aliases may add beyond those written; a config's anchors add tens
MAX_DEPTH = 64  # nested sequences and mappings; a config nests fewer than ten
YAML_SUFFIXES = (".yaml", ".yml")
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # LibYAML's parser when installed


class YamlLimitError(yaml.YAMLError, ValueError):
    """YAML whose aliases would expand past :data:`MAX_ALIAS_NODES` nodes, which refers to
    itself, or which nests deeper than :data:`MAX_DEPTH`."""


def check_yaml(text: str | bytes, where: str) -> None:
    """Raise :class:`YamlLimitError` (naming ``where``) when ``text`` is YAML whose aliases
    add more than :data:`MAX_ALIAS_NODES` nodes, whose alias names a collection that holds it,
    or which nests deeper than :data:`MAX_DEPTH`. Text that does not parse passes: its loader
    reports the syntax error."""
    try:
        _scan(yaml.parse(text, Loader=_LOADER), where)
    except YamlLimitError:
        raise
    except yaml.YAMLError:
        return


def _scan(events: Iterable[yaml.Event], where: str) -> None:
    """Count, event by event, the nodes each anchored node stands for and those aliases add."""
    sizes: dict[str, int] = {}  # anchor -> expanded size of its (finished) node
    open_anchors: set[str] = set()
    stack: list[tuple[str | None, int]] = []  # (anchor, expanded size so far) per open collection
    added = 0

    def finish(anchor: str | None, size: int) -> None:
        if anchor is not None:
            sizes[anchor] = size
            open_anchors.discard(anchor)
        if stack:
            parent, total = stack[-1]
            stack[-1] = (parent, total + size)

    for event in events:
        if isinstance(event, yaml.CollectionStartEvent):
            if len(stack) >= MAX_DEPTH:
                raise YamlLimitError(f"{where}: YAML nested deeper than {MAX_DEPTH} levels; refused")
            if event.anchor is not None:
                open_anchors.add(event.anchor)
            stack.append((event.anchor, 1))
        elif isinstance(event, yaml.CollectionEndEvent):
            anchor, size = stack.pop()
            finish(anchor, size)
        elif isinstance(event, yaml.ScalarEvent):
            finish(event.anchor, 1)
        elif isinstance(event, yaml.AliasEvent):
            if event.anchor in open_anchors:
                raise YamlLimitError(f"{where}: YAML alias *{event.anchor} refers to a node that holds it; refused")
            size = sizes.get(str(event.anchor), 1)  # an undefined alias: the loader names it
            added += size
            if added > MAX_ALIAS_NODES:
                raise YamlLimitError(
                    f"{where}: YAML aliases expand to more than {MAX_ALIAS_NODES:,} nodes (an alias bomb); refused"
                )
            finish(None, size)
        elif isinstance(event, yaml.DocumentStartEvent):
            sizes.clear()  # anchors do not cross documents


def safe_load(text: str | bytes, where: str, loader: Any = yaml.SafeLoader) -> Any:
    """``yaml.load(text, Loader=loader)`` (a safe loader) after :func:`check_yaml`."""
    check_yaml(text, where)
    return yaml.load(text, Loader=loader)  # callers pass safe loaders only


def check_yaml_file(path: Path) -> None:
    """:func:`check_yaml` of the file at ``path`` (named in the error); an unreadable file
    passes (its reader reports it)."""
    try:
        text = path.read_bytes()
    except OSError:
        return
    check_yaml(text, str(path))


def check_yaml_folder(folder: Path) -> None:
    """:func:`check_yaml_file` of every YAML file under ``folder`` (a ``--config-dir``: Hydra
    may read any of them as a config group's option)."""
    if not folder.is_dir():
        return
    for path in sorted(folder.rglob("*")):
        if path.suffix in YAML_SUFFIXES and path.is_file():
            check_yaml_file(path)
