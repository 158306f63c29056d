"""Small Markdown builders for the generated site: escaping, links, tables, numbers.

Record text is authored prose, not Markdown: it may contain `*`, `_`, `<` or `|` that would
otherwise turn into emphasis, HTML or table cells, so every record value goes through `esc`.
"""

from __future__ import annotations

import datetime as dt
import html
import posixpath
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
        "|": "\\|",
        "<": "&lt;",
        ">": "&gt;",
    }
)


def esc(text: object) -> str:
    """Record text as one line of literal Markdown (whitespace collapsed, specials escaped)."""
    return " ".join(str(text).split()).translate(_MARKDOWN_SPECIALS)


def attr(text: object) -> str:
    """Text for an HTML attribute or a raw HTML cell (Markdown is not parsed there)."""
    return html.escape(" ".join(str(text).split()), quote=True)


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


def show(value: Any) -> str:
    """Any record value as escaped Markdown; None is `unknown`."""
    if value is None:
        return UNKNOWN
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        return number(value)
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return ", ".join(show(v) for v in value) if value else UNKNOWN
    return esc(value)


def rel(src: str, dst: str) -> str:
    """The relative link from page `src` to page `dst` (both paths inside the docs folder)."""
    return posixpath.relpath(dst, posixpath.dirname(src) or ".")


def link(src: str, dst: str, text: str) -> str:
    """A Markdown link between two pages; `text` must already be escaped."""
    return f"[{text}]({rel(src, dst)})"


def url(address: str) -> str:
    """An external address safe inside Markdown link parentheses."""
    return address.replace(" ", "%20").replace("(", "%28").replace(")", "%29")


def external(address: str, text: str) -> str:
    return f"[{text}]({url(address)})"


def code(text: str) -> str:
    """Inline code; a double fence keeps backticks inside the text literal."""
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A Markdown table from already-escaped cells (an empty cell would read as missing)."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join(" --- " for _ in headers) + "|"]
    lines += ["| " + " | ".join(cell or UNKNOWN for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def fields(pairs: Iterable[tuple[str, str]]) -> str:
    """A two-column table of a record's fields."""
    return table(["Field", "Value"], pairs)


def fenced(language: str, text: str) -> str:
    fence = "````" if "```" in text else "```"
    return f"{fence}{language}\n{text.rstrip()}\n{fence}\n"


def bullets(items: Iterable[str]) -> str:
    lines = [f"- {item}" for item in items]
    return "\n".join(lines) + "\n" if lines else ""


def document(*blocks: str) -> str:
    """Blocks joined by blank lines, ending in one newline (empty blocks are dropped)."""
    return "\n\n".join(b.strip("\n") for b in blocks if b and b.strip()) + "\n"
