"""User SQL: one read-only statement, parameters passed separately, canned queries from files.

A statement runs under a time limit and keeps at most a given number of rows: it runs on a
worker thread while this one waits, so a deadline or a Ctrl-C can interrupt DuckDB (a thread
blocked inside DuckDB never sees the signal itself).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import duckdb
from rlmguide.kb.limits import DEFAULT_LIMITS, Limits
from rlmguide.kb.paths import QUERIES_DIR

ALLOWED = {"SELECT", "EXPLAIN", "PRAGMA"}


FETCH_CHUNK = 2_048
STOP_GRACE_SECONDS = 5.0
"""How long an interrupted statement may take to wind down before we stop waiting for it."""

T = TypeVar("T")


class QueryError(Exception):
    """The statement was refused or failed; the message says why in one line."""


class QueryTimeout(QueryError):
    """The statement ran past its time limit and was interrupted."""


@dataclass(frozen=True)
class Rows:
    columns: list[str]
    types: list[str]
    rows: list[tuple[Any, ...]]
    more: int = 0
    """Rows the statement returned beyond the row limit (counted, not kept)."""


def unique_names(names: list[str]) -> list[str]:
    """Column names made distinct (`a, a` -> `a, a_2`): JSON objects would silently keep one."""
    taken = set(names)
    seen: set[str] = set()
    out = []
    for name in names:
        candidate, n = name, 1
        while candidate in seen or (n > 1 and candidate in taken):
            n += 1
            candidate = f"{name}_{n}"
        seen.add(candidate)
        out.append(candidate)
    return out


def _statement_kind(statement: Any, sql: str) -> str:
    try:
        return statement.type.name
    except ValueError:  # a statement kind newer than this DuckDB's Python enum (UPDATE EXTENSIONS)
        words = sql.split()
        return words[0].upper() if words else "empty"


def run(
    con: duckdb.DuckDBPyConnection,
    sql: str,
    params: dict[str, Any] | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> Rows:
    """Run exactly one read-only statement on `con` (which must be opened read-only)."""
    try:
        statements = con.extract_statements(sql)
    except duckdb.Error as exc:
        raise QueryError(_first_line(exc)) from None
    if len(statements) != 1:
        raise QueryError(f"expected exactly one SQL statement, got {len(statements)}")
    kind = _statement_kind(statements[0], statements[0].query)
    if kind not in ALLOWED:
        raise QueryError(f"{kind} statements are refused: the knowledge base is read-only")
    wanted, given = set(statements[0].named_parameters), set(params or {})
    if wanted != given:
        missing = ", ".join(f"${n}" for n in sorted(wanted - given)) or "none"
        extra = ", ".join(sorted(given - wanted)) or "none"
        raise QueryError(f"parameters do not match the query: missing {missing}; unused {extra}")
    cursor = con.cursor()  # its own handle, so interrupting it touches only this statement

    def execute() -> Rows:
        cursor.execute(sql, params or None)
        kept: list[tuple[Any, ...]] = []
        more = 0
        # Results stream from DuckDB: rows past the limit are counted and dropped, so a huge
        # result costs time (bounded by the deadline), not memory.
        while chunk := cursor.fetchmany(FETCH_CHUNK):
            room = max(limits.max_rows - len(kept), 0)
            kept.extend(chunk[:room])
            more += len(chunk) - min(room, len(chunk))
        description = cursor.description or []
        names = unique_names([d[0] for d in description])
        return Rows(names, [str(d[1]) for d in description], kept, more)

    try:
        return bounded(execute, cursor.interrupt, limits.seconds)
    except QueryTimeout:
        raise
    except duckdb.Error as exc:
        raise QueryError(_first_line(exc)) from None
    finally:
        # a statement deaf to the interrupt still holds the cursor; the process is ending
        with contextlib.suppress(duckdb.Error):
            cursor.close()


def bounded(work: Callable[[], T], interrupt: Callable[[], None], seconds: float) -> T:
    """`work()` on a worker thread, interrupted at the deadline or on Ctrl-C (re-raised here)."""
    box: dict[str, Any] = {}
    done = threading.Event()

    def target() -> None:
        try:
            box["value"] = work()
        except BaseException as exc:  # handed to the waiting thread, which re-raises it
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=target, name="rlmguide-query", daemon=True).start()
    deadline = time.monotonic() + seconds
    try:
        # Short waits: the main thread must return to Python often enough to see SIGINT.
        while not done.wait(min(0.1, max(deadline - time.monotonic(), 0))):
            if time.monotonic() >= deadline:
                break
    except KeyboardInterrupt:
        interrupt()
        done.wait(STOP_GRACE_SECONDS)
        raise
    if not done.is_set():
        interrupt()
        done.wait(STOP_GRACE_SECONDS)
        raise QueryTimeout(
            f"the query ran past its time limit of {seconds:g} s and was stopped "
            "(raise it with --timeout)"
        )
    if "error" in box:
        raise box["error"]
    return box["value"]


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
