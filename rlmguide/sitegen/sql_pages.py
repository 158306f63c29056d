"""The SQL pages: the reference of every table, view and column, and the canned queries run.

Column comments come from the database itself (`duckdb_columns()`); where a record field has
no docstring to give one, the reference says what the record schema does know about the
column: which field of which record it holds, its allowed values, its unit.
"""

from __future__ import annotations

import re
import types
import typing
from collections import defaultdict
from collections.abc import Mapping
from typing import Any, Literal

import duckdb
from pydantic import BaseModel

from rlmguide.kb.paths import PLURALS
from rlmguide.kb.query import QueryError, canned_queries, run
from rlmguide.kb.schema import KINDS, Claim, RuleExample
from rlmguide.sitegen.data_files import DATA_PAGE, SKIPPED, data_page, download_links
from rlmguide.sitegen.mdtext import (
    cell,
    code,
    document,
    esc,
    esc_code,
    fenced,
    html,
    html_code,
    html_code_spans,
    link,
    table,
)
from rlmguide.sitegen.pages import SQL_HOWTO, SQL_QUERIES, SQL_REFERENCE, Pages

QUERY_ROW_LIMIT = 100
"""Canned query outputs longer than this are cut on the page (the CLI shows all of them)."""

UNITS = {
    "_gib": "GiB",
    "_tbytes_per_s": "TB/s",
    "_gbytes_per_s": "GB/s",
    "_gbits_per_s": "Gbit/s",
    "_tflops": "TFLOP/s",
    "_watts": "W",
    "_tokens": "tokens",
    "_seconds": "s",
    "_gpus": "GPUs",
}
"""Column-name endings that state a unit (the schema puts units in field names)."""


def _unwrap(annotation: Any) -> list[Any]:
    """The types an annotation allows, through Annotated, unions, None and lists."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _unwrap(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType, list):
        return [t for a in typing.get_args(annotation) if a is not type(None) for t in _unwrap(a)]
    return [annotation]


def _choices(annotation: Any) -> list[str]:
    found: list[str] = []
    for kind in _unwrap(annotation):
        if typing.get_origin(kind) is Literal:
            found += [str(v) for v in typing.get_args(kind)]
    return found


def _field(cls: type[BaseModel], column: str) -> tuple[str, Any] | None:
    """(dotted field path, annotation) of the field a flattened column holds, as the store
    flattens nested models (`moe_experts` holds `moe.experts`)."""
    for name, info in cls.model_fields.items():
        if column == name:
            return name, info.annotation
        nested = [t for t in _unwrap(info.annotation) if isinstance(t, type)]
        for model in (t for t in nested if issubclass(t, BaseModel)):
            if column.startswith(name + "_"):
                inner = _field(model, column.removeprefix(name + "_"))
                if inner is not None:
                    return f"{name}.{inner[0]}", inner[1]
    return None


RECORD_TABLES: dict[str, tuple[str, type[BaseModel]]] = {
    **{table: (kind, KINDS[kind]) for kind, table in PLURALS.items() if kind in KINDS},
    "claims": ("framework claim", Claim),
    "rule_examples": ("rule example", RuleExample),
}
"""Tables whose rows are records (or parts of records), by the model that defines them."""


def schema_note(table_name: str, column: str) -> str:
    """HTML saying which record field a column holds, its allowed values and its unit; empty
    where the schema does not define the column (links, views, derived figures)."""
    kind, model = RECORD_TABLES.get(table_name, ("", None))
    # Link columns name the field they hold plus "_id" (claims.source_id holds `source`).
    found = model and (_field(model, column) or _field(model, column.removesuffix("_id")))
    if not found:
        return ""
    path, annotation = found
    parts = [f"the {html(kind)} record's {html_code(path)}"]
    if choices := _choices(annotation):
        parts.append("one of " + " | ".join(html_code(c) for c in choices))
    unit = next((u for end, u in UNITS.items() if column.endswith(end)), None)
    if unit:
        parts.append(f"in {html(unit)}")
    return "; ".join(parts)


def relations(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str, str | None]]:
    """(name, "table" | "view", comment) of the knowledge base's own relations."""
    return con.execute(
        """
        SELECT table_name, 'table', comment FROM duckdb_tables()
        WHERE database_name = current_database() AND schema_name = 'main' AND NOT internal
        UNION ALL
        SELECT view_name, 'view', comment FROM duckdb_views()
        WHERE database_name = current_database() AND schema_name = 'main' AND NOT internal
        ORDER BY 2, 1
        """
    ).fetchall()


def relation_columns(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple[str, str, str]]]:
    found: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
    rows = con.execute(
        """
        SELECT table_name, column_name, data_type, comment FROM duckdb_columns()
        WHERE database_name = current_database() AND schema_name = 'main'
        ORDER BY table_name, column_index
        """
    ).fetchall()
    for table_name, column, data_type, comment in rows:
        found[table_name].append((column, data_type, comment or ""))
    return found


def sql_reference(con: duckdb.DuckDBPyConnection, downloads: bool = False) -> str:
    """Every relation with its columns; `downloads` links each to its data files."""
    columns = relation_columns(con)
    found = relations(con)
    blocks = [
        "# SQL reference",
        "Every table and view of the knowledge base database, with its columns, their types "
        "and the comments stored in the database itself (`duckdb_tables()`, `duckdb_views()` "
        "and `duckdb_columns()` list the same). These names are a public interface. "
        f"{link(SQL_REFERENCE, SQL_HOWTO, 'How to query them')}.",
    ]
    for kind in ("table", "view"):
        blocks.append(f"## {kind.capitalize()}s")
        for name, relation_kind, comment in found:
            if relation_kind != kind:
                continue
            # A column without a comment or a schema note gets a blank cell: "unknown" would
            # suggest a NULL.
            rows = [
                (
                    html_code(c),
                    html_code(t),
                    html_code_spans(note) or schema_note(name, c) or "&nbsp;",
                )
                for c, t, note in columns.get(name, [])
            ]
            blocks += [
                f"### {name}",
                esc_code(comment) if comment else "",
                download_links(SQL_REFERENCE, name) if downloads and name not in SKIPPED else "",
                table(["Column", "Type", "Comment"], rows),
            ]
    return document(*blocks)


EXAMPLE_PARAM = re.compile(r"-p\s+(\w+)\s+(\S+)")


def example_params(query_text: str) -> dict[str, Any]:
    """Parameters a canned query's header gives as its example (`-p NAME VALUE`)."""
    header = "\n".join(line for line in query_text.splitlines() if line.startswith("--"))
    return dict(EXAMPLE_PARAM.findall(header))


def query_output(con: duckdb.DuckDBPyConnection, sql: str) -> str:
    params = example_params(sql)
    try:
        rows = run(con, sql, params)
    except QueryError as exc:
        return f"This query needs parameters to run: {esc(exc)}."
    shown = rows.rows[:QUERY_ROW_LIMIT]
    # Database NULLs read "unknown", like missing record fields.
    cells = [[cell(v) for v in row] for row in shown]
    note = ""
    if len(rows.rows) > len(shown):
        note = f"First {len(shown)} of {len(rows.rows)} rows."
    given = " ".join(f"-p {k} {v}" for k, v in params.items())
    intro = f"Output with {code(given)}:" if given else "Output:"
    return document(intro, table([html_code(c) for c in rows.columns], cells), note)


def sql_queries(con: duckdb.DuckDBPyConnection) -> str:
    blocks = [
        "# Canned queries",
        "The queries shipped in `kb/queries/`, run on the current records when the site was "
        "built. Run one yourself with `rlmguide query NAME`.",
    ]
    for query in canned_queries().values():
        blocks += [
            f"## {esc(query.title)}",
            esc(query.description) if query.description else "",
            code(f"rlmguide query {query.name}"),
            fenced("sql", query.sql),
            query_output(con, query.sql),
        ]
    return document(*blocks)


def sql_pages(con: duckdb.DuckDBPyConnection, data: Mapping[str, bytes] | None = None) -> Pages:
    """The reference and the canned queries, and the downloads page when `data` is given."""
    pages = {
        SQL_REFERENCE: sql_reference(con, downloads=bool(data)),
        SQL_QUERIES: sql_queries(con),
    }
    if data:
        pages[DATA_PAGE] = data_page(data)
    return pages
