"""Text that goes into Markdown (``report.md``, MLflow run descriptions) shown as written.

Model names, program ids, dataset names and run names are user data: ``<img src=x onerror=…>``
would be HTML to a renderer, ``**bold**`` emphasis, ``[a](javascript:…)`` a link, and a ``|``
would split a table cell. :func:`md_text` escapes what changes the rendering and leaves
what cannot (``[58.1%, 77.4%]``, ``snake_case``, ``AUC > 0.5``) as it is, so a report reads the
same in a text editor.
"""

from __future__ import annotations

import re

_SPECIAL = re.compile(
    r"""
      (?P<backslash>\\)
    | (?P<lt><)
    | (?P<entity>&(?=\#?\w+;))          # &lt; &#60; would render as the character
    | (?P<char>[*`|~])                  # emphasis, code spans, table cells, strikethrough
    | (?P<underscore>(?<!\w)_|_(?!\w))  # emphasis by _ (GFM leaves snake_case alone)
    | (?P<bracket>\](?=[(\[:]))         # [text](url), [text][ref], [ref]: url
    """,
    re.VERBOSE,
)
_REPLACE = {"backslash": "\\\\", "lt": "&lt;", "entity": "&amp;"}


def md_text(text: object) -> str:
    """``text`` escaped for Markdown (inline text or a table cell): one line, HTML and the
    Markdown syntax it holds shown literally, pipes escaped."""
    flat = " ".join(str(text).splitlines())

    def escape(match: re.Match[str]) -> str:
        kind = match.lastgroup or ""
        return _REPLACE.get(kind, "\\" + match.group(0))

    return _SPECIAL.sub(escape, flat)
