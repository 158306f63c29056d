"""A tree drawn as inline SVG when the site is built: boxes left to right, linked to pages.

The taxonomy diagrams used to be Mermaid, which loads a script from a CDN at run time: offline
they showed as raw `graph LR` text. Drawing them here needs no script at all, the output is
the same bytes for the same records, and each box is a link. Text width is estimated, not
measured (no font is at hand when building): labels wrap at a fixed number of characters and
boxes are sized for the widest line with a margin.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

from rlmguide.sitegen.mdtext import html

WRAP_CHARS = 26
"""Labels wrap at this many characters, so one long name does not widen its whole column."""
CHAR_PX = 6.8
"""Average advance of a character at FONT_PX in the site's sans-serif font, with some slack."""
FONT_PX = 12
LINE_PX = 15
PAD_X = 8
PAD_Y = 6
GAP_X = 36
"""Horizontal room between columns, where the edges run."""
GAP_Y = 8


@dataclass(frozen=True)
class Node:
    key: str
    label: str
    parent: str | None
    href: str | None = None


@dataclass(frozen=True)
class _Box:
    node: Node
    lines: list[str]
    depth: int
    x: float
    y: float
    width: float
    height: float


def _lines(label: str) -> list[str]:
    return textwrap.wrap(label, WRAP_CHARS, break_long_words=False) or [label]


def layout(nodes: Sequence[Node]) -> list[_Box]:
    """Boxes for `nodes` (given in tree order, root first): a column per depth, each subtree
    in a horizontal band of its own, each parent centred on the band of its children."""
    kids: dict[str | None, list[Node]] = {}
    depth: dict[str, int] = {}
    for node in nodes:
        kids.setdefault(node.parent, []).append(node)
        depth[node.key] = depth.get(node.parent, -1) + 1 if node.parent in depth else 0
    lines = {n.key: _lines(n.label) for n in nodes}
    height = {k: len(v) * LINE_PX + 2 * PAD_Y for k, v in lines.items()}
    columns = max(depth.values(), default=0) + 1
    widths = [0.0] * columns
    for node in nodes:
        text = max(len(line) for line in lines[node.key]) * CHAR_PX
        widths[depth[node.key]] = max(widths[depth[node.key]], text + 2 * PAD_X)
    lefts = [sum(widths[:d]) + GAP_X * d for d in range(columns)]

    band: dict[str, float] = {}

    def measure(node: Node) -> float:
        """The height a node's subtree needs: its own box or its children's bands stacked."""
        children = kids.get(node.key, [])
        stacked = sum(measure(c) for c in children) + GAP_Y * max(len(children) - 1, 0)
        band[node.key] = max(height[node.key], stacked)
        return band[node.key]

    centre: dict[str, float] = {}

    def place(node: Node, top: float) -> None:
        """Centre a node in its band and stack its children, centred, inside the same band."""
        centre[node.key] = top + band[node.key] / 2
        children = kids.get(node.key, [])
        stacked = sum(band[c.key] for c in children) + GAP_Y * max(len(children) - 1, 0)
        cursor = top + (band[node.key] - stacked) / 2
        for child in children:
            place(child, cursor)
            cursor += band[child.key] + GAP_Y

    top = 0.0
    for root in kids.get(nodes[0].parent if nodes else None, []):
        measure(root)
        place(root, top)
        top += band[root.key] + GAP_Y
    return [
        _Box(
            n,
            lines[n.key],
            depth[n.key],
            lefts[depth[n.key]],
            centre[n.key] - height[n.key] / 2,
            widths[depth[n.key]],
            height[n.key],
        )
        for n in nodes
    ]


def _fmt(value: float) -> str:
    """Coordinates rounded to a tenth: enough for a picture, and stable text for diffs."""
    return f"{value:.1f}".removesuffix(".0")


def tree_svg(nodes: Sequence[Node], title: str) -> str:
    """An inline SVG of the tree; `title` names it for screen readers."""
    boxes = layout(nodes)
    if not boxes:
        return ""
    where = {b.node.key: b for b in boxes}
    width = max(b.x + b.width for b in boxes)
    height = max(b.y + b.height for b in boxes)
    parts = [
        f'<svg class="tree-diagram" xmlns="http://www.w3.org/2000/svg" role="img" '
        f'viewBox="0 0 {_fmt(width + 2)} {_fmt(height + 2)}" width="{_fmt(width + 2)}" '
        f'font-size="{FONT_PX}"><title>{html(title)}</title>'
    ]
    for box in boxes:
        parent = where.get(box.node.parent) if box.node.parent else None
        if parent is None:
            continue
        x0, y0 = parent.x + parent.width, parent.y + parent.height / 2
        x1, y1 = box.x, box.y + box.height / 2
        mid = (x0 + x1) / 2
        parts.append(
            f'<path class="tree-edge" d="M{_fmt(x0 + 1)} {_fmt(y0 + 1)} C{_fmt(mid + 1)} '
            f'{_fmt(y0 + 1)} {_fmt(mid + 1)} {_fmt(y1 + 1)} {_fmt(x1 + 1)} {_fmt(y1 + 1)}"/>'
        )
    for box in boxes:
        x, y = box.x + 1, box.y + 1
        text = "".join(
            f'<tspan x="{_fmt(x + PAD_X)}" y="{_fmt(y + PAD_Y + (i + 0.78) * LINE_PX)}">'
            f"{html(line)}</tspan>"
            for i, line in enumerate(box.lines)
        )
        shape = (
            f'<rect x="{_fmt(x)}" y="{_fmt(y)}" width="{_fmt(box.width)}" '
            f'height="{_fmt(box.height)}" rx="4"/><text>{text}</text>'
        )
        if box.node.href:
            shape = f'<a href="{html(box.node.href)}">{shape}</a>'
        parts.append(f'<g class="tree-node">{shape}</g>')
    parts.append("</svg>")
    return f'<div class="tree-scroll">{"".join(parts)}</div>'
