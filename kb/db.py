"""Find the database for the current records, building it on first use; open it for users.

Imports stay light on the warm path (hash the record files, open the cached file): pydantic,
YAML and the builder load only when the cache must be rebuilt.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import duckdb

from kb.paths import RecordRoot, cache_dir, fast_content_hash

KEEP_OLD_FILES = 3


class InvalidRecords(Exception):
    """The records do not validate, so no database can be built from them."""

    def __init__(self, problems: Sequence[object]) -> None:
        self.problems = list(problems)
        super().__init__(f"{len(self.problems)} problem(s) in the knowledge base records")


def ensure_database(roots: Sequence[RecordRoot]) -> Path:
    """The path of a database matching the records under `roots`, built if missing."""
    digest = fast_content_hash(roots)
    target = cache_dir() / f"kb-{digest}.duckdb"
    if target.exists():
        return target
    from kb.load import load_catalog
    from kb.store import build_file
    from kb.validate import validate

    catalog = load_catalog(roots)
    errors = [p for p in validate(catalog) if getattr(p, "severity", "error") == "error"]
    if errors:
        raise InvalidRecords(errors)
    build_file(catalog, target, digest)
    _prune(target)
    return target


def _prune(current: Path) -> None:
    """Drop all but the newest few stale cache files so the cache does not grow forever."""
    stale = sorted(
        (p for p in current.parent.glob("kb-*.duckdb") if p != current),
        key=lambda p: p.stat().st_mtime,
        reverse=True,
    )
    for path in stale[KEEP_OLD_FILES:]:
        path.unlink(missing_ok=True)


SQL_MEMORY_LIMIT = "1GB"
SQL_THREADS = 2
SQL_TEMP_LIMIT = "1GB"
"""User SQL runs on shared machines: a runaway join may use this much memory, this many cores
and this much spill space, then fails with DuckDB's out-of-memory error instead of the host."""

LOCKED_CONFIG = {
    "enable_external_access": False,
    "autoload_known_extensions": False,
    "autoinstall_known_extensions": False,
    "memory_limit": SQL_MEMORY_LIMIT,
    "threads": SQL_THREADS,
    "max_temp_directory_size": SQL_TEMP_LIMIT,
    "lock_configuration": True,
}


def connect_read_only(path: Path) -> duckdb.DuckDBPyConnection:
    """A connection that can read the KB and nothing else: no writes, files, extensions or SET."""
    return duckdb.connect(str(path), read_only=True, config=LOCKED_CONFIG)
