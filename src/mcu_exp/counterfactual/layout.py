"""The layout edits: ``strip_comments`` and ``strip_indentation``; code tokens are unchanged."""

from __future__ import annotations

from tree_sitter import Node

from mcu_exp.counterfactual.names import replace_spans
from mcu_exp.counterfactual.parsing import ATOMIC_TYPES, parse, tokens
from mcu_exp.counterfactual.registry import Edited, register_edit

HORIZONTAL = b" \t"


@register_edit("strip_comments")
def strip_comments(code: str, language: str, seed: int) -> Edited:
    """Every comment node removed (line, block, Javadoc); a line left blank by it removed too.

    A comment alone on its line goes with its line; a trailing comment goes with the spaces
    before it; a comment between two tokens becomes one space, so the tokens stay apart.
    Comment markers inside string literals are not comments and stay. ``seed`` is unused.
    """
    data = code.encode("utf-8")
    spans: dict[tuple[int, int], str] = {}
    for token in tokens(parse(code, language)):
        if not token.is_comment:
            continue
        start, end = token.start, token.end
        line_start = data.rfind(b"\n", 0, start) + 1
        line_end = data.find(b"\n", end)
        line_end = len(data) if line_end < 0 else line_end
        before, after = data[line_start:start], data[end:line_end]
        if data[end - 1 : end] == b"\n":  # a line comment that holds its newline (C)
            after, line_end = b"", end - 1
        if not before.strip(HORIZONTAL) and not after.strip(HORIZONTAL):
            spans[(line_start, min(line_end + 1, len(data)))] = ""
        elif not after.strip(HORIZONTAL):
            spans[(start - (len(before) - len(before.rstrip(HORIZONTAL))), line_end)] = ""
        else:
            spans[(start, end)] = " "
    return Edited(code=replace_spans(code, _merge(spans)), spans=tuple(sorted(spans)))


def _merge(spans: dict[tuple[int, int], str]) -> dict[tuple[int, int], str]:
    """Overlapping spans (two comments on one line) joined, the first one's text kept."""
    out: dict[tuple[int, int], str] = {}
    last: tuple[int, int] | None = None
    for span, new in sorted(spans.items()):
        if last is not None and span[0] < last[1]:
            merged = (last[0], max(last[1], span[1]))
            out[merged] = out.pop(last)
            last = merged
        else:
            out[span] = new
            last = span
    return out


def _protected_lines(root: Node, data: bytes) -> set[int]:
    """Byte offsets of line starts whose leading whitespace is content: inside a multi-line
    literal, or after a C backslash-newline continuation."""
    protected: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type in ATOMIC_TYPES or node.type in ("block_comment", "comment"):
            if node.type in ATOMIC_TYPES:
                at = data.find(b"\n", node.start_byte, node.end_byte)
                while at >= 0:
                    protected.add(at + 1)
                    at = data.find(b"\n", at + 1, node.end_byte)
            continue
        stack.extend(node.children)
    at = data.find(b"\\\n")
    while at >= 0:
        protected.add(at + 2)
        at = data.find(b"\\\n", at + 1)
    return protected


@register_edit("strip_indentation")
def strip_indentation(code: str, language: str, seed: int) -> Edited:
    """Leading whitespace of every line removed, except inside multi-line string literals and
    on C continuation lines (there it is content). ``seed`` is unused."""
    data = code.encode("utf-8")
    protected = _protected_lines(parse(code, language).root_node, data)
    spans: dict[tuple[int, int], str] = {}
    line_start = 0
    while line_start < len(data):
        end = line_start
        while end < len(data) and data[end : end + 1] in (b" ", b"\t", b"\f"):
            end += 1
        if end > line_start and line_start not in protected:
            spans[(line_start, end)] = ""
        nl = data.find(b"\n", line_start)
        if nl < 0:
            break
        line_start = nl + 1
    return Edited(code=replace_spans(code, spans), spans=tuple(sorted(spans)))
