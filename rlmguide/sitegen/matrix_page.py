"""The comparison matrix: frameworks x claimed features, queryable in the browser.

The table is static HTML (every cell cited, readable without JavaScript); `matrix.js` turns it
into a query: tick features to keep the frameworks that have all of them, type to find
features by name, and the state lives in the address so an answer can be linked. The data the
script needs rides on the table as attributes, so there is no second copy to drift.
"""

from __future__ import annotations

from rlmguide.kb.evidence import claim_stale
from rlmguide.kb.schema import Framework, Record
from rlmguide.kb.schema.common import SUPPORT_ORDER
from rlmguide.kb.survey_columns import TABLE11, best_feature
from rlmguide.sitegen.mdtext import (
    SEARCH_EXCLUDE,
    UNKNOWN,
    anchor,
    document,
    front_matter,
    html,
    oneline,
    plain,
)
from rlmguide.sitegen.pages import (
    FEATURE_KINDS,
    MATRIX,
    Index,
    badge,
    page_of,
    title_of,
    to_page,
)


def matrix_features(ix: Index) -> list[tuple[str, str, Record]]:
    """(kind, category, record) of every feature that at least one framework claims."""
    found = []
    for kind in FEATURE_KINDS:
        for record in ix.of(kind):
            if record.id in ix.claims:
                category = getattr(record, "scope", None) or getattr(record, "role", None) or kind
                found.append((kind, str(category), record))
    return found


def kind_label(kind: str, category: str) -> str:
    """ "technique · rollout", or the kind alone where the category repeats it ("algorithm")."""
    return kind if category == kind else f"{kind} · {category}"


def search_name(record: Record) -> str:
    """What the name filter matches: the feature's title, id and aliases, never claim notes."""
    aliases = getattr(record, "aliases", None) or []
    return oneline(" ".join([title_of(record), record.id, *aliases])).lower()


STALE_TIP = "evidence more than a year older than the framework's latest release (or its check)"


def matrix_cell(ix: Index, feature: str, fw: Framework) -> str:
    """One cell: the support level linking to the claim's source, or unknown."""
    claim = ix.claims.get(feature, {}).get(fw.id)
    if claim is None:
        # No data-sort: tables.js already keeps "unknown" cells last in either direction, and
        # most of the matrix's 4,800 cells are unknown.
        return f'<td class="support-unknown">{UNKNOWN}</td>'
    source = ix.get("source", claim.source)
    is_stale = claim_stale(fw, claim)
    tip = (
        f"{claim.note or claim.support} (version {plain(claim.version)}, source {claim.source}, "
        f"checked {claim.checked}, as of {plain(claim.as_of)}, stale {plain(is_stale)})"
    )
    body = anchor(source.url, badge(claim.support), tip) if source else badge(claim.support)
    # A stale cell says so in its text too, not only in the tooltip a touch screen cannot show.
    mark = f' <span class="claim-stale" title="{STALE_TIP}">(stale)</span>' if is_stale else ""
    order = SUPPORT_ORDER[claim.support]
    return f'<td class="support-{claim.support}" data-sort="{order}">{body}{mark}</td>'


def feature_cell(kind: str, record: Record) -> str:
    """The sticky first cell: a box to pick the feature, and its name linking to its page."""
    name = to_page(MATRIX, page_of(kind, record.id), title_of(record))
    tick = (
        f'<input type="checkbox" class="matrix-pick" value="{html(record.id)}" '
        f'aria-label="Pick {html(title_of(record))}">'
    )
    return f'<td class="feature-col"><label>{tick}</label> {name}</td>'


def matrix_table(ix: Index) -> str:
    """The frameworks x features table, one row per claimed feature."""
    heads = " ".join(
        f'<th class="fw-col" data-framework="{fw.id}" data-name="{html(fw.name.lower())}" '
        f'data-availability="{fw.availability.status}" '
        f'title="availability: {html(fw.availability.status)}">'
        f"{ix.record_link(MATRIX, 'framework', fw.id)}"
        f'<br><span class="availability">{html(fw.availability.status)}</span></th>'
        for fw in ix.frameworks
    )
    rows = []
    for kind, category, record in matrix_features(ix):
        cells = " ".join(matrix_cell(ix, record.id, fw) for fw in ix.frameworks)
        rows.append(
            f'<tr data-feature="{html(record.id)}" data-name="{html(search_name(record))}">'
            f"{feature_cell(kind, record)}"
            f'<td class="kind-col">{html(kind_label(kind, category))}</td>{cells}</tr>'
        )
    return "\n".join(
        [
            '<div class="matrix-scroll">',
            # Out of the search index: its cells are support words, which every framework's
            # page already gives with their notes.
            f'<table id="framework-matrix" class="matrix"{SEARCH_EXCLUDE}>',
            '<thead><tr><th class="feature-col">Feature</th><th class="kind-col">Kind</th>'
            f"{heads}</tr></thead>",
            "<tbody>",
            *rows,
            "</tbody>",
            "</table>",
            "</div>",
        ]
    )


def survey_table11(ix: Index) -> str:
    """The matrix under the survey's Table 11 column set (kb.survey_columns): one row per
    framework, one column per survey column, each cell the best cited claim among the
    features that mean it."""
    # One header row (tables.js sorts by it); the group and the features are in the tooltip.
    heads = " ".join(
        f'<th title="{html(c.group)}: {html(c.meaning)} ({html(", ".join(c.features))})">'
        f"{html(c.label)}</th>"
        for c in TABLE11
    )
    rows = []
    for fw in ix.frameworks:
        supports = {f: by_fw[fw.id].support for f, by_fw in ix.claims.items() if fw.id in by_fw}
        cells = []
        for column in TABLE11:
            feature = best_feature(column, supports)
            cells.append(
                f'<td class="support-unknown">{UNKNOWN}</td>'
                if feature is None
                else matrix_cell(ix, feature, fw)
            )
        name = ix.record_link(MATRIX, "framework", fw.id)
        rows.append(f"<tr><td>{name}</td>{''.join(cells)}</tr>")
    return "\n".join(
        [
            "## The survey's Table 11 columns",
            "<p>The same claims under the column set of the survey's Table 11 (arXiv:2608.27046, "
            "§6.2): DP, Z1, Z2, Z3, TP, CP, EP and PP are intra-model parallelism, AC Share to "
            "Async inter-model. Each cell is the best claim among the features that mean the "
            "column (hover a heading for them); the survey's own cells are an image and are not "
            "reproduced. "
            "<code>rlmguide compare --preset table11</code> gives the same view.</p>",
            '<div class="matrix-scroll">',
            f'<table id="survey-table-11" class="matrix"{SEARCH_EXCLUDE}>',
            f"<thead><tr><th>Framework</th>{heads}</tr></thead>",
            "<tbody>",
            *rows,
            "</tbody>",
            "</table>",
            "</div>",
        ]
    )


TOOLS = """\
<div class="matrix-tools">
<input type="search" class="matrix-find" placeholder="Find features by name, e.g. async"
 aria-label="Find features by name">
<input type="search" class="matrix-frameworks" placeholder="Frameworks, e.g. verl slime"
 aria-label="Keep frameworks whose name contains any of these words">
<label><input type="checkbox" class="matrix-partial"> count partial support</label>
<label><input type="checkbox" class="matrix-any"> any picked feature, most first</label>
<button type="button" class="md-button matrix-clear">Clear</button>
</div>
<p class="matrix-answer" aria-live="polite"></p>"""
"""The query controls; matrix.js wires them up (without it the table is still complete)."""


def matrix_page(ix: Index) -> str:
    features = matrix_features(ix)
    unclaimed = [
        ix.feature_md(MATRIX, r)
        for k in FEATURE_KINDS
        for r in sorted(ix.catalog.of(k))
        if r not in ix.claims
    ]
    blocks = [
        # The matrix needs the page's full width: no navigation or table of contents beside it.
        front_matter(["navigation", "toc"]),
        "# Comparison matrix",
        # HTML, for its class: on a phone the introduction shrinks so data shows on screen one.
        f'<p class="matrix-intro">{len(ix.frameworks)} frameworks against the {len(features)} '
        "features at least one of them claims. Tick features to keep the frameworks that "
        "support <strong>all</strong> of them (the address then links to the answer); type to "
        "find features by name. Each cell links to the source the claim was checked against "
        "(hover for the day it was checked and the date of the evidence); "
        "<strong>unknown</strong> means nobody has checked, not that the feature is missing; "
        "<strong>undocumented</strong> means the sources that could be read (often only a "
        "paper's abstract) neither document the feature nor rule it out, the survey's "
        "&quot;?&quot;, while &quot;no&quot; means they document no support; "
        "and <em>(stale)</em> marks evidence more than a year older than the framework's "
        "latest release (or than the day it was checked, where no release is recorded). "
        "Under each framework's name, its availability: <em>released</em> end-to-end code "
        "(its plans are launchable), <em>partial-code</em>, <em>paper-only</em> or "
        "<em>closed</em>.</p>",
        TOOLS,
        matrix_table(ix),
    ]
    if unclaimed:
        blocks.append("No framework claims these features yet: " + ", ".join(unclaimed) + ".")
    blocks.append(survey_table11(ix))
    return document(*blocks)
