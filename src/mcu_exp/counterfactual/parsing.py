"""Parsing Java and C with tree-sitter, and the program's token stream.

Every edit and every check reads programs through here: :func:`parse` gives the concrete
syntax tree, :func:`tokens` its leaves in source order (a string or character literal is one
token, so an identifier inside ``"x + 1"`` is never a token of its own), :func:`syntax_errors`
the ERROR and MISSING nodes a parse recovered from. Offsets are byte offsets in the UTF-8
source, as tree-sitter counts them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import tree_sitter_c
import tree_sitter_java
from tree_sitter import Language, Node, Parser, Tree

LANGUAGES = ("java", "c")
COMMENT_TYPES = frozenset({"comment", "line_comment", "block_comment"})
# nodes read as one token: their inner structure (escapes, fragments) is one literal to a reader
ATOMIC_TYPES = frozenset(
    {"string_literal", "character_literal", "char_literal", "text_block", "system_lib_string", "preproc_arg"}
)
IDENTIFIER = "identifier"


@dataclass(frozen=True)
class Token:
    """One leaf of the syntax tree: its node type, text and byte span."""

    type: str
    text: str
    start: int
    end: int

    @property
    def is_comment(self) -> bool:
        """Whether this token is a comment (line, block or Javadoc)."""
        return self.type in COMMENT_TYPES


@cache
def parser(language: str) -> Parser:
    """A tree-sitter parser for ``language`` ('java' or 'c')."""
    if language == "java":
        return Parser(Language(tree_sitter_java.language()))
    if language == "c":
        return Parser(Language(tree_sitter_c.language()))
    raise ValueError(f"unknown language {language!r}: expected one of {', '.join(LANGUAGES)}")


def parse(code: str, language: str) -> Tree:
    """The syntax tree of ``code``."""
    return parser(language).parse(code.encode("utf-8"))


def text(node: Node) -> str:
    """A node's source text."""
    return (node.text or b"").decode("utf-8")


def tokens(tree: Tree) -> list[Token]:
    """The tree's leaves in source order, comments included, literals as one token each."""
    out: list[Token] = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.type in ATOMIC_TYPES or node.child_count == 0:
            if node.end_byte > node.start_byte:  # a MISSING node is empty
                out.append(Token(node.type, text(node), node.start_byte, node.end_byte))
            continue
        stack.extend(reversed(node.children))
    return out


def code_tokens(tree: Tree) -> list[Token]:
    """The tree's leaves without comments."""
    return [t for t in tokens(tree) if not t.is_comment]


def syntax_errors(tree: Tree) -> list[str]:
    """One line per ERROR or MISSING node ('ERROR at byte 12'); empty for a clean parse."""
    found: list[str] = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.is_error:
            found.append(f"ERROR at byte {node.start_byte}")
        elif node.is_missing:
            found.append(f"MISSING {node.type} at byte {node.start_byte}")
        if node.has_error:
            stack.extend(node.children)
    return found
