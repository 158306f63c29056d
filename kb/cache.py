"""The cache folder's file primitives: sealed writes, verified reads, a build lock, warnings.

Nothing read from the cache is trusted: anyone who can write the folder (or a full disk, or a
crash mid-write) can leave anything there. Files are written whole under a unique temporary
name and renamed into place, carry a checksum that is verified on every read, and are read only
if they are regular files; a file that fails any check is reported in one line and rebuilt.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path

from rlmguide.kb.files import read_regular

CHECKSUM = re.compile(r"[0-9a-f]{64}")
DIGEST = re.compile(r"[0-9a-f]{24}")
"""A content digest as `kb.paths` writes it: anything else read from the cache is refused, so a
planted name such as `../../x` can never become a path."""

MAX_CACHE_FILE_BYTES = 256 * 1024 * 1024
LOCK_WAIT_SECONDS = 600.0
"""How long a run waits for another to finish building the cache (a cold build takes well
under a minute alone, a few on a machine shared by many builds) before giving up."""
LOCK_NOTICE_SECONDS = 2.0


class CacheError(Exception):
    """A cache file is unreadable or fails its checks; it must be rebuilt (and is reported)."""


class CacheMissing(CacheError):
    """The cache file does not exist yet: the ordinary cold start, built without a word."""


class CacheLocked(OSError):
    """Another process held the cache's build lock for longer than `LOCK_WAIT_SECONDS`."""


def warn(message: str) -> None:
    print(f"rlmguide: {message}", file=sys.stderr)


def checksum(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=32).hexdigest()


def file_checksum(path: Path) -> str:
    digest = hashlib.blake2b(digest_size=32)
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def write_atomic(path: Path, data: bytes) -> None:
    """`data` at `path`, all or nothing; OSError when the folder cannot be written."""
    import tempfile  # not on the warm path, which only reads

    path.parent.mkdir(parents=True, exist_ok=True)
    # mkstemp: a fresh name opened with O_EXCL, so no planted file or symlink is written through
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)


def write_sealed(path: Path, payload: bytes) -> None:
    """`payload` preceded by its checksum line (see `read_sealed`)."""
    write_atomic(path, checksum(payload).encode("ascii") + b"\n" + payload)


def read_sealed(path: Path) -> bytes:
    """The payload `write_sealed` wrote, or `CacheError` if it is missing or not intact."""
    try:
        data = read_regular(path, MAX_CACHE_FILE_BYTES)
    except (FileNotFoundError, NotADirectoryError):
        raise CacheMissing("missing") from None
    except (OSError, ValueError) as exc:
        raise CacheError(f"unreadable: {exc}") from None
    stored, _, payload = data.partition(b"\n")
    if stored.decode("ascii", "replace") != checksum(payload):
        raise CacheError("checksum mismatch (truncated or altered)")
    return payload


def read_name(path: Path, pattern: re.Pattern[str]) -> str:
    """A short name kept in a cache file, or `CacheError` unless it matches `pattern` whole."""
    try:
        text = read_regular(path, 1024).decode("ascii").strip()
    except (FileNotFoundError, NotADirectoryError):
        raise CacheMissing("missing") from None
    except (OSError, ValueError) as exc:
        raise CacheError(f"unreadable: {exc}") from None
    if not pattern.fullmatch(text):
        raise CacheError(f"holds {text[:40]!r}, not a valid name")
    return text


@contextlib.contextmanager
def build_lock(folder: Path) -> Iterator[None]:
    """Hold the folder's lock while building, so concurrent first runs build a file once.

    Without a lockable folder (read-only cache) it only yields: each run builds its own copy.
    """

    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder / ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    except OSError:
        yield
        return
    try:
        _acquire(fd, folder / ".lock")
        # who holds it, for those who wait (read back as text by `holder`)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {' '.join(sys.argv)[:200]}\n".encode(errors="replace"), 0)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _acquire(fd: int, path: Path) -> None:
    """Take the lock, waiting at most `LOCK_WAIT_SECONDS`: saying who holds it once the
    wait is noticeable, and failing with who held it when the wait ends."""
    import fcntl
    import time

    start = time.monotonic()
    told = False
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pass
        waited = time.monotonic() - start
        if waited > LOCK_WAIT_SECONDS:
            raise CacheLocked(
                f"the cache's build lock {path} was held for {waited:.0f} s by {holder(fd)}; "
                "if that process is gone, delete the lock file"
            )
        if waited > LOCK_NOTICE_SECONDS and not told:
            warn(f"waiting for {holder(fd)} to finish building the cache ({path})")
            told = True
        time.sleep(0.1)


def holder(fd: int) -> str:
    """Who holds the lock, as it wrote itself into the lock file (printable text only)."""
    try:
        text = os.pread(fd, 200, 0).decode("utf-8", "replace").strip()
    except OSError:
        text = ""
    shown = "".join(c if c.isprintable() else "?" for c in text)
    return f"process {shown}" if shown else "another process"


def prune(folder: Path, pattern: str, keep: int, current: Path | None = None) -> None:
    """Drop all but the newest `keep` files matching `pattern`, so the cache does not grow."""
    try:
        found = [p for p in folder.glob(pattern) if p != current]
        stale = sorted(found, key=lambda p: p.stat().st_mtime, reverse=True)[keep:]
        for path in stale:
            path.unlink(missing_ok=True)
    except OSError:
        pass  # pruning is housekeeping; a file removed by a concurrent run is fine
