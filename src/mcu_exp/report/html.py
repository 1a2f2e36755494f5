"""A report as one self-contained HTML page (figures inlined as base64 PNG, no external
CSS, script or font) and as its Markdown twin, which links the PNG files instead.

The page leads with the answer (:mod:`mcu_exp.report.lead`: the best configuration, whether
it beats the always-understandable baseline, the ranked configurations). Tables are laid
out to fit a 1,400 px window inside the page's margins: a metric cell's CI goes on a second,
smaller line under its value and headers wrap, so a configuration's row, baselines included,
reads without horizontal scrolling (the table still scrolls rather than overflow on a
narrow window)."""

from __future__ import annotations

import base64
import html
import re
from dataclasses import dataclass, field

import pandas as pd

from mcu_exp.markdown import md_text
from mcu_exp.report.display import to_markdown
from mcu_exp.report.lead import Lead

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 1400px; padding: 0 2rem;
  box-sizing: border-box; color: #222; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.2rem; margin-top: 2rem; }
table { border-collapse: collapse; font-size: 0.85rem; margin: 0.5rem 0 1rem; }
th, td { border: 1px solid #ccc; padding: 0.2rem 0.35rem; text-align: right; white-space: nowrap; }
th { background: #f3f3f3; white-space: normal; vertical-align: bottom; min-width: 2.5rem; max-width: 7rem; }
td:first-child, th:first-child { text-align: left; }
.ci { display: block; font-size: 0.75rem; color: #666; }
dl { display: grid; grid-template-columns: max-content auto; gap: 0.2rem 1rem; font-size: 0.9rem; }
dt { font-weight: 600; } figure { margin: 1rem 0; } figcaption { font-size: 0.85rem; color: #555; }
img { max-width: 100%; border: 1px solid #eee; } .note { font-size: 0.85rem; color: #555; }
.scroll { overflow-x: auto; }
.lead { border-left: 4px solid #3b6ea5; background: #f5f8fc; padding: 0.6rem 1rem; margin: 1rem 0 1.5rem; }
.lead .answer { font-size: 1.1rem; font-weight: 600; margin: 0.2rem 0 0.5rem; }
.lead ul { margin: 0.2rem 0 0.6rem; padding-left: 1.2rem; }
.lead td:nth-child(2), .lead td:last-child { text-align: left; } h3 { font-size: 1rem; margin: 1rem 0 0.2rem; }
"""


@dataclass
class Section:
    """A titled table with a caption, and notes on its rows (reruns, warnings). ``panels`` splits
    a wide table into narrower ones on the HTML page (each names its columns, the columns that
    identify a row repeated in each); Markdown keeps the one table."""

    title: str
    table: pd.DataFrame
    caption: str = ""
    notes: list[str] = field(default_factory=list)
    panels: list[tuple[str, list[str]]] = field(default_factory=list)  # on the page: (subtitle, columns) tables


@dataclass
class Figure:
    """A PNG figure, its file name and caption."""

    name: str
    png: bytes
    caption: str


@dataclass
class ReportDocument:
    """Everything a report page shows, in order: the answer (``lead``), facts, tables, figures, notes."""

    title: str
    facts: dict[str, str]
    sections: list[Section]
    figures: list[Figure]
    notes: list[str] = field(default_factory=list)
    lead: Lead | None = None


CI_CELL = re.compile(r"^(?P<value>[^\[]+?) (?P<ci>\[[^\]]*\])$")  # "67.7% [58.1%, 77.4%]"
MISSING_CELL = "—"


def cell_html(text: object) -> str:
    """One table cell's content: escaped, a value's CI on its own line (``span.ci``)."""
    raw = MISSING_CELL if text is None or (isinstance(text, float) and text != text) else str(text)
    match = CI_CELL.match(raw)
    if match is None:
        return html.escape(raw)
    return f'{html.escape(match["value"])}<span class="ci">{html.escape(match["ci"])}</span>'


def table_html(table: pd.DataFrame) -> str:
    """A text table as an HTML ``<table>`` (see :func:`cell_html`)."""
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in table.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{cell_html(v)}</td>" for v in row) + "</tr>" for row in table.itertuples(index=False)
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def data_uri(png: bytes) -> str:
    """A ``data:image/png;base64,…`` URI."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def render_html(doc: ReportDocument) -> str:
    """The document as a standalone HTML5 page."""
    esc = html.escape
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{esc(doc.title)}</title><style>{STYLE}</style></head><body>",
        f"<h1>{esc(doc.title)}</h1>",
        *([lead_html(doc.lead)] if doc.lead is not None else []),
        "<dl>" + "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in doc.facts.items()) + "</dl>",
    ]
    for section in doc.sections:
        parts.append(f"<h2>{esc(section.title)}</h2>")
        if section.table.empty:
            parts.append('<p class="note">nothing to show</p>')
        elif section.panels:
            for subtitle, columns in section.panels:
                parts.append(f"<h3>{esc(subtitle)}</h3>")
                parts.append(f'<div class="scroll">{table_html(section.table[columns])}</div>')
        else:
            parts.append(f'<div class="scroll">{table_html(section.table)}</div>')
        if section.caption:
            parts.append(f'<p class="note">{esc(section.caption)}</p>')
        if section.notes:
            parts.append('<ul class="note">' + "".join(f"<li>{esc(n)}</li>" for n in section.notes) + "</ul>")
    if doc.figures:
        parts.append("<h2>Figures</h2>")
    for fig in doc.figures:
        parts.append(
            f'<figure id="{esc(fig.name)}"><img alt="{esc(fig.caption)}" src="{data_uri(fig.png)}">'
            f"<figcaption>{esc(fig.caption)}</figcaption></figure>"
        )
    if doc.notes:
        parts.append("<h2>Notes</h2><ul>" + "".join(f"<li>{esc(n)}</li>" for n in doc.notes) + "</ul>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def lead_html(lead: Lead) -> str:
    """The opening block: the answer in bold, the best configuration's figures, the ranked table."""
    esc = html.escape
    parts = ['<section class="lead" id="answer">', f'<p class="answer">{esc(lead.answer)}</p>']
    if lead.best:
        parts.append("<ul>" + "".join(f"<li>{esc(line)}</li>" for line in lead.best) + "</ul>")
    if not lead.table.empty:
        parts.append(f'<div class="scroll">{table_html(lead.table)}</div>')
    if lead.caption:
        parts.append(f'<p class="note">{esc(lead.caption)}</p>')
    return "".join(parts) + "</section>"


def lead_markdown(lead: Lead) -> list[str]:
    """The opening block in Markdown (see :func:`lead_html`), its text escaped as the page's is."""
    lines = [f"**{md_text(lead.answer)}**", ""] + [f"- {md_text(line)}" for line in lead.best]
    if not lead.table.empty:
        lines += ["", to_markdown(lead.table)]
    if lead.caption:
        lines.append(f"_{md_text(lead.caption)}_")
    return [*lines, ""]


def render_markdown(doc: ReportDocument, figure_dir: str = "figures") -> str:
    """The document as Markdown; figures are linked as ``<figure_dir>/<name>``. Its text is
    escaped (:func:`~mcu_exp.markdown.md_text`) where the page's is: model names and program ids
    are user data."""
    esc = md_text
    lines = [f"# {esc(doc.title)}", ""]
    if doc.lead is not None:
        lines += lead_markdown(doc.lead)
    lines += [f"- **{esc(k)}**: {esc(v)}" for k, v in doc.facts.items()]
    for section in doc.sections:
        lines += ["", f"## {esc(section.title)}", ""]
        lines.append(to_markdown(section.table) if not section.table.empty else "_nothing to show_\n")
        if section.caption:
            lines.append(f"_{esc(section.caption)}_")
        if section.notes:
            lines += [""] + [f"- {esc(n)}" for n in section.notes]
    if doc.figures:
        lines += ["", "## Figures", ""]
    for fig in doc.figures:
        lines += [f"![{esc(fig.caption)}]({figure_dir}/{fig.name})", "", f"_{esc(fig.caption)}_", ""]
    if doc.notes:
        lines += ["", "## Notes", ""] + [f"- {esc(n)}" for n in doc.notes]
    return "\n".join(lines).rstrip() + "\n"
