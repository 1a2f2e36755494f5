"""A config's YAML text as OmegaConf writes it, each part emitted once per process.

A sweep writes every job's config three times (Hydra's ``.hydra/config.yaml`` and
``hydra.yaml``, the job's resolved ``results/config.yaml``), and PyYAML's pure-Python emitter
took about 15 ms of CPU a job for text that differs between a decision-only sweep's jobs in a
few lines (ε, the job's number and folder). In block style the text of a mapping is the
text of its entries one after another, each entry's text depending only on its key, its value
and its depth: :func:`config_yaml` emits each entry of the first two levels once per content and
joins the pieces, so the bytes are those of ``yaml.dump`` of the whole (a test compares them on
the project's configs).
"""

from __future__ import annotations

from typing import Any

import yaml

MAX_PIECES = 4096  # pieces kept; beyond that the memo starts again
_pieces: dict[tuple[Any, ...], str] = {}


def _dumper() -> Any:
    from omegaconf._utils import get_omega_conf_dumper

    return get_omega_conf_dumper()


def dump(container: Any) -> str:
    """``yaml.dump`` with OmegaConf's dumper and settings (``OmegaConf.to_yaml``, ``OmegaConf.save``)."""
    return str(yaml.dump(container, default_flow_style=False, allow_unicode=True, sort_keys=False, Dumper=_dumper()))


def _splittable(node: Any) -> bool:
    """A mapping whose entries are emitted one by one: not empty (that is ``{}``), plain string
    keys that fit on one line (a simple key)."""
    return (
        type(node) is dict
        and bool(node)
        and all(type(k) is str and 0 < len(k) < 64 and k.isprintable() and ":" not in k for k in node)
    )


def _piece(path: tuple[str, ...], key: str, value: Any) -> str:
    """The text of entry ``key: value`` at depth ``len(path)`` under the keys ``path``."""
    memo = (path, key, type(value).__name__, repr(value))
    found = _pieces.get(memo)
    if found is None:
        tree: Any = {key: value}
        for outer in reversed(path):
            tree = {outer: tree}
        found = dump(tree).split("\n", len(path))[-1]  # without the lines of the enclosing keys
        if len(_pieces) >= MAX_PIECES:
            _pieces.clear()
        _pieces[memo] = found
    return found


def _header(key: str) -> str:
    """The line that opens a block mapping under ``key`` (the key as YAML writes it, quoted
    where it has to be)."""
    memo = ("header", key)
    found = _pieces.get(memo)
    if found is None:
        found = dump({key: {"x": 0}}).split("\n", 1)[0] + "\n"
        _pieces[memo] = found
    return found


def config_yaml(container: Any) -> str:
    """:func:`dump` of a plain config tree (``OmegaConf.to_container``'s output: dicts, lists
    and scalars, no object twice), its top two levels emitted entry by entry through the memo."""
    if not _splittable(container):
        return dump(container)
    parts = []
    for key, value in container.items():
        if _splittable(value):
            parts.append(_header(key))
            parts.extend(_piece((key,), k, v) for k, v in value.items())
        else:
            parts.append(_piece((), key, value))
    return "".join(parts)
