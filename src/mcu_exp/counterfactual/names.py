"""The naming edits: ``rename_identifiers`` (meaningless names) and ``shuffle_names`` (misleading ones).

Both rename declarations that :func:`~mcu_exp.counterfactual.scopes.resolve` marks renamable
(locals, parameters, Java private fields), every use with its declaration, and touch nothing
else: method names, types, library calls, fields of other objects, C globals and macros, and
text inside string literals and comments (they are not identifier tokens) stay as written.
"""

from __future__ import annotations

import random

from mcu_exp.counterfactual.parsing import code_tokens, parse, tokens
from mcu_exp.counterfactual.registry import Edited, register_edit
from mcu_exp.counterfactual.scopes import Resolution, resolve

FRESH_PREFIX = "v"


def replace_spans(code: str, replacements: dict[tuple[int, int], str]) -> str:
    """``code`` with each byte span replaced by its new text (spans must not overlap)."""
    data = code.encode("utf-8")
    out: list[bytes] = []
    at = 0
    for (start, end), new in sorted(replacements.items()):
        out.append(data[at:start])
        out.append(new.encode("utf-8"))
        at = end
    out.append(data[at:])
    return b"".join(out).decode("utf-8")


def apply_renames(code: str, language: str, resolution: Resolution, renames: dict[int, str]) -> Edited:
    """Rename declaration ``i`` (an index into ``resolution.declarations``) to ``renames[i]`` everywhere."""
    tree = parse(code, language)
    index = {t.start: i for i, t in enumerate(code_tokens(tree))}
    length = {t.start: t.end for t in tokens(tree)}
    spans: dict[tuple[int, int], str] = {}
    for decl, new in renames.items():
        if new == resolution.declarations[decl].name:
            continue
        for start in resolution.uses(decl):
            spans[(start, length[start])] = new
    return Edited(
        code=replace_spans(code, spans),
        spans=tuple(sorted(spans)),
        tokens=tuple(sorted(index[s] for s, _ in spans)),
        renames={resolution.declarations[d].start: new for d, new in renames.items()},
    )


def fresh_names(taken: set[str], count: int) -> list[str]:
    """``count`` names v1, v2, … skipping any in ``taken``."""
    names: list[str] = []
    k = 0
    while len(names) < count:
        k += 1
        if f"{FRESH_PREFIX}{k}" not in taken:
            names.append(f"{FRESH_PREFIX}{k}")
    return names


@register_edit("rename_identifiers")
def rename_identifiers(code: str, language: str, seed: int) -> Edited:
    """Locals, parameters and (Java) private fields renamed to v1, v2, … in declaration order.

    A fresh name collides with no token of the program, so no renaming can capture a
    reference; every declaration gets its own name, so shadowing disappears. ``seed`` is
    unused (the edit is deterministic).
    """
    tree = parse(code, language)
    resolution = resolve(tree, language)
    taken = {t.text for t in tokens(tree)}
    renamable = [i for i, d in enumerate(resolution.declarations) if d.renamable]
    return apply_renames(code, language, resolution, dict(zip(renamable, fresh_names(taken, len(renamable)))))


def derangement(names: list[str], rng: random.Random) -> list[str]:
    """A seeded permutation of ``names`` that moves every position whose name can move."""
    if len(set(names)) < 2:
        return list(names)
    for _ in range(100):
        out = list(names)
        rng.shuffle(out)
        if all(a != b for a, b in zip(names, out)):
            return out
    return list(reversed(names))  # distinct names rarely reach here


def bindings_kept(before: Resolution, after: Resolution) -> bool:
    """Whether every token binds to the same declaration (by position) before and after.

    Renaming keeps token positions only up to length changes, so bindings are compared in
    token order: the n-th bound token must bind to the n-th declaration in both.
    """
    b_order = sorted(before.binding)
    a_order = sorted(after.binding)
    if len(b_order) != len(a_order):
        return False
    b_decl = {d.start: i for i, d in enumerate(before.declarations)}
    a_decl = {d.start: i for i, d in enumerate(after.declarations)}
    b_rank = {i: r for r, i in enumerate(sorted(b_decl.values(), key=lambda i: before.declarations[i].start))}
    a_rank = {i: r for r, i in enumerate(sorted(a_decl.values(), key=lambda i: after.declarations[i].start))}
    return all(b_rank[before.binding[b]] == a_rank[after.binding[a]] for b, a in zip(b_order, a_order))


@register_edit("shuffle_names")
def shuffle_names(code: str, language: str, seed: int) -> Edited:
    """Names permuted among the renamable variables of each scope (a seeded derangement).

    Meaning is kept (each variable is renamed consistently), names now mislead. A scope whose
    permutation would let an inner declaration capture a reference (the resolution check
    fails) is left as it was.
    """
    tree = parse(code, language)
    resolution = resolve(tree, language)
    rng = random.Random(seed)
    by_scope: dict[int, list[int]] = {}
    for i, d in enumerate(resolution.declarations):
        if d.renamable:
            by_scope.setdefault(d.scope, []).append(i)
    renames: dict[int, str] = {}
    for decls in by_scope.values():
        names = [resolution.declarations[i].name for i in decls]
        trial = {**renames, **dict(zip(decls, derangement(names, rng)))}
        edited = apply_renames(code, language, resolution, trial)
        if bindings_kept(resolution, resolve(parse(edited.code, language), language)):
            renames = trial
    return apply_renames(code, language, resolution, renames)
