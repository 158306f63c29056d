"""What the export, start-up-check and review tests share: the records and export mappings
loaded once, and `rlmguide review --format json` of a launch file through the CLI."""

from __future__ import annotations

import json
import subprocess
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


def bash_words(script: Path, tmp_path: Path) -> list[str]:
    """The arguments bash passes to `python3 -m m` when it runs `script` (a stub python3 in
    `tmp_path` prints them)."""
    stub = tmp_path / "bin" / "python3"
    if not stub.exists():
        stub.parent.mkdir()
        stub.write_text('#!/bin/sh\nprintf "<%s>\\n" "$@"\n')
        stub.chmod(0o755)
    ran = subprocess.run(
        ["bash", str(script)], capture_output=True, text=True, env={"PATH": f"{stub.parent}:/bin"}
    )
    assert ran.returncode == 0, ran.stderr
    return [line[1:-1] for line in ran.stdout.splitlines()][2:]  # past `-m m`
