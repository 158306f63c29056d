"""Rendering rows for the terminal and for other programs: table, JSON, CSV and Markdown."""

from __future__ import annotations

import csv
import datetime as dt
import decimal
import io
import json
from collections.abc import Sequence
from typing import Any

ROW_FORMATS = ("table", "json", "csv", "markdown")


def plain(value: Any) -> Any:
    """A JSON-ready value: dates as ISO text, decimals as floats, JSON columns parsed."""
    if isinstance(value, dt.date | dt.datetime):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, list | tuple):
        return ", ".join(cell(v) for v in value)
    return str(plain(value))


def to_json(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    objects = [{c: plain(v) for c, v in zip(columns, row, strict=True)} for row in rows]
    return json.dumps(objects, indent=2, ensure_ascii=False)


def to_csv(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows([cell(v) for v in row] for row in rows)
    return out.getvalue()


def to_markdown(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    def esc(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

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

        table = Table(title=title, show_lines=False, header_style="bold")
        for name in columns:
            table.add_column(name, overflow="fold")
        for row in rows:
            table.add_row(*(cell(v) if v is not None else "[dim]null[/dim]" for v in row))
        console = Console()
        if not console.is_terminal:
            # piped output has no width to fit; rich's 80-column default would fold every cell
            console = Console(width=160)
        console.print(table)
