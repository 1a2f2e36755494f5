"""Read the tables of a report's Markdown back as rows of cells (for the report tests)."""

from __future__ import annotations


def section(markdown: str, title: str) -> str:
    """The text of section ``## title`` up to the next section."""
    return markdown.split(f"## {title}\n")[1].split("\n## ")[0]


def table_rows(text: str) -> list[dict[str, str]]:
    """The first Markdown table in ``text`` as one dict per row (header → cell)."""
    lines = [line for line in text.splitlines() if line.startswith("| ")]
    cells = [[c.strip() for c in line.strip("|").split(" | ")] for line in lines]
    head, body = cells[0], cells[2:]
    return [dict(zip(head, row, strict=True)) for row in body]
