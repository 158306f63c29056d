"""Built pages without the template's blank lines and indentation.

Material's Jinja templates leave every navigation entry wrapped in a dozen blank or indented
lines; with a few hundred entries in a section's navigation that was most of each page's
bytes. Collapsing a run of whitespace that contains a line break to one line break changes
nothing a browser renders, except inside elements that keep whitespace, which are left alone.
"""

from __future__ import annotations

import re

_KEEP = re.compile(r"(<(pre|textarea|script|style)\b.*?</\2>)", re.DOTALL | re.IGNORECASE)
_BREAKS = re.compile(r"[ \t]*\n\s*")


def compact(page: str) -> str:
    """`page` with each whitespace run holding a line break cut to one line break."""
    parts = _KEEP.split(page)
    out = []
    # split() with two groups yields: text, whole kept element, tag name, text, ...
    for i in range(0, len(parts), 3):
        out.append(_BREAKS.sub("\n", parts[i]))
        if i + 1 < len(parts):
            out.append(parts[i + 1])
    return "".join(out)
