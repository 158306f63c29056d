"""Find the database for the current records, building it on first use; open it for users.

Imports stay light on the warm path (hash the record files, check and open the cached file):
pydantic, YAML and the builder load only when the cache must be rebuilt.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb
from rlmguide.kb.cache import (
    CHECKSUM,
    CacheError,
    CacheLocked,
    CacheMissing,
    build_lock,
    file_checksum,
    prune,
    read_name,
    warn,
)
from rlmguide.kb.derived import Derivation
from rlmguide.kb.limits import SQL_MEMORY_LIMIT, SQL_TEMP_LIMIT, SQL_THREADS
from rlmguide.kb.paths import RecordRoot, cache_dir, fast_content_hash

KEEP_OLD_FILES = 3


class InvalidRecords(Exception):
    """The records do not validate, so no database can be built from them."""

    def __init__(self, problems: Sequence[object]) -> None:
        self.problems = list(problems)
        super().__init__(f"{len(self.problems)} problem(s) in the knowledge base records")


class CacheUnwritable(Exception):
    """The cache folder cannot hold a new database (read-only, full, not a folder)."""


def checksum_file(database: Path) -> Path:
    """The file holding the database's checksum, written before the database is moved in."""
    return database.with_name(database.name + ".sum")


def _damage(database: Path) -> str | None:
    """Why the cached database cannot be used as it is, or None if it is intact."""
    try:
        expected = read_name(checksum_file(database), CHECKSUM)
    except CacheMissing:
        return "missing" if not os.path.lexists(database) else "has no checksum"
    except CacheError as exc:
        return f"has a bad checksum file ({exc})"
    try:
        if not database.is_file():
            return "is not a regular file" if os.path.lexists(database) else "missing"
        if file_checksum(database) != expected:
            return "does not match its checksum (truncated or altered)"
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    return None


def _catalog(roots: Sequence[RecordRoot]) -> Any:
    from rlmguide.kb.load import load_catalog
    from rlmguide.kb.validate import validate

    catalog = load_catalog(roots)
    errors = [p for p in validate(catalog) if getattr(p, "severity", "error") == "error"]
    if errors:
        raise InvalidRecords(errors)
    return catalog


def _file_digest(content: str, derived: Derivation | None) -> str:
    """The file's name: the records' digest, and the derived tables' code when there are any
    (an edit of the code that computes them must not reuse a file holding their old rows)."""
    if derived is None:
        return content
    both = hashlib.blake2b(f"{content}\0{derived.code_digest()}".encode(), digest_size=12)
    return both.hexdigest()


def ensure_database(roots: Sequence[RecordRoot], derived: Derivation | None = None) -> Path:
    """The path of an intact database matching the records under `roots`, built if needed,
    with the tables `derived` computes beside the records' own.

    A cached file is used only if it matches the checksum written when it was built; any other
    (truncated, altered, planted) is rebuilt, with one line on standard error. Builds hold the
    cache folder's lock, so concurrent first runs build once and the others wait for it.
    """
    digest = fast_content_hash(roots)
    folder = cache_dir()
    target = folder / f"kb-{_file_digest(digest, derived)}.duckdb"
    if _damage(target) is None:
        return target
    try:
        with build_lock(folder):
            damage = _damage(target)  # another run may have built it while this one waited
            if damage is None:
                return target
            if damage != "missing":
                warn(f"cache file {target} {damage}; rebuilding it")
            catalog = _catalog(roots)
            # Named by the bytes actually parsed: a record edited since `digest` was taken gives
            # its own file instead of new content under the old name.
            target = folder / f"kb-{_file_digest(catalog.digest, derived)}.duckdb"
            if catalog.digest != digest and _damage(target) is None:
                return target
            from rlmguide.kb.store import build_file

            tables = derived.tables(roots) if derived is not None else []
            try:
                build_file(catalog, target, catalog.digest, checksum_file(target), tables)
            except (OSError, duckdb.IOException) as exc:
                reason = getattr(exc, "strerror", None) or str(exc).splitlines()[0]
                raise CacheUnwritable(f"cannot write the cache folder {folder}: {reason}") from None
    except CacheLocked as exc:  # another build held the lock too long: say who
        raise CacheUnwritable(str(exc)) from None
    prune(folder, "kb-*.duckdb", KEEP_OLD_FILES, target)
    for orphan in folder.glob("kb-*.duckdb.sum"):
        if not orphan.with_suffix("").exists():
            orphan.unlink(missing_ok=True)
    return target


def open_knowledge_base(
    roots: Sequence[RecordRoot], derived: Derivation | None = None
) -> duckdb.DuckDBPyConnection:
    """A locked read-only connection to the knowledge base (see `connect_read_only`).

    When the cache folder cannot be written, the database is built in memory for this run,
    with a warning, instead of failing: a read-only home must not stop a read-only tool.
    """
    try:
        return connect_read_only(ensure_database(roots, derived))
    except CacheUnwritable as exc:
        warn(f"{exc}; using an in-memory database for this run (set RLMGUIDE_CACHE_DIR)")
    from rlmguide.kb.store import populate

    catalog = _catalog(roots)
    unlocked = {k: v for k, v in LOCKED_CONFIG.items() if k != "lock_configuration"}
    con = duckdb.connect(":memory:", config=unlocked)
    populate(con, catalog, catalog.digest, derived.tables(roots) if derived is not None else [])
    con.execute("SET lock_configuration = true")
    return con


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
