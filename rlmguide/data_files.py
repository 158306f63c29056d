"""The knowledge base as downloads: every table and view as CSV, JSON and Parquet.

The site publishes the same rows `rlmguide sql` queries, so a reader can load them into a
notebook or a spreadsheet without installing anything. Rows are written in a fixed order so
the same records give the same bytes. `kb_meta` (when the database file was built) is left
out for the same reason.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

import duckdb

from rlmguide.mdtext import bullets, code, document, link

DATA_DIR = "data"
DATA_PAGE = "sql/data.md"
FORMATS = {
    "csv": "(FORMAT csv, HEADER true)",
    "json": "(FORMAT json, ARRAY true)",
    "parquet": "(FORMAT parquet)",
}
SKIPPED = {"kb_meta"}


def relation_names(con: duckdb.DuckDBPyConnection) -> list[str]:
    rows = con.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' "
        "ORDER BY table_name"
    ).fetchall()
    return [name for (name,) in rows if name not in SKIPPED]


def data_path(name: str, fmt: str) -> str:
    return f"{DATA_DIR}/{name}.{fmt}"


def data_files(database: Path) -> dict[str, bytes]:
    """{site path: bytes} of every table and view in every format."""
    files: dict[str, bytes] = {}
    with tempfile.TemporaryDirectory(prefix="rlmguide-data-") as folder:
        # COPY needs file access, which the locked query connection refuses, and DuckDB
        # allows one configuration per open file in a process: read a copy of the file.
        copy = Path(folder) / "kb.duckdb"
        shutil.copyfile(database, copy)
        con = duckdb.connect(str(copy), read_only=True)
        try:
            for name in relation_names(con):
                for fmt, options in FORMATS.items():
                    target = Path(folder) / f"{name}.{fmt}"
                    quoted = str(target).replace("'", "''")
                    # ORDER BY ALL: views have no inherent order, and bytes must repeat.
                    con.execute(f"COPY (FROM {name} ORDER BY ALL) TO '{quoted}' {options}")
                    files[data_path(name, fmt)] = target.read_bytes()
        finally:
            con.close()
    return files


def download_links(src: str, name: str) -> str:
    """Markdown links from page `src` to one relation's files."""
    return "Download: " + " · ".join(
        link(src, data_path(name, fmt), fmt.upper() if fmt != "parquet" else "Parquet")
        for fmt in FORMATS
    )


def data_page(files: Mapping[str, bytes]) -> str:
    """The page listing every download with its size."""
    names = sorted({path.split("/")[1].rsplit(".", 1)[0] for path in files})
    items = []
    for name in names:
        sizes = ", ".join(
            f"{fmt} {len(files[data_path(name, fmt)]) / 1024:,.0f} KiB" for fmt in FORMATS
        )
        items.append(f"{code(name)}: {download_links(DATA_PAGE, name)} ({sizes})")
    return document(
        "# Download the data",
        "Every table and view of the knowledge base, as built from the same records as this "
        "site: CSV with a header row, JSON as one array of objects, and Parquet with the "
        "column types. The [SQL reference](reference.md) describes the columns. For the DuckDB "
        "file itself, run `rlmguide db path`.",
        bullets(items),
    )
