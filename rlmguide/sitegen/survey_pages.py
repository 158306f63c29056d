"""The survey map and the research-direction pages.

The map holds the survey (arXiv:2608.27046) against this repository, row by row: its sections,
tables and algorithms, then the finer rows (takeaways, Table 10's models, the frameworks it
names, Table 11's columns, the research directions). `survey_map.yaml` names what implements
each row and what the survey asks of it; the status is computed by running those checks
(`rlmguide.sitegen.survey_checks`), never written down. Records that cite the survey with a
locator naming a row are listed beside it too.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from pathlib import Path
from typing import Literal

import duckdb
import yaml
from pydantic import TypeAdapter

from rlmguide.kb.load import Catalog
from rlmguide.kb.schema import Direction, Record
from rlmguide.kb.schema.common import Strict, Text
from rlmguide.sitegen.mdtext import bullets, cell, document, esc, fields, html, html_code, table
from rlmguide.sitegen.pages import Index, Pages, index_of, page_of, record_pages, sources_section
from rlmguide.sitegen.survey_checks import (
    STATUSES,
    SURVEY,
    Checker,
    Finding,
    Requirement,
    Status,
    status_of,
)

MAP_FILE = Path(__file__).with_name("survey_map.yaml")
MAP_PAGE = "survey/index.md"
TAKEAWAY_TEST = "tests/test_survey_map.py::test_every_takeaway_names_records_that_cite_the_survey"
"""The test that checks every takeaway: its records exist and cite the survey."""

Part = Literal[
    "section", "table", "algorithm", "takeaway", "model", "framework", "column", "direction"
]
MAIN_PARTS = {"section": "Sections", "table": "Tables", "algorithm": "Algorithms"}
FINE_PARTS = {
    "takeaway": "Takeaways (SURVEY.md §2: §2.6, §3, §3.8, §4.7, §6.2)",
    "model": "Table 10 rows: the aligned LLMs and reasoning models",
    "framework": "Frameworks the survey names (§1, §6.2)",
    "column": "Table 11 columns: a cited claim for every framework the survey names",
    "direction": "Research directions (§7) and the gaps named elsewhere",
}
PARTS = {**MAIN_PARTS, **FINE_PARTS}
CITING_PARTS = ("takeaway", "model", "framework")
"""Rows whose records must cite the survey: they stand for what the survey names."""


class MapItem(Strict):
    """One row of the survey and what implements it; its status is what its checks find."""

    id: Text
    part: Part
    title: Text
    keys: list[Text] = []
    """Locators that name the item in a record's citation of the survey (`§4.7`, `Table 9`)."""
    records: list[Text] = []
    """`kind:id` of the records that implement it, beyond those found by their locators; each
    must exist (and, on a finer row, cite the survey)."""
    code: list[Text] = []
    """Repository paths of the code (or record folders) that implement it."""
    tests: list[Text] = []
    """`path::test_name` of the tests that check it."""
    requires: list[Requirement] = []
    """What the survey asks beyond the records, code and tests: fields, facts, queries."""
    direction: Text | None = None
    """On a direction row, the direction record it is (linked, not a check: the record only
    states the direction)."""
    note: Text | None = None

    @property
    def checked_by(self) -> list[str]:
        return self.tests or ([TAKEAWAY_TEST] if self.part == "takeaway" else [])

    def record_refs(self) -> list[tuple[str, str]]:
        return [(ref.split(":", 1)[0], ref.split(":", 1)[1]) for ref in self.records]


@functools.cache
def survey_map() -> tuple[MapItem, ...]:
    data = yaml.safe_load(MAP_FILE.read_text(encoding="utf-8"))
    return tuple(TypeAdapter(list[MapItem]).validate_python(data))


def run_checks(checker: Checker, item: MapItem) -> list[Finding]:
    """Every check of a row, in the order the page lists them."""
    cite = item.part in CITING_PARTS
    return [
        *(checker.record(ref, cite) for ref in item.records),
        *(checker.path(path) for path in item.code),
        *(checker.test(test) for test in item.checked_by),
        *(checker.requirement(req) for req in item.requires),
    ]


def findings(catalog: Catalog, con: duckdb.DuckDBPyConnection) -> dict[str, list[Finding]]:
    """Each row's check results, by row id."""
    checker = Checker(catalog, con)
    return {item.id: run_checks(checker, item) for item in survey_map()}


def counts(statuses: dict[str, Status], parts: dict[str, str]) -> Counter[str]:
    by_id = {item.id: item for item in survey_map()}
    return Counter(s for rid, s in statuses.items() if by_id[rid].part in parts)


def map_summary(statuses: dict[str, Status]) -> dict[str, dict[str, int]]:
    """Rows per status: the survey's sections, tables and algorithms, then the finer rows."""
    return {
        name: {s: counts(statuses, parts)[s] for s in STATUSES}
        for name, parts in (("main", MAIN_PARTS), ("finer", FINE_PARTS))
    }


def summary(counted: Counter[str]) -> str:
    return ", ".join(f"{counted[s]} {s}" for s in STATUSES)


def locator_parts(locator: str) -> list[str]:
    """`"§4.3, §4.7, Table 9"` -> `["§4.3", "§4.7", "Table 9"]`."""
    return [part.strip() for part in re.split(r"[,;]", locator) if part.strip()]


def names(key: str, part: str) -> bool:
    """Does a locator part name the item `key`? A subsection names its section (§3.2.1 -> §3.2)."""
    return part == key or part.startswith(key + ".")


def cited_at(records: list[Record], keys: list[str]) -> list[Record]:
    """The records whose citation of the survey names one of `keys`."""
    found = []
    for record in records:
        where = getattr(record, "locators", {}).get(SURVEY)
        if where and any(names(k, p) for k in keys for p in locator_parts(where)):
            found.append(record)
    return found


def item_records(ix: Index, item: MapItem) -> list[tuple[str, str]]:
    """(kind, id) of the item's records: those it names, then those whose locators name it.

    A named record the catalog lacks (a knowledge base other than the shipped one) is shown
    by its id; tests/test_survey_map.py holds the shipped map to records that exist."""
    cited = cited_at(list(ix.catalog.all()), item.keys) if item.keys else []
    own = [("direction", item.direction)] if item.direction else []
    refs = [*own, *item.record_refs(), *((r.kind, r.id) for r in cited)]
    return list(dict.fromkeys(refs))


def item_row(ix: Index, src: str, item: MapItem, found: list[Finding]) -> list[str]:
    links = [ix.record_link(src, kind, rid) for kind, rid in item_records(ix, item)]
    failed = [f"{html_code(f.check)}: {esc(f.detail)}" for f in found if not f.passed]
    return [
        html(item.title),
        f"<strong>{status_of(found)}</strong>",
        ", ".join(links) or "none: no record stands for it or cites it here",
        "<br>".join(html_code(p) for p in item.code) or "none named: its records carry it",
        "<br>".join(html_code(t) for t in item.checked_by) or "no test: its checks are records",
        "<br>".join(failed) or f"all {len(found)} pass",
        cell(item.note) if item.note else "nothing to add",
    ]


def map_page(ix: Index, con: duckdb.DuckDBPyConnection) -> str:
    src = MAP_PAGE
    items = survey_map()
    found = findings(ix.catalog, con)
    statuses = {rid: status_of(f) for rid, f in found.items()}
    headers = ["Item", "Status", "Records", "Code", "Checked by", "Failing checks", "What is there"]
    blocks = []
    for part, heading in PARTS.items():
        rows = [item_row(ix, src, i, found[i.id]) for i in items if i.part == part]
        blocks += [f"## {heading}", table(headers, rows)]
    return document(
        "# The survey, item by item",
        "The survey this project is built from, *Performance Foundations of Parallel & "
        "Distributed Reasoning Language Models* (arXiv:2608.27046), held against this "
        "repository: every section, table and algorithm, then its takeaways, Table 10's models, "
        "the frameworks it names, Table 11's columns and its research directions, each with the "
        "records, rules and code that implement it and the test that checks it. A row's status "
        "is computed: its records must exist (on the finer rows, citing the survey), its code "
        "and tests must be there and what the survey asks beyond them (a scenario field, a rule "
        "fact, a query over the knowledge base) must hold; present when every check passes, "
        "missing when none does, partial otherwise. "
        "Records join an item when they cite the survey with a locator naming it.",
        f"Sections, tables and algorithms: {summary(counts(statuses, MAIN_PARTS))}.",
        f"Finer rows: {summary(counts(statuses, FINE_PARTS))}.",
        *blocks,
    )


def in_order(ix: Index) -> list[Direction]:
    """§7's directions in the survey's order, then the gaps named in other sections."""
    return sorted(ix.of("direction"), key=lambda d: (d.section != "§7", d.section, d.position))


def direction_page(ix: Index, d: Direction) -> str:
    src = page_of("direction", d.id)
    linked = [
        (heading, [ix.record_link(src, kind, rid) for rid in ids])
        for heading, kind, ids in (
            ("Techniques", "technique", d.techniques),
            ("Frameworks", "framework", d.frameworks),
            ("Guidelines", "rule", d.rules),
        )
    ]
    return document(
        f"# {esc(d.title)}",
        esc(d.statement),
        fields(
            [
                ("Id", html_code(d.id)),
                ("Stated in", f"{html(d.section)}, item {d.position}"),
                ("Coverage here", html(d.coverage)),
                ("What is covered", html(d.coverage_note)),
            ]
        ),
        *(f"## {heading}\n\n{bullets(links)}" for heading, links in linked if links),
        sources_section(ix, src, d.sources, d.locators),
    )


def directions_index(ix: Index) -> str:
    src = index_of("direction")
    rows = [
        [
            ix.record_link(src, "direction", d.id),
            html(d.section),
            cell(d.position),
            html(d.coverage),
            html(d.coverage_note),
        ]
        for d in in_order(ix)
    ]
    return document(
        "# Research directions",
        "The open directions the survey lists in §7 and the gaps it names elsewhere, each with "
        "what the knowledge base, the rules and the planner already cover.",
        table(
            ["Direction", "Section", "Item", "Coverage", "What is covered"], rows, searchable=False
        ),
    )


def survey_pages(ix: Index, con: duckdb.DuckDBPyConnection) -> Pages:
    return {
        MAP_PAGE: map_page(ix, con),
        index_of("direction"): directions_index(ix),
        **record_pages(ix, "direction", direction_page),
    }
