"""Where the knowledge base lives on disk: record folders, canned queries and the cache.

Kept free of heavy imports: the warm path of `rlmguide sql` only hashes files and opens DuckDB.
"""

from __future__ import annotations

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
}
"""Record kind -> its folder under a records root and its table in the database."""


RecordRoot = tuple[Path, str | None]
"""A folder of records: with a kind, every `*.yaml` in it is of that kind; without one, each
subfolder is named by the plural of a kind (`kb/records/frameworks/verl.yaml`)."""

DEFAULT_ROOTS: tuple[RecordRoot, ...] = ((RECORDS_DIR, None),)


def record_files(roots: Iterable[RecordRoot]) -> Iterator[tuple[str, Path]]:
    """(display name, file) for every record file under the roots, in a stable order.

    The display name is `<plural>/<file>`, the form every message about a record uses.
    """
    for root, kind in roots:
        if kind is None:
            yield from ((f"{p.parent.name}/{p.name}", p) for p in sorted(root.glob("*/*.yaml")))
        else:
            yield from ((f"{PLURALS[kind]}/{p.name}", p) for p in sorted(root.glob("*.yaml")))


def content_hash(roots: Iterable[RecordRoot]) -> str:
    """A digest of every record file (name and bytes) and of the code that builds the store."""
    digest = hashlib.blake2b(digest_size=12)
    for name, path in record_files(roots):
        digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    for path in CODE_FILES:
        digest.update(path.read_bytes())
    return digest.hexdigest()


def stat_signature(roots: Iterable[RecordRoot]) -> str:
    """A digest of every record file's name, size and modification time (no file is read)."""
    digest = hashlib.blake2b(digest_size=12)
    for name, path in record_files(roots):
        info = path.stat()
        digest.update(f"{name}\0{info.st_size}\0{info.st_mtime_ns}\0".encode())
    for path in CODE_FILES:
        info = path.stat()
        digest.update(f"{path}\0{info.st_size}\0{info.st_mtime_ns}\0".encode())
    return digest.hexdigest()


def fast_content_hash(roots: Iterable[RecordRoot]) -> str:
    """`content_hash`, remembered per stat signature so a warm start reads no record file.

    A file edited without changing its size and modification time would be missed, as in
    git's index; any ordinary edit changes the modification time.
    """
    roots = list(roots)
    signature = stat_signature(roots)
    memo = cache_dir() / "signatures" / signature
    try:
        return memo.read_text(encoding="ascii").strip()
    except OSError:
        pass
    digest = content_hash(roots)
    try:
        memo.parent.mkdir(parents=True, exist_ok=True)
        temp = memo.with_suffix(f".{os.getpid()}.tmp")
        temp.write_text(digest, encoding="ascii")
        os.replace(temp, memo)
    except OSError:
        pass  # a read-only cache only costs the re-hash
    return digest


def cache_dir() -> Path:
    """`$RLMGUIDE_CACHE_DIR`, else `$XDG_CACHE_HOME/rlmguide`, else `~/.cache/rlmguide`."""
    if explicit := os.environ.get("RLMGUIDE_CACHE_DIR"):
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "rlmguide"
