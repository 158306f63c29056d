"""Tables computed from the records by code above kb, stored beside the record tables.

The plan atlas is a search by the rules and cost packages; kb may not import them (the
dependency arrows run `rules -> kb`), so the caller hands kb a `Derivation`: kb names the
database file by its code digest and stores its tables without knowing how they are made.
Kept free of heavy imports: `code_digest` runs on the warm path of `rlmguide sql`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from rlmguide.kb.paths import RecordRoot


@dataclass(frozen=True)
class Table:
    name: str
    doc: str
    """the table's comment"""
    columns: Sequence[tuple[str, str, str]]
    """(name, SQL type, comment) per column"""
    rows: Sequence[Sequence[Any]]


class Derivation(Protocol):
    def code_digest(self) -> str:
        """A digest of the code that computes the tables: part of the database file's name."""
        ...

    def tables(self, roots: Sequence[RecordRoot]) -> list[Table]:
        """The tables for the records under `roots` (called only when the file is built)."""
        ...
