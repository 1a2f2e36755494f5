"""Read a report page's HTML back (the standard library's parser): the order of its top-level
blocks, and each table as a header and rows of cell texts, a CI line joined to its value by
a space as the Markdown tables show it."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser


@dataclass
class Table:
    """A ``<table>``: the block (id or class) it sits in, its headers and its rows."""

    inside: str
    header: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)

    def records(self) -> list[dict[str, str]]:
        """Each row as header → cell."""
        return [dict(zip(self.header, row, strict=True)) for row in self.rows]


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.blocks: list[str] = []  # body's children in order: tag#id or tag.class or tag
        self.tables: list[Table] = []
        self._depth = 0
        self._section = ""
        self._cell: list[str] | None = None
        self._row: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "body":
            self._depth = 0
            return
        if self._depth == 0 and tag not in ("meta", "style", "title", "html", "head"):
            name = (
                f"{tag}#{found['id']}" if found.get("id") else f"{tag}.{found['class']}" if found.get("class") else tag
            )
            self.blocks.append(name)
            self._section = name
        if tag not in ("br", "img", "meta"):
            self._depth += 1
        if tag == "table":
            self.tables.append(Table(self._section))
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "span" and self._cell is not None:
            self._cell.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag not in ("br", "img", "meta", "body", "html"):
            self._depth -= 1
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr" and self._row is not None:
            table = self.tables[-1]
            if not table.header:
                table.header = self._row
            else:
                table.rows.append(self._row)
            self._row = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def parse(page: str) -> _Page:
    """The page's blocks and tables."""
    parser = _Page()
    parser.feed(page)
    return parser


def element_text(page: str, tag: str, css_class: str) -> list[str]:
    """The unescaped texts of every ``<tag class="css_class">`` (no nested tags of the same kind)."""
    import html
    import re

    found = re.findall(rf'<{tag} class="{css_class}">(.*?)</{tag}>', page, flags=re.S)
    return [html.unescape(re.sub(r"<[^>]+>", " ", text)).strip() for text in found]
