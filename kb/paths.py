"""Where the knowledge base lives on disk: record folders, canned queries and the cache.

Kept free of heavy imports: the warm path of `rlmguide sql` only hashes files and opens DuckDB.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

RECORDS_DIR = Path(__file__).parent / "records"
QUERIES_DIR = Path(__file__).parent / "queries"
CODE_FILES = (
    Path(__file__).parent / "store.py",
    *sorted((Path(__file__).parent / "schema").glob("*.py")),
)

PLURALS = {
    "source": "sources",
    "technique": "techniques",
    "algorithm": "algorithms",
    "component": "components",
    "framework": "frameworks",
    "accelerator": "accelerators",
    "model": "models",
    "result": "results",
    "rule": "rules",
    "deployment": "deployments",
    "constraint": "constraints",
    "mapping": "mappings",
    "direction": "directions",
}
"""Record kind -> its folder under a records root and its table in the database."""


RecordRoot = tuple[Path, str | None]
"""A folder of records: with a kind, every `*.yaml` in it is of that kind; without one, each
subfolder is named by the plural of a kind (`kb/records/frameworks/verl.yaml`)."""

DEFAULT_ROOTS: tuple[RecordRoot, ...] = ((RECORDS_DIR, None),)

KEEP_SIGNATURES = 64
"""Remembered stat signatures kept; each is a few bytes, but every edit adds one."""

RULES_ROOT: RecordRoot = (Path(__file__).parent.parent / "rules" / "records", "rule")
"""The rule records: a path only (kb imports nothing from rules), here because the CLI and
the site generator both read the records and neither may import the other."""


def record_roots() -> tuple[RecordRoot, ...]:
    """The shipped records, or `$RLMGUIDE_RECORDS_DIR` (folders per kind, rules included)."""
    if explicit := os.environ.get("RLMGUIDE_RECORDS_DIR"):
        return ((Path(explicit), None),)
    return (*DEFAULT_ROOTS, RULES_ROOT)


def record_files(roots: Iterable[RecordRoot]) -> Iterator[tuple[str, Path]]:
    """(display name, file) for every record file under the roots, in a stable order.

    The display name is `<plural>/<file>`, the form every message about a record uses.
    """
    for root, kind in roots:
        if kind is None:
            yield from ((f"{p.parent.name}/{p.name}", p) for p in sorted(root.glob("*/*.yaml")))
        else:
            yield from ((f"{PLURALS[kind]}/{p.name}", p) for p in sorted(root.glob("*.yaml")))


def unreadable(reason: Exception) -> bytes:
    """What an unreadable record file (FIFO, directory, symlink loop) contributes to a digest."""
    return f"\0unreadable: {reason}".encode()


def record_bytes(path: Path) -> bytes:
    """A record file's bytes for hashing; an unreadable one hashes as its reason, never hangs."""
    from rlmguide.kb.files import read_regular

    try:
        return read_regular(path)
    except (OSError, ValueError) as exc:
        return unreadable(exc)


def digest_of(files: Iterable[tuple[str, bytes]]) -> str:
    """The digest of record files (name and bytes) and of the code that builds the store."""
    digest = hashlib.blake2b(digest_size=12)
    for name, data in files:
        digest.update(name.encode() + b"\0" + data + b"\0")
    for path in CODE_FILES:
        digest.update(path.read_bytes())
    return digest.hexdigest()


def content_hash(roots: Iterable[RecordRoot]) -> str:
    """A digest of every record file (name and bytes) and of the code that builds the store."""
    return digest_of((name, record_bytes(path)) for name, path in record_files(roots))


def _stat_line(label: str, path: Path) -> bytes:
    try:
        info = path.stat()
    except OSError as exc:  # a symlink loop or a vanished file: its reason is its state
        return f"{label}\0{exc}\0".encode()
    return f"{label}\0{info.st_size}\0{info.st_mtime_ns}\0".encode()


def stat_signature(roots: Iterable[RecordRoot]) -> str:
    """A digest of every record file's name, size and modification time (no file is read)."""
    digest = hashlib.blake2b(digest_size=12)
    for name, path in record_files(roots):
        digest.update(_stat_line(name, path))
    for path in CODE_FILES:
        digest.update(_stat_line(str(path), path))
    return digest.hexdigest()


def fast_content_hash(roots: Iterable[RecordRoot]) -> str:
    """`content_hash`, remembered per stat signature so a warm start reads no record file.

    A file edited without changing its size and modification time would be missed, as in
    git's index; any ordinary edit changes the modification time. The remembered digest is
    used as a file name, so one that is not a bare digest is ignored and recomputed.
    """
    from rlmguide.kb.cache import (
        DIGEST,
        CacheError,
        CacheMissing,
        prune,
        read_name,
        warn,
        write_atomic,
    )

    roots = list(roots)
    memo = cache_dir() / "signatures" / stat_signature(roots)
    try:
        return read_name(memo, DIGEST)
    except CacheMissing:
        pass
    except CacheError as exc:
        warn(f"ignoring cache file {memo}: {exc}; rehashing the records")
    digest = content_hash(roots)
    with contextlib.suppress(OSError):  # a read-only cache only costs the re-hash
        write_atomic(memo, digest.encode("ascii"))
    prune(memo.parent, "*", KEEP_SIGNATURES, memo)
    return digest


def cache_dir() -> Path:
    """`$RLMGUIDE_CACHE_DIR`, else `$XDG_CACHE_HOME/rlmguide`, else `~/.cache/rlmguide`."""
    if explicit := os.environ.get("RLMGUIDE_CACHE_DIR"):
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "rlmguide"
