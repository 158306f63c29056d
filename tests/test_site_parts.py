"""The site's small parts on their own: the tree drawing, reproducible plots, compact HTML."""

from __future__ import annotations

import itertools
import re

from rlmguide.sitegen.htmlcompact import compact
from rlmguide.sitegen.tree_svg import Node, layout, tree_svg

TREE = [
    Node("root", "A root whose long label wraps over more than one line", None, "root/"),
    Node("a", "A", "root", "a/"),
    Node("a1", "A first child with a label long enough to wrap", "a"),
    Node("a2", "A2", "a"),
    Node("b", "B", "root", "b/"),
]


def test_tree_layout_puts_depths_in_columns_and_boxes_apart() -> None:
    boxes = {b.node.key: b for b in layout(TREE)}
    assert [boxes[k].depth for k in ("root", "a", "a1", "b")] == [0, 1, 2, 1]
    assert boxes["root"].x < boxes["a"].x < boxes["a1"].x
    assert len(boxes["root"].lines) > 1
    # Every box starts inside the picture and no two boxes of a column overlap.
    assert min(b.y for b in boxes.values()) >= 0
    for depth in {b.depth for b in boxes.values()}:
        column = sorted((b for b in boxes.values() if b.depth == depth), key=lambda b: b.y)
        for upper, lower in itertools.pairwise(column):
            assert upper.y + upper.height <= lower.y
    # A parent sits between its first and last child.
    a = boxes["a"]
    assert boxes["a1"].y <= a.y + a.height / 2 <= boxes["a2"].y + boxes["a2"].height


def test_tree_svg_links_boxes_and_is_stable() -> None:
    svg = tree_svg(TREE, "A <test> tree")
    assert svg == tree_svg(TREE, "A <test> tree")
    assert "<title>A &lt;test&gt; tree</title>" in svg
    assert svg.count('<g class="tree-node">') == len(TREE)
    assert svg.count('class="tree-edge"') == len(TREE) - 1
    assert re.findall(r'<a href="([^"]+)">', svg) == ["root/", "a/", "b/"]
    assert tree_svg([], "empty") == ""


def test_plots_are_reproducible() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from rlmguide.sitegen.svgplot import svg

    def draw() -> str:
        fig, ax = plt.subplots()
        ax.plot([1, 2, 3], [3, 1, 2], label="line")
        ax.legend()
        return svg(fig)

    first, second = draw(), draw()
    assert first == second
    assert "<dc:date>" not in first
    assert 'id="p' in first  # clip-path ids are there, from a fixed salt


def test_compact_html_keeps_preformatted_text() -> None:
    page = (
        "<nav>\n\n    <ul>\n      <li>a</li>\n\n\n    </ul>  \n</nav>\n"
        "<pre><code>x = 1\n\n    y = 2\n</code></pre>\n   <script>\n  let a;\n\n</script>\n"
    )
    assert compact(page) == (
        "<nav>\n<ul>\n<li>a</li>\n</ul>\n</nav>\n"
        "<pre><code>x = 1\n\n    y = 2\n</code></pre>\n<script>\n  let a;\n\n</script>\n"
    )


class _Catalog:
    """Just what `linked_ids` asks of a catalog: the ids of a kind."""

    def of(self, kind: str) -> dict[str, object]:
        ids = {"rule": ["verifier-on-cpu"], "source": ["arxiv-1", "docs-2"], "framework": ["verl"]}
        return dict.fromkeys(ids.get(kind, []), object())


def test_report_ids_become_links() -> None:
    from rlmguide.sitegen.cost_pages import linked_ids

    report = (
        "| rule | effect | sources |\n| --- | --- | --- |\n"
        "| verifier-on-cpu | advise | arxiv-1, docs-2 |\n"
        "| frameworks | verl, unknown-fw | x |\n"
    )
    assert linked_ids(report, _Catalog()) == (  # type: ignore[arg-type]
        "| rule | effect | sources |\n| --- | --- | --- |\n"
        "| [verifier-on-cpu](rules/verifier-on-cpu.md) | advise | "
        "[arxiv-1](sources/arxiv-1.md), [docs-2](sources/docs-2.md) |\n"
        "| frameworks | verl, unknown-fw | x |\n"
    )


def test_report_says_when_prefix_caching_is_off() -> None:
    from rlmguide.report import layout

    plan = {
        "rollout": {"gpus": 3, "tp": 1, "pp": 1, "ep": 1, "dp": 3},
        "train": {"gpus": 5, "tp": 1, "pp": 1, "cp": 1, "ep": 1, "dp": 5, "zero": 3},
    }
    plan["train"]["recompute"] = "selective"
    on = layout({**plan, "prefix_caching": True})[0]
    off = layout({**plan, "prefix_caching": False})[0]
    assert off == on + ", no prefix caching"
