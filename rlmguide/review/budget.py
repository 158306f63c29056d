"""What reading one launch file may spend, so that any file ends in a one-line error in
bounded time and memory: bytes and files read, words, expansions and their bytes, nesting
depth and wall time. The readers (shell.py, recipe.py) take a `Budget` and charge it at their
entry points; `review` makes one per file.

The limits are far above real launches (the largest verl or slime script reads a few files of
a few kB, expands a few hundred words and nests three levels), and far below what hurts.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlmguide.kb.files import UnreadableFile, decode, read_regular

PSEUDO_FILESYSTEMS = ("/proc/", "/sys/", "/dev/")
"""Files that are the kernel's, not the user's: /proc/self/environ holds the environment's
secrets and reports itself a regular file of size 0."""


class Exhausted(ValueError):
    """The file would take more than its budget; the message says which limit and where."""


@dataclass
class Budget:
    file_bytes: int = 1024 * 1024
    """One file (read with the scenario loader's guard, kb.files): the largest launch script
    or recipe in the review fixtures is 12 kB."""
    total_bytes: int = 8 * 1024 * 1024
    files: int = 256
    """Files read: the script and what it sources (once per entry point tried), a recipe and
    its `defaults:` chain."""
    value_bytes: int = 1024 * 1024
    """One word, variable value or interpolated string."""
    expanded_bytes: int = 64 * 1024 * 1024
    """Everything expansion produces, summed."""
    expansions: int = 200_000
    """Variable, parameter and arithmetic expansions and recipe values visited."""
    depth: int = 16
    """Nesting: `if` blocks, `${...:-...}` defaults, arithmetic, defaults chains, interpolations."""
    seconds: float = 10.0
    started: float = field(default_factory=time.monotonic)
    lexed: dict[str, Any] = field(default_factory=dict)
    """Each file's statements as the shell lexer read them: a script is run once per entry
    point tried, and lexing is the costly part of a large one."""
    _read: int = 0
    _files: int = 0
    _expanded: int = 0
    _expansions: int = 0

    def read(self, path: Path) -> str:
        """A file's text: a regular file outside the kernel's pseudo-filesystems, of text
        (UTF-8, no NUL byte), within the size limits."""
        self._files += 1
        if self._files > self.files:
            raise Exhausted(f"{path}: reads more than {self.files} files (sources or defaults)")
        real = os.path.realpath(path)
        if real.startswith(PSEUDO_FILESYSTEMS):
            raise UnreadableFile(f"{path}: not a regular file (it is in {real[:5]})")
        try:
            data = read_regular(path, self.file_bytes)
        except UnreadableFile as exc:
            raise UnreadableFile(f"{path}: {exc}") from None
        self._read += len(data)
        if self._read > self.total_bytes:
            raise Exhausted(f"{path}: the files read exceed {self.total_bytes:,} bytes in all")
        if b"\0" in data:
            raise UnreadableFile(f"{path}: not text (it holds a NUL byte)")
        return decode(data)

    def value(self, size: int, what: str) -> None:
        """Charge a value of `size` characters (a word, a variable, an interpolation)."""
        if size > self.value_bytes:
            raise Exhausted(f"{what} grows past {self.value_bytes:,} characters")
        self._expanded += size
        if self._expanded > self.expanded_bytes:
            raise Exhausted(f"expansions produce more than {self.expanded_bytes:,} characters")

    def expansion(self) -> None:
        self._expansions += 1
        if self._expansions > self.expansions:
            raise Exhausted(f"more than {self.expansions:,} expansions")
        if self._expansions % 1024 == 0:
            self.clock()

    def nested(self, depth: int, what: str) -> None:
        if depth > self.depth:
            raise Exhausted(f"{what} nest deeper than {self.depth} levels")

    def clock(self) -> None:
        if time.monotonic() - self.started > self.seconds:
            raise Exhausted(f"reading took more than {self.seconds:g} s")
