"""The knowledge base as downloads: the DuckDB file, and every table and view as CSV, JSON and
Parquet.

The site publishes the same rows `rlmguide sql` queries, so a reader can load them into a
notebook or a spreadsheet without installing anything. Rows are written in a fixed order so
the same records give the same bytes. `kb_meta` (when the database file was built) is left
out of the per-table files for the same reason; the published DuckDB file carries it, dated
by the newest record date rather than the build day.

The CSV, JSON and Parquet files are byte-identical from the same records, so their SHA-256
checksums are published (`data/SHA256SUMS`, `sha256sum -c` reads it). The DuckDB file is not:
DuckDB writes a random database identifier into the header of every new file (and stale
buffer bytes, duckdb/duckdb#23382), so a cold build from the same records gives other bytes;
its copy is kept in the cache, so rebuilds on one machine publish the same file, but it has no
published checksum.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import posixpath
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

import duckdb

from rlmguide.kb.cache import file_checksum, prune, write_atomic
from rlmguide.kb.export import FORMATS, export
from rlmguide.kb.paths import cache_dir
from rlmguide.sitegen.mdtext import bullets, code, document, link

DATA_DIR = "data"
DATA_PAGE = "sql/data.md"
DATABASE_FILE = f"{DATA_DIR}/rlmguide.duckdb"
CHECKSUMS_FILE = f"{DATA_DIR}/SHA256SUMS"
SKIPPED = {"kb_meta"}
KEEP_OLD_COPIES = 3


def data_path(name: str, fmt: str) -> str:
    return f"{DATA_DIR}/{name}.{fmt}"


def data_files(database: Path, dated: dt.date) -> dict[str, bytes]:
    """{site path: bytes} of every table and view in every format, and the database file."""
    files: dict[str, bytes] = {}
    with tempfile.TemporaryDirectory(prefix="rlmguide-data-") as folder:
        for path in export(database, Path(folder), FORMATS, SKIPPED):
            files[f"{DATA_DIR}/{path.name}"] = path.read_bytes()
    files[CHECKSUMS_FILE] = checksums(files)
    files[DATABASE_FILE] = published_database(database, dated).read_bytes()
    return files


def checksums(files: Mapping[str, bytes]) -> bytes:
    """`sha256sum` lines for the files of the data folder, by name."""
    lines = [
        f"{hashlib.sha256(data).hexdigest()}  {posixpath.basename(path)}\n"
        for path, data in sorted(files.items())
    ]
    return "".join(lines).encode("ascii")


def published_database(database: Path, dated: dt.date) -> Path:
    """The site's copy of `database`, its `kb_meta.built_at` set to `dated` (midnight UTC).

    DuckDB writes random identifiers (and, for compressed strings, stale buffer bytes:
    duckdb/duckdb#23382) into every new file, so two files built from the same rows never
    share their bytes. The copy is therefore made once per database and date and kept in the
    cache beside it: every rebuild of the site publishes the same bytes.
    """
    folder = cache_dir() / "published"
    target = folder / f"{database.stem}-{dated.isoformat()}.duckdb"
    checksum = target.with_name(target.name + ".sum")
    try:
        if target.is_file() and file_checksum(target) == checksum.read_text().strip():
            return target
    except OSError:
        pass  # missing or unreadable: make it again
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder, prefix=".copy-") as scratch:
        temp = Path(scratch) / "kb.duckdb"
        shutil.copyfile(database, temp)
        con = duckdb.connect(str(temp))
        try:
            con.execute("UPDATE kb_meta SET built_at = ?::TIMESTAMP", [dated])
            con.execute("CHECKPOINT")
        finally:
            con.close()
        write_atomic(checksum, file_checksum(temp).encode("ascii"))
        temp.replace(target)
    prune(folder, "*.duckdb", KEEP_OLD_COPIES, target)
    return target


def download_links(src: str, name: str) -> str:
    """Markdown links from page `src` to one relation's files."""
    return "Download: " + " · ".join(
        link(src, data_path(name, fmt), fmt.upper() if fmt != "parquet" else "Parquet")
        for fmt in FORMATS
    )


def data_page(files: Mapping[str, bytes]) -> str:
    """The page listing every download with its size."""
    names = sorted(
        {
            path.split("/")[1].rsplit(".", 1)[0]
            for path in files
            if path not in (DATABASE_FILE, CHECKSUMS_FILE)
        }
    )
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
        "column types. The [SQL reference](reference.md) describes the columns.",
        "The whole database as one DuckDB file: "
        f"{link(DATA_PAGE, DATABASE_FILE, 'rlmguide.duckdb')} "
        f"({len(files[DATABASE_FILE]) / 1024:,.0f} KiB); open it with `duckdb rlmguide.duckdb` "
        "or `duckdb.connect('rlmguide.duckdb', read_only=True)` in Python. Its `kb_meta` table "
        "names the record content it was built from. With rlmguide installed, "
        "`rlmguide db path` prints your local copy.",
        f"Checksums: {link(DATA_PAGE, CHECKSUMS_FILE, 'SHA256SUMS')} lists the SHA-256 of every "
        "CSV, JSON and Parquet file (`sha256sum -c SHA256SUMS` in the downloads' folder); the "
        "same records give the same bytes. The DuckDB file has none: DuckDB writes a random "
        "database identifier into every new file, so two builds from the same records differ "
        "in a few header bytes.",
        bullets(items),
    )
