"""The knowledge base as the command line and the site both open it: the records' tables and
the plan atlas, in one file named by both. Below the CLI and the site generator, so neither
imports the other to find it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import duckdb

from rlmguide.kb.paths import RecordRoot, record_roots
from rlmguide.rules.atlas import Atlas

ATLAS = Atlas(launch_check="rlmguide.export.writer:launch_check")
"""The atlas's plans pass `recommend`'s launch check (api.recommend hands it to the rules):
a row names first a framework whose export writes its plan. Named, not imported: rules may
not import export (DESIGN.md), and this module, on the warm path of `rlmguide sql`, should
not load it either; the atlas imports it only when it searches, in each worker process."""


def database(roots: Sequence[RecordRoot] | None = None) -> Path:
    """The built database file (records and atlas), built first if needed."""
    from rlmguide.kb.db import ensure_database

    return ensure_database(record_roots() if roots is None else roots, ATLAS)


def open_database(roots: Sequence[RecordRoot] | None = None) -> duckdb.DuckDBPyConnection:
    """A locked read-only connection to it (see `kb.db.open_knowledge_base`)."""
    from rlmguide.kb.db import open_knowledge_base

    return open_knowledge_base(record_roots() if roots is None else roots, ATLAS)
