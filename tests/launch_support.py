"""What the export, start-up-check and review tests share: the records and export mappings
loaded once, and `rlmguide review --format json` of a launch file through the CLI."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from rlmguide.kb.load import load_catalog
from rlmguide.kb.paths import record_roots
from rlmguide.rules import RECOMMEND_KINDS

from rlmguide.cli import cli


@cache
def catalogs() -> tuple[Any, Any]:
    """The records a recommendation reads, and the export mappings by id."""
    return load_catalog(record_roots(), RECOMMEND_KINDS), load_catalog(
        record_roots(), ("mapping",)
    ).of("mapping")


def review_json(path: Path, *args: str) -> dict[str, Any]:
    """`rlmguide review PATH ARGS --format json`, which must succeed, as parsed JSON."""
    done = CliRunner().invoke(
        cli, ["review", str(path), *args, "--format", "json"], catch_exceptions=False
    )
    assert done.exit_code == 0, done.output
    return json.loads(done.output)
