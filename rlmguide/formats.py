"""Rendering rows for the terminal and for other programs: table, JSON, CSV and Markdown."""

from __future__ import annotations

import base64
import csv
import datetime as dt
import decimal
import io
import json
import math
import re
import uuid
from collections.abc import Sequence
from typing import Any

from rlmguide.kb.closest import closest

ROW_FORMATS = ("table", "json", "csv", "markdown")


def plain(value: Any) -> Any:
    """A value strict JSON can hold, nothing lost that JSON can say.

    NaN and the infinities have no JSON spelling, so they become null; dates, times and UUIDs
    become their ISO text, intervals an ISO 8601 duration, BLOBs base64, decimals numbers,
    and a MAP's keys text (JSON object keys are strings).
    """
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dt.date | dt.datetime | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return iso_duration(value)
    if isinstance(value, decimal.Decimal):
        return plain(float(value))
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k if isinstance(k, str) else cell(k): plain(v) for k, v in value.items()}
    return value


def suggestion(name: str, known: list[str]) -> str:
    """`; did you mean a, b?` for the known names closest to `name`, else ""."""
    close = closest(name, known, cutoff=0.5)
    return f"; did you mean {', '.join(close)}?" if close else ""


def iso_duration(value: dt.timedelta) -> str:
    """`P3DT7200.5S`: days and seconds as Python keeps them (DuckDB months arrive as days)."""
    sign = "-" if value < dt.timedelta(0) else ""
    value = abs(value)
    seconds = value.seconds + value.microseconds / 1e6
    return f"{sign}P{value.days}DT{seconds:g}S"


def non_finite(document: Any, path: str = "") -> str | None:
    """The path of the first NaN or infinite number in a JSON-like document, or None."""
    if isinstance(document, float) and not math.isfinite(document):
        return path or "(top)"
    items: Any = ()
    if isinstance(document, dict):
        items = ((f"{path}.{k}" if path else str(k), v) for k, v in document.items())
    elif isinstance(document, list | tuple):
        items = ((f"{path}[{i}]", v) for i, v in enumerate(document))
    for where, value in items:
        if found := non_finite(value, where):
            return found
    return None


def dumps(document: Any) -> str:
    """Strict JSON text: any value `plain` does not make JSON-safe fails here, not in a reader."""
    return json.dumps(plain(document), indent=2, ensure_ascii=False, allow_nan=False)


def cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, list | tuple):
        return ", ".join(cell(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(plain(value), ensure_ascii=False)
    return str(plain(value))


CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""Characters a terminal acts on instead of showing: C0 and C1 controls (ESC starts colour,
cursor and title sequences; BEL rings), and the bidirectional overrides that reorder what is
shown. Tab and newline stay."""


def visible(text: str) -> str:
    """`text` for a terminal: each control character written as its escape (`\\x1b`), so a
    value shows what it holds and cannot drive the terminal. Data formats (JSON, CSV) keep
    values as they are."""
    return CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


def to_json(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    return dumps([dict(zip(columns, row, strict=True)) for row in rows])


def to_csv(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows([cell(v) for v in row] for row in rows)
    return out.getvalue()


def to_markdown(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    def esc(text: str) -> str:
        return visible(text).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(esc(c) for c in columns) + " |"]
    lines.append("|" + "|".join(" --- " for _ in columns) + "|")
    lines += ["| " + " | ".join(esc(cell(v)) for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def print_rows(
    columns: Sequence[str], rows: Sequence[Sequence[Any]], fmt: str, title: str | None = None
) -> None:
    if fmt == "json":
        print(to_json(columns, rows))
    elif fmt == "csv":
        print(to_csv(columns, rows), end="")
    elif fmt == "markdown":
        if title:
            print(f"**{title}**\n")
        print(to_markdown(columns, rows), end="\n" if title else "")
    else:
        from rich.console import Console
        from rich.table import Table
        from rich.text import Text

        # Every piece of record or query text goes in as a Text, never as a markup string:
        # a note saying "LoRA via [lora]" must print as written, and "[/]" must not crash.
        table = Table(
            title=Text(visible(title)) if title else None, show_lines=False, header_style="bold"
        )
        for name in columns:
            table.add_column(Text(visible(name)), overflow="fold")
        for row in rows:
            table.add_row(
                *(Text(visible(cell(v))) if v is not None else Text("null", "dim") for v in row)
            )
        console = Console()
        if not console.is_terminal:
            # piped output has no width to fit; rich's 80-column default would fold every cell
            console = Console(width=160)
        console.print(table)
