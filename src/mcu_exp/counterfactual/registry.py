"""The registry of counterfactual edits: each one a function ``(code, language, seed) -> Edited``.

An edit rewrites a program so that one property a reader may rely on (names, comments,
layout) changes while the computation does not. The built-ins live in
:mod:`mcu_exp.counterfactual.edits`; a plugin package adds one with the same decorator::

    @register_edit("strip_blank_lines")
    def strip_blank_lines(code: str, language: str, seed: int) -> Edited: ...
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from mcu_exp.registry import Registry


@dataclass(frozen=True)
class Edited:
    """An edit's result: the new code, and what it changed in the original.

    ``spans`` are the byte spans of the original that were rewritten or removed, ``tokens``
    the indices (into :func:`~mcu_exp.counterfactual.parsing.code_tokens` of the original,
    comments excluded) of the code tokens whose text changed, and ``renames`` each renamed
    declaration's byte offset in the original → its new name (empty for edits that rename
    nothing).
    """

    code: str
    spans: tuple[tuple[int, int], ...] = ()
    tokens: tuple[int, ...] = ()
    renames: dict[int, str] = field(default_factory=dict)


class Edit(Protocol):
    """A registered edit."""

    def __call__(self, code: str, language: str, seed: int) -> Edited: ...


EDITS: Registry[Edit] = Registry("counterfactual edit", key="probe.edit")


def register_edit(name: str) -> Callable[[Edit], Edit]:
    """Register ``fn`` as the edit ``name``."""

    def deco(fn: Edit) -> Edit:
        EDITS.add(name, fn)
        return fn

    return deco


def apply_edit(name: str, code: str, language: str, seed: int = 0) -> Edited:
    """Run the registered edit ``name`` on ``code``."""
    return EDITS[name](code, language, seed)
