"""The survey map and the research-direction pages.

The map holds the survey (arXiv:2608.27046) against this repository, item by item: its sections,
tables, algorithms and takeaways, each with a status and what implements it. The status, code and
tests are authored in `survey_map.yaml`; the records beside each item are also read from the
citations, since every record that cites the survey with a locator naming the item joins it.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from pathlib import Path
from typing import Literal

import yaml
from pydantic import TypeAdapter, model_validator

from rlmguide.kb.schema import Direction, Record
from rlmguide.kb.schema.common import Strict, Text
from rlmguide.sitegen.mdtext import bullets, cell, document, esc, fields, html, html_code, table
from rlmguide.sitegen.pages import Index, Pages, index_of, page_of, record_pages, sources_section

SURVEY = "arxiv-2608.27046"
MAP_FILE = Path(__file__).with_name("survey_map.yaml")
MAP_PAGE = "survey/index.md"
TAKEAWAY_TEST = "tests/test_survey_map.py::test_every_takeaway_names_records_that_cite_the_survey"
"""The test that checks every takeaway: its records exist and cite the survey."""

Status = Literal["present", "partial", "missing"]
PARTS = {
    "section": "Sections",
    "table": "Tables",
    "algorithm": "Algorithms",
    "takeaway": "Takeaways (SURVEY.md §2: §2.6, §3, §3.8, §4.7, §6.2)",
}


class MapItem(Strict):
    """One item of the survey and how far this repository implements it."""

    id: Text
    part: Literal["section", "table", "algorithm", "takeaway"]
    title: Text
    keys: list[Text] = []
    """Locators that name the item in a record's citation of the survey (`§4.7`, `Table 9`)."""
    status: Status
    records: list[Text] = []
    """`kind:id` of the records that implement it, beyond those found by their locators."""
    code: list[Text] = []
    """Repository paths of the code (or record folders) that implement it."""
    tests: list[Text] = []
    """`path::test_name` of the tests that check it."""
    note: Text | None = None

    @model_validator(mode="after")
    def _said_and_checked(self) -> MapItem:
        if self.status == "missing" and not self.note:
            raise ValueError(f"{self.id}: a missing item says why (note)")
        if self.status == "present" and not self.checked_by:
            raise ValueError(f"{self.id}: a present item names the test that checks it")
        return self

    @property
    def checked_by(self) -> list[str]:
        return self.tests or ([TAKEAWAY_TEST] if self.part == "takeaway" else [])

    def record_refs(self) -> list[tuple[str, str]]:
        return [(ref.split(":", 1)[0], ref.split(":", 1)[1]) for ref in self.records]


@functools.cache
def survey_map() -> tuple[MapItem, ...]:
    data = yaml.safe_load(MAP_FILE.read_text(encoding="utf-8"))
    return tuple(TypeAdapter(list[MapItem]).validate_python(data))


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
    refs = [*item.record_refs(), *((r.kind, r.id) for r in cited)]
    return list(dict.fromkeys(refs))


def item_row(ix: Index, src: str, item: MapItem) -> list[str]:
    links = [ix.record_link(src, kind, rid) for kind, rid in item_records(ix, item)]
    return [
        esc(item.title),
        f"**{item.status}**",
        ", ".join(links),
        "<br>".join(html_code(p) for p in item.code),
        "<br>".join(html_code(t) for t in item.checked_by),
        cell(item.note) if item.note else "",
    ]


def in_order(ix: Index) -> list[Direction]:
    """§7's directions in the survey's order, then the gaps named in other sections."""
    return sorted(ix.of("direction"), key=lambda d: (d.section != "§7", d.section, d.position))


def map_page(ix: Index) -> str:
    src = MAP_PAGE
    items = survey_map()
    counted = Counter(i.status for i in items if i.part != "takeaway")
    summary = ", ".join(f"{counted[s]} {s}" for s in ("present", "partial", "missing"))
    headers = ["Item", "Status", "Records", "Code", "Checked by", "What is there and what is not"]
    blocks = []
    for part, heading in PARTS.items():
        rows = [item_row(ix, src, i) for i in items if i.part == part]
        blocks += [f"## {heading}", table(headers, rows)]
    rows = [
        [ix.record_link(src, "direction", d.id), html(d.section), html(d.coverage)]
        for d in in_order(ix)
    ]
    blocks += [
        "## Research directions (§7) and open gaps",
        "How far the knowledge base, the rules and the planner already touch each one.",
        table(["Direction", "Section", "Coverage"], rows, searchable=False),
    ]
    return document(
        "# The survey, item by item",
        "The survey this project is built from, *Performance Foundations of Parallel & "
        "Distributed Reasoning Language Models* (arXiv:2608.27046), held against this "
        "repository: every section, table and algorithm, and every takeaway, with the records, "
        "rules and code that implement it, the test that checks it, and what is still missing. "
        "Records join an item when they cite the survey with a locator naming it.",
        f"Sections, tables and algorithms: {summary}.",
        *blocks,
    )


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


def survey_pages(ix: Index) -> Pages:
    return {
        MAP_PAGE: map_page(ix),
        index_of("direction"): directions_index(ix),
        **record_pages(ix, "direction", direction_page),
    }
