"""Checks that an edit kept what it promised to keep.

:func:`check_edit` returns one line per problem (empty: the edit is sound): the edited
program parses with no ERROR or MISSING node; its code tokens are the original's, position by
position, except identifiers of renamed variables (each renamed consistently, one new name
per declaration); every identifier resolves to the same declaration before and after (the
scope resolution run on both); ``strip_comments`` leaves no comment.
"""

from __future__ import annotations

from mcu_exp.counterfactual.names import bindings_kept
from mcu_exp.counterfactual.parsing import code_tokens, parse, syntax_errors, tokens
from mcu_exp.counterfactual.registry import Edited
from mcu_exp.counterfactual.scopes import resolve

RENAMING_EDITS = frozenset({"rename_identifiers", "shuffle_names"})


def check_edit(original: str, edited: Edited | str, language: str, edit_name: str) -> list[str]:
    """The problems of ``edited`` as the edit ``edit_name`` of ``original``; empty when sound."""
    new_code = edited.code if isinstance(edited, Edited) else edited
    before, after = parse(original, language), parse(new_code, language)
    if syntax_errors(before):
        return [f"the original does not parse: {syntax_errors(before)[0]}"]
    problems = [f"edited: {e}" for e in syntax_errors(after)[:3]]
    res_before, res_after = resolve(before, language), resolve(after, language)
    old, new = code_tokens(before), code_tokens(after)
    if len(old) != len(new):
        return [*problems, f"{len(old)} code tokens became {len(new)}"]
    renaming = edit_name in RENAMING_EDITS
    names: dict[int, str] = {}  # declaration (original) → its new name
    for i, (a, b) in enumerate(zip(old, new)):
        if a.type != b.type:
            problems.append(f"token {i}: {a.type} {a.text!r} became {b.type} {b.text!r}")
        elif a.text != b.text:
            decl = res_before.binding.get(a.start)
            if not renaming or decl is None or not res_before.declarations[decl].renamable:
                problems.append(f"token {i}: {a.text!r} became {b.text!r}")
            elif names.setdefault(decl, b.text) != b.text:
                problems.append(f"token {i}: {a.text!r} renamed both {names[decl]!r} and {b.text!r}")
        if len(problems) > 5:
            break
    if not bindings_kept(res_before, res_after):
        problems.append("an identifier resolves to a different declaration after the edit")
    if edit_name == "strip_comments" and any(t.is_comment for t in tokens(after)):
        problems.append("a comment is left")
    return problems
