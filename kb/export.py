"""Every table and view of a built database as files: what `rlmguide db export` writes and what
the site publishes under data/, by one loop."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Collection, Iterable
from pathlib import Path

import duckdb

FORMATS = {
    "csv": "(FORMAT csv, HEADER true)",
    "json": "(FORMAT json, ARRAY true)",
    "parquet": "(FORMAT parquet)",
}


def relation_names(con: duckdb.DuckDBPyConnection, skip: Collection[str] = ()) -> list[str]:
    rows = con.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' "
        "ORDER BY table_name"
    ).fetchall()
    return [name for (name,) in rows if name not in skip]


def export(
    database: Path, folder: Path, formats: Iterable[str], skip: Collection[str] = ()
) -> list[Path]:
    """Write `folder/<relation>.<format>` for every table and view (but `skip`); the paths.

    Rows are in a fixed order (ORDER BY ALL: views have none of their own), so the same
    records give the same bytes.
    """
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    with tempfile.TemporaryDirectory(prefix="rlmguide-export-") as scratch:
        # COPY needs file access, which the locked query connection refuses, and DuckDB
        # allows one configuration per open file in a process: read a copy of the file.
        copy = Path(scratch) / "kb.duckdb"
        shutil.copyfile(database, copy)
        con = duckdb.connect(str(copy), read_only=True)
        try:
            for name in relation_names(con, skip):
                for fmt in formats:
                    target = folder / f"{name}.{fmt}"
                    quoted = str(target).replace("'", "''")
                    con.execute(f"COPY (FROM {name} ORDER BY ALL) TO '{quoted}' {FORMATS[fmt]}")
                    written.append(target)
        finally:
            con.close()
    return written
