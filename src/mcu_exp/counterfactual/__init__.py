"""Counterfactual code edits: rewrite a program so one thing a reader relies on changes and the
computation does not (docs/counterfactuals.md).

Each edit is an entry of :data:`EDITS` (``rename_identifiers``, ``shuffle_names``,
``strip_comments``, ``strip_indentation``), built on tree-sitter's Java and C grammars;
:func:`check_edit` checks a result (it parses, tokens and references are kept), and
:func:`~mcu_exp.counterfactual.run_c.run_c` runs a C program to compare outputs.
"""

from __future__ import annotations

from mcu_exp.counterfactual import layout, names
from mcu_exp.counterfactual.checks import check_edit
from mcu_exp.counterfactual.registry import EDITS, Edit, Edited, apply_edit, register_edit

__all__ = ["EDITS", "Edit", "Edited", "apply_edit", "check_edit", "layout", "names", "register_edit"]
