"""Small builders for the generated pages: Markdown prose and lists, HTML tables, numbers.

Record text is authored prose, not Markdown: it may contain `*`, `_`, `<` or `|` that would
otherwise turn into emphasis, HTML or table cells, so every record value is escaped (`esc` for
Markdown, `html` for HTML). Tables are emitted as HTML: Python-Markdown parses table cells about
a millisecond per row, which made tables most of the build time; raw HTML passes through whole.
Links inside HTML do not get MkDocs' link check, so `href` builds them from page paths and the
site tests check every link of the built HTML.
"""

from __future__ import annotations

import datetime as dt
import html as _html
import posixpath
import re
from collections.abc import Iterable, Sequence
from typing import Any

UNKNOWN = "unknown"
"""How a value nobody recorded is shown: never as "no", never as an empty cell."""

_MARKDOWN_SPECIALS = str.maketrans(
    {
        "\\": "\\\\",
        "`": "\\`",
        "*": "\\*",
        "_": "\\_",
        "[": "\\[",
        "]": "\\]",
        "<": "&lt;",
        ">": "&gt;",
    }
)


def oneline(text: object) -> str:
    return " ".join(str(text).split())


def esc(text: object) -> str:
    """Record text as one line of literal Markdown (whitespace collapsed, specials escaped)."""
    return oneline(text).translate(_MARKDOWN_SPECIALS)


def html(text: object) -> str:
    """Record text as one line of HTML text, also safe inside a quoted attribute."""
    return _html.escape(oneline(text), quote=True)


def number(value: float) -> str:
    """A figure for people: four significant digits, thousands grouped from 10,000 up.

    Four-digit numbers stay ungrouped so years and model widths (2024, 7168) read naturally.
    """
    if isinstance(value, bool):
        return "yes" if value else "no"
    if float(value).is_integer():
        whole = int(value)
        return f"{whole:,}" if abs(whole) >= 10_000 else str(whole)
    if abs(value) >= 10_000:
        return f"{value:,.0f}"
    if abs(value) >= 1_000:
        return f"{value:.0f}"
    return f"{value:.4g}"


def plain(value: Any) -> str:
    """Any record value as plain text; None (and an empty list) is `unknown`."""
    if value is None:
        return UNKNOWN
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        return number(value)
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return ", ".join(plain(v) for v in value) if value else UNKNOWN
    return oneline(value)


_CODE_SPAN = re.compile(r"`([^`]+)`")


def esc_code(text: object) -> str:
    """Like `esc`, but `name` spans written in backticks stay code (database comments and
    docstrings name columns and fields that way)."""
    parts = _CODE_SPAN.split(oneline(text))
    # Prose parts are escaped without `esc`'s trimming, which would eat the spaces around code.
    return "".join(
        code(p) if i % 2 else p.translate(_MARKDOWN_SPECIALS) for i, p in enumerate(parts)
    )


def html_code_spans(text: object) -> str:
    """Like `html`, with `name` spans in backticks as <code>."""
    parts = _CODE_SPAN.split(oneline(text))
    return "".join(
        html_code(p) if i % 2 else _html.escape(p, quote=True) for i, p in enumerate(parts)
    )


def show(value: Any) -> str:
    """A record value as escaped Markdown."""
    return esc(plain(value))


def cell(value: Any) -> str:
    """A record value as escaped HTML."""
    return html(plain(value))


# --- links -----------------------------------------------------------------------------------


def rel(src: str, dst: str) -> str:
    """The relative Markdown link from page `src` to page `dst` (paths in the docs folder)."""
    return posixpath.relpath(dst, posixpath.dirname(src) or ".")


def link(src: str, dst: str, text: str) -> str:
    """A Markdown link between two pages (checked by MkDocs); `text` must be escaped."""
    return f"[{text}]({rel(src, dst)})"


def page_dir(path: str) -> str:
    """The folder a page is served from (use_directory_urls): a/b.md -> a/b, a/index.md -> a."""
    stem = posixpath.splitext(path)[0]
    return posixpath.dirname(stem) if posixpath.basename(stem) == "index" else stem


def href(src: str, dst: str) -> str:
    """The relative URL from page `src` to page `dst` in the built site, for raw HTML."""
    target = posixpath.relpath(page_dir(dst) or ".", page_dir(src) or ".")
    return "./" if target == "." else target + "/"


def anchor(address: str, text: str, title: str | None = None) -> str:
    """An HTML link; `text` must be HTML already."""
    tip = f' title="{html(title)}"' if title else ""
    return f'<a href="{html(address)}"{tip}>{text}</a>'


def url(address: str) -> str:
    """An external address safe inside Markdown link parentheses."""
    return address.replace(" ", "%20").replace("(", "%28").replace(")", "%29")


def external(address: str, text: str) -> str:
    """A Markdown link to another site; `text` must be escaped."""
    return f"[{text}]({url(address)})"


# --- blocks ----------------------------------------------------------------------------------


def code(text: str) -> str:
    """Inline Markdown code; a double fence keeps backticks inside the text literal."""
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def html_code(text: str) -> str:
    return f"<code>{_html.escape(text)}</code>"


SEARCH_EXCLUDE = " data-search-exclude"
"""An attribute that keeps an element out of Material's search index."""


def _rows(rows: Iterable[Sequence[str]]) -> str:
    # A space between cells: the search indexer keeps only text, and without one adjacent
    # cells ran together ("Typepaper"), so neither word could be found.
    return "\n".join(
        "<tr>" + " ".join(f"<td>{c or UNKNOWN}</td>" for c in row) + "</tr>" for row in rows
    )


def table(
    headers: Sequence[str],
    rows: Iterable[Sequence[str]],
    table_id: str | None = None,
    searchable: bool = True,
) -> str:
    """An HTML table of already-escaped cells; an empty cell reads `unknown`.

    No class attribute: Material styles only class-less tables. tables.js makes the columns
    sortable. `searchable=False` keeps a table that repeats other pages' text out of the
    search index, so searches land on the page that owns the text.
    """
    ident = f' id="{table_id}"' if table_id else ""
    ident += "" if searchable else SEARCH_EXCLUDE
    head = " ".join(f"<th>{h}</th>" for h in headers)
    body = _rows(rows)
    return f"<table{ident}>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody>\n</table>\n"


def fields(pairs: Iterable[tuple[str, str]]) -> str:
    """A record's fields as a two-column HTML table (values already HTML).

    No heading row: "Field / Value" says nothing, and without one tables.js leaves it unsorted.
    """
    return f"<table>\n<tbody>\n{_rows(pairs)}\n</tbody>\n</table>\n"


def fenced(language: str, text: str) -> str:
    fence = "````" if "```" in text else "```"
    return f"{fence}{language}\n{text.rstrip()}\n{fence}\n"


def bullets(items: Iterable[str]) -> str:
    lines = [f"- {item}" for item in items]
    return "\n".join(lines) + "\n" if lines else ""


def front_matter(hide: Sequence[str]) -> str:
    """A page's YAML front matter hiding Material's parts (navigation, toc) beside it."""
    return "---\nhide:\n" + "".join(f"  - {part}\n" for part in hide) + "---"


def document(*blocks: str) -> str:
    """Blocks joined by blank lines, ending in one newline (empty blocks are dropped)."""
    return "\n\n".join(b.strip("\n") for b in blocks if b and b.strip()) + "\n"
