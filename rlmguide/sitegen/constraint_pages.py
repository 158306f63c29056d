"""Pages of framework constraints: what each framework's code refuses, one page per record and
an index grouped by framework. The planner reads the same records (rules.frameworks)."""

from __future__ import annotations

from rlmguide.kb.schema import Constraint
from rlmguide.sitegen.mdtext import anchor, cell, document, esc, fields, html_code, table
from rlmguide.sitegen.pages import (
    Index,
    Pages,
    index_of,
    page_of,
    record_pages,
    sources_section,
    versions_of,
)


def framework_of(ix: Index, src: str, c: Constraint) -> str:
    if c.framework is None:
        return "every framework that runs on the component"
    return ix.record_link(src, "framework", c.framework)


def code_link(c: Constraint) -> str:
    where = f"{c.file} {c.lines}" if c.lines else c.file
    return anchor(c.url, f"{html_code(where)} at {html_code(c.commit[:12])}", c.url)


def constraint_page(ix: Index, c: Constraint) -> str:
    src = page_of("constraint", c.id)
    binds = ix.record_link(src, "component", c.component) if c.component else "every backend"
    return document(
        f"# {esc(c.title)}",
        esc(c.statement),
        fields(
            [
                ("Id", html_code(c.id)),
                ("Framework", framework_of(ix, src, c)),
                ("Binds", binds),
                ("Applies when", html_code(c.applies)),
                ("A plan must satisfy", html_code(c.condition)),
                ("Code", code_link(c)),
                ("Versions", versions_of(ix, src, c)),
                ("Read on", cell(c.checked)),
                ("Commit date", cell(c.as_of)),
            ]
        ),
        "The condition is written over the facts of the guideline engine (see the facts "
        "page); a plan that fails it is one this framework cannot run.",
        sources_section(ix, src, c.cited_sources()),
    )


def constraints_table(ix: Index, src: str, records: list[Constraint]) -> str:
    rows = [
        [
            ix.record_link(src, "constraint", c.id),
            ix.record_link(src, "component", c.component) if c.component else "all",
            html_code(c.condition),
            code_link(c),
            versions_of(ix, src, c),
        ]
        for c in records
    ]
    return table(["Constraint", "Binds", "A plan must satisfy", "Code", "Versions"], rows)


def constraints_index(ix: Index) -> str:
    src = index_of("constraint")
    records: list[Constraint] = list(ix.of("constraint"))
    sections = []
    for framework in sorted({c.framework for c in records if c.framework}):
        mine = [c for c in records if c.framework == framework]
        sections += [
            f"## {ix.record_link(src, 'framework', framework)}",
            constraints_table(ix, src, mine),
        ]
    shared = [c for c in records if c.framework is None]
    if shared:
        sections += ["## Components (every framework on them)", constraints_table(ix, src, shared)]
    return document(
        "# Framework constraints",
        "What each framework's code refuses, read at a pinned commit with the lines cited. "
        "The planner offers a plan only where some framework's claims and constraints allow "
        "it, and names those frameworks. A constraint scoped to versions (the mappings whose "
        "code it was read at or checked against) binds launches of those versions only; the "
        "planner judges a framework at its newest mapping.",
        *(sections or ["No constraint is recorded yet."]),
    )


def constraint_pages(ix: Index) -> Pages:
    return {
        index_of("constraint"): constraints_index(ix),
        **record_pages(ix, "constraint", constraint_page),
    }
