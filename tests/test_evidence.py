"""Pinned versions and the stale flag, on hand-picked versions and dates."""

from __future__ import annotations

import datetime as dt

import pytest
from rlmguide.kb.evidence import commit_of, is_pinned, stale, years_before
from rlmguide.kb.schema import Release

D = dt.date


@pytest.mark.parametrize(
    ("version", "commit", "pinned"),
    [
        ("v0.7.0-125-gb178a3c", "b178a3c", True),
        (
            "main@7ea279abfbeb698b092856d0dab61e7cf39bc909",
            "7ea279abfbeb698b092856d0dab61e7cf39bc909",
            True,
        ),
        ("v0.11.0", None, True),
        ("2026.8.19 (main@015bdef0)", "015bdef0", True),
        ("main", None, False),
        ("master", None, False),
        ("latest", None, False),
        (None, None, False),
        ("docs (pre-v0.5)", None, False),
        ("defaced", None, False),  # seven hex letters, no digit: a word, not a hash
    ],
)
def test_pinned_versions(version: str | None, commit: str | None, pinned: bool) -> None:
    assert commit_of(version) == commit
    assert is_pinned(version) is pinned


def test_a_year_before_a_leap_day_is_the_28th() -> None:
    assert years_before(D(2028, 2, 29)) == D(2027, 2, 28)
    assert years_before(D(2026, 12, 2)) == D(2025, 12, 2)


RELEASE = Release(version="v1.2", date=D(2026, 6, 1), source="s")


@pytest.mark.parametrize(
    ("as_of", "checked", "latest", "expected"),
    [
        # Against the latest release (2026-06-01): stale before 2025-06-01.
        (D(2025, 5, 31), D(2026, 12, 2), RELEASE, True),
        (D(2025, 6, 1), D(2026, 12, 2), RELEASE, False),  # exactly a year: not more than one
        (D(2026, 3, 1), D(2026, 12, 2), RELEASE, False),
        # No release recorded: against the day it was checked (2026-12-02).
        (D(2025, 12, 1), D(2026, 12, 2), None, True),
        (D(2025, 12, 2), D(2026, 12, 2), None, False),
        # A framework that has not released since its evidence keeps that evidence current.
        (
            D(2024, 1, 1),
            D(2026, 12, 2),
            Release(version="v0.1", date=D(2024, 9, 1), source="s"),
            False,
        ),
        (None, D(2026, 12, 2), RELEASE, None),
    ],
)
def test_stale(
    as_of: dt.date | None, checked: dt.date, latest: Release | None, expected: bool | None
) -> None:
    assert stale(as_of, checked, latest) is expected
