"""Shared fixtures: an isolated cache folder and copies of the fixture knowledge base."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from site_support import SITE_BUILD, BuiltSite, build_site, records_with_fixtures

FIXTURE_KB = Path(__file__).parent / "fixtures" / "kb"
REPO = Path(__file__).parent.parent


def sets(*assignments: str) -> list[str]:
    """`--set` options for the given PATH=VALUE assignments."""
    return [arg for assignment in assignments for arg in ("--set", assignment)]


def run_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`python -m rlmguide ARGS` as a real process, in this process's environment."""
    return subprocess.run(
        [sys.executable, "-m", "rlmguide", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.fixture(scope="session")
def session_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="session")
def atlas_rows(session_cache: Path) -> list[dict[str, Any]]:
    """The plan atlas as `rlmguide sql` returns it, computed once per test session."""
    # A session fixture runs before the per-test `isolated_cache`: name the session's cache
    # here, or the atlas would be computed in the user's.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RLMGUIDE_CACHE_DIR", str(session_cache))
        done = run_cli("sql", "SELECT * FROM atlas", "--format", "json", timeout=1800)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(autouse=True)
def isolated_cache(session_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Tests build databases in a cache of the test session, never in the user's; files are
    named by content, so sharing it across tests only saves rebuilding the same thing."""
    monkeypatch.setenv("RLMGUIDE_CACHE_DIR", str(session_cache))
    return session_cache


@pytest.fixture
def empty_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache folder of this test alone, for tests that look at what gets written."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("RLMGUIDE_CACHE_DIR", str(cache))
    return cache


@pytest.fixture
def fixture_kb(tmp_path: Path) -> Path:
    """A private, editable copy of the small fixture knowledge base."""
    target = tmp_path / "kb"
    shutil.copytree(FIXTURE_KB, target)
    return target


@pytest.fixture
def use_fixture_kb(fixture_kb: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the command line at the fixture knowledge base."""
    monkeypatch.setenv("RLMGUIDE_RECORDS_DIR", str(fixture_kb))
    from rlmguide import cli

    cli.connection.cache_clear()
    yield fixture_kb
    cli.connection.cache_clear()


@pytest.fixture(scope="session")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> BuiltSite:
    """The real site with the fixture deployments, built once per test session in strict
    mode (shared by the site tests)."""
    records = records_with_fixtures(tmp_path_factory.mktemp("records") / "kb")
    # pytest-xdist workers each build their own copy: one folder would be replaced under the other
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    folder = SITE_BUILD / ("site" if worker is None else f"site-{worker}")
    return build_site(folder, tmp_path_factory.mktemp("site-cache"), records)


# Tests sharing an expensive session fixture run on one pytest-xdist worker (`--dist loadgroup`),
# so the plan atlas and the built site are each computed once, not once per worker.
SHARED_FIXTURE_GROUPS = {"atlas_rows": "atlas", "built_site": "site"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for fixture, group in SHARED_FIXTURE_GROUPS.items():
            if fixture in getattr(item, "fixturenames", ()):
                item.add_marker(pytest.mark.xdist_group(group))
                break
