"""User SQL: one read-only statement, parameters passed separately, canned queries from files."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from kb.paths import QUERIES_DIR

ALLOWED = {"SELECT", "EXPLAIN", "PRAGMA"}


class QueryError(Exception):
    """The statement was refused or failed; the message says why in one line."""


@dataclass(frozen=True)
class Rows:
    columns: list[str]
    types: list[str]
    rows: list[tuple[Any, ...]]


def run(con: duckdb.DuckDBPyConnection, sql: str, params: dict[str, Any] | None = None) -> Rows:
    """Run exactly one read-only statement on `con` (which must be opened read-only)."""
    try:
        statements = con.extract_statements(sql)
    except duckdb.Error as exc:
        raise QueryError(_first_line(exc)) from None
    if len(statements) != 1:
        raise QueryError(f"expected exactly one SQL statement, got {len(statements)}")
    kind = statements[0].type.name
    if kind not in ALLOWED:
        raise QueryError(f"{kind} statements are refused: the knowledge base is read-only")
    wanted, given = set(statements[0].named_parameters), set(params or {})
    if wanted != given:
        missing = ", ".join(f"${n}" for n in sorted(wanted - given)) or "none"
        extra = ", ".join(sorted(given - wanted)) or "none"
        raise QueryError(f"parameters do not match the query: missing {missing}; unused {extra}")
    try:
        cursor = con.execute(sql, params or None)
        rows = cursor.fetchall()
    except duckdb.Error as exc:
        raise QueryError(_first_line(exc)) from None
    description = cursor.description or []
    return Rows([d[0] for d in description], [str(d[1]) for d in description], rows)


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


@dataclass(frozen=True)
class CannedQuery:
    """A named `.sql` file whose header comment gives its title and description."""

    name: str
    title: str
    description: str
    sql: str


def canned_queries(folder: Path = QUERIES_DIR) -> dict[str, CannedQuery]:
    found: dict[str, CannedQuery] = {}
    for path in sorted(folder.glob("*.sql")):
        text = path.read_text(encoding="utf-8")
        header = [line[2:].strip() for line in text.splitlines() if line.startswith("--")]
        title = header[0].removeprefix("title:").strip() if header else path.stem
        description = " ".join(h for h in header[1:] if h)
        found[path.stem] = CannedQuery(path.stem, title, description, text)
    return found
