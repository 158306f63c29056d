"""The site's page generator: records and the database in, {page path: Markdown} out.

`generate` is a pure function (no file writes, no MkDocs): the MkDocs hook in `site/hooks.py`
turns its output into virtual pages, and the tests check it without building anything. Each
record kind's pages are built by its own module; this one only puts them together.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import duckdb

from rlmguide.kb.load import Catalog
from rlmguide.sitegen import pages as kinds
from rlmguide.sitegen.atlas_page import atlas_pages
from rlmguide.sitegen.constraint_pages import constraint_pages
from rlmguide.sitegen.deployment_pages import deployment_pages
from rlmguide.sitegen.formulas_page import formula_pages
from rlmguide.sitegen.mapping_pages import mapping_pages
from rlmguide.sitegen.matrix_page import matrix_page
from rlmguide.sitegen.notation_page import notation_pages
from rlmguide.sitegen.pages import MATRIX, Index, Pages, build_index, merge
from rlmguide.sitegen.sql_pages import sql_pages
from rlmguide.sitegen.survey_pages import survey_pages


def matrix_pages(ix: Index) -> Pages:
    return {MATRIX: matrix_page(ix)}


BUILDERS: tuple[Callable[[Index], Pages], ...] = (
    kinds.taxonomy_pages,
    kinds.framework_pages,
    matrix_pages,
    kinds.component_pages,
    kinds.algorithm_pages,
    kinds.rule_pages,
    kinds.catalog_pages,
    kinds.result_pages,
    deployment_pages,
    constraint_pages,
    mapping_pages,
    formula_pages,
    notation_pages,
    kinds.source_pages,
)


SEARCH_BOOST = {
    "techniques": 3.0,
    "algorithms": 3.0,
    "frameworks": 2.0,
    "components": 2.0,
    "rules": 2.0,
    "deployments": 1.5,
    "constraints": 1.5,
    "mappings": 1.5,
    "directions": 1.5,
    "sources": 0.5,
    "results": 0.5,
}
"""Search ranking weight of the pages in each folder: a search for "async" should reach the
technique before the fourteen papers that mention it."""


def boosted(path: str, text: str) -> str:
    """A page with its folder's search weight added to its front matter."""
    weight = SEARCH_BOOST.get(path.split("/")[0])
    if weight is None or not path.endswith(".md"):
        return text
    fence = "---\n"
    meta = f"search:\n  boost: {weight:g}\n"
    if text.startswith(fence):
        return fence + meta + text.removeprefix(fence)
    return f"{fence}{meta}{fence}\n{text}"


def generate(
    catalog: Catalog,
    con: duckdb.DuckDBPyConnection,
    extra: Mapping[str, str] | None = None,
    data: Mapping[str, bytes] | None = None,
) -> Pages:
    """Every generated page of the site, {path inside the docs folder: Markdown}.

    `extra` adds pages made elsewhere (the cost core's, see `rlmguide.sitegen.cost_pages`); their
    paths must be new. `data` are the download files (`rlmguide.sitegen.data_files`): given, the SQL
    pages link to them and a page lists them.
    """
    ix = build_index(catalog)
    pages: Pages = {}
    for builder in BUILDERS:
        merge(pages, builder(ix))
    merge(pages, sql_pages(con, data))
    merge(pages, survey_pages(ix, con))
    merge(pages, atlas_pages(con))
    merge(pages, extra or {})
    return {path: boosted(path, text) for path, text in pages.items()}
