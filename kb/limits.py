"""The bounds on user SQL, in one light module (the CLI reads the defaults without DuckDB).

User SQL runs on shared machines: a runaway statement is stopped at its time limit, and
DuckDB may use this much memory, this many cores and this much spill space before it fails
with its out-of-memory error instead of taking the host down.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_SECONDS = 10.0
DEFAULT_MAX_ROWS = 10_000
SQL_MEMORY_LIMIT = "1GB"
SQL_THREADS = 2
SQL_TEMP_LIMIT = "1GB"


@dataclass(frozen=True)
class Limits:
    """What one statement may take: wall time, and rows kept for printing (the rest counted)."""

    seconds: float = DEFAULT_SECONDS
    max_rows: int = DEFAULT_MAX_ROWS


DEFAULT_LIMITS = Limits()
