"""Reading a record or scenario file defensively: a regular file, of bounded size, in UTF-8;
and writing an output file the user named without hanging on it.

A `*.yaml` name does not make a file: a directory, a FIFO (whose open blocks until a writer
comes) or a device named so must be refused with a message, not crash or hang the command.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from pathlib import Path

MAX_FILE_BYTES = 4 * 1024 * 1024
"""The largest record or scenario file read (the largest shipped record is under 100 kB)."""


class UnreadableFile(ValueError):
    """The file exists but is not something to parse; the message says why."""


def read_regular(path: Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of a regular file, or `UnreadableFile`/`OSError` saying why not."""
    # O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnreadableFile("not a regular file (a directory, FIFO or device)")
        if info.st_size > limit:
            raise UnreadableFile(f"{info.st_size:,} bytes; a file may have {limit:,} at most")
        chunks = []
        size = 0
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:  # it grew while being read
                raise UnreadableFile(f"more than the {limit:,} bytes a file may have")
        return b"".join(chunks)
    finally:
        os.close(fd)


def decode(data: bytes) -> str:
    """UTF-8 text, or `UnreadableFile` naming the line of the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise UnreadableFile(
            f"line {line}: not UTF-8 text (byte 0x{data[exc.start]:02x})"
        ) from None


def read_text_file(path: Path) -> str:
    return decode(read_regular(path))


class UnwritableFile(ValueError):
    """An output cannot be written; the message names the file and why, in one line."""


def write_output(path: Path, data: bytes, executable: bool = False) -> None:
    """`data` into the file the user named (`--out`, `--plot`), or `UnwritableFile`.

    The file is opened without blocking: a FIFO nobody reads would hold the open forever, so
    one without a reader is refused; with a reader it is written as a pipe is. A device takes
    the bytes (`/dev/null`) or fails in one line (`/dev/full`). Only the named file changes.
    """
    mode = 0o777 if executable else 0o666  # less the umask, as a shell redirection makes it
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NONBLOCK, mode)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise UnwritableFile(f"{path}: a FIFO that no process reads") from None
        raise UnwritableFile(f"{path}: cannot be written ({exc.strerror})") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISFIFO(info.st_mode):  # a reader is there: write as to a pipe
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if executable and stat.S_ISREG(info.st_mode):
            os.fchmod(fd, info.st_mode | (info.st_mode & 0o444) >> 2)  # x where r
    except OSError as exc:
        raise UnwritableFile(f"{path}: cannot be written ({exc.strerror})") from None
    finally:
        os.close(fd)
