"""How old a fact's evidence is: pinned versions, and when a claim counts as stale.

A claim read from a repository or its documentation must name the version it was read at, and
that version must not float: `main` today is not `main` next month. A commit hash (bare, after
`@`, or inside a `git describe` name such as `v0.7.0-125-gb178a3c`) or a release number pins it.

A claim is stale when its evidence (`as_of`) is more than a year older than the framework's
newest known release (`latest_release`), or, when no release is recorded, more than a year
older than the day it was read (`checked`). Unknown evidence dates give an unknown flag.
"""

from __future__ import annotations

import datetime as dt
import re

from rlmguide.kb.schema import Claim, Framework, Release

PINNED_SOURCE_TYPES = frozenset({"repository", "documentation"})
"""Source types whose content changes under a fixed address, so a claim must pin a version."""

COMMIT = re.compile(r"(?:(?<![0-9A-Za-z])|(?<=-g))(?=[a-f]*[0-9])[0-9a-f]{7,40}(?![0-9A-Za-z])")
"""A commit hash of 7 to 40 hex digits (with at least one digit, so words such as `defaced`
are not hashes), standing alone or after the `-g` of a `git describe` name."""

RELEASE = re.compile(r"(?<![\w.-])v?\d+(?:\.\d+)+(?:[.-][0-9A-Za-z]+)*")
"""A release number such as `v0.11.0`, `0.3.0` or `2026.8.19`; not `pre-v0.5` (a range)."""

STALE_AFTER_YEARS = 1


def commit_of(version: str | None) -> str | None:
    """The commit hash a version names, if it names one (the first, when it names several)."""
    found = COMMIT.search(version or "")
    return found.group(0) if found else None


def release_of(version: str | None) -> str | None:
    """The release number a version names, if it names one."""
    found = RELEASE.search(version or "")
    return found.group(0) if found else None


def is_pinned(version: str | None) -> bool:
    """True when the version names a commit or a release, not only a branch such as `main`."""
    return commit_of(version) is not None or release_of(version) is not None


def years_before(day: dt.date, years: int = STALE_AFTER_YEARS) -> dt.date:
    """The same calendar day `years` earlier (28 February for a 29 February)."""
    try:
        return day.replace(year=day.year - years)
    except ValueError:
        return day.replace(year=day.year - years, day=28)


def stale(as_of: dt.date | None, checked: dt.date, latest: Release | None) -> bool | None:
    """Whether evidence dated `as_of` is more than a year older than the reference date: the
    framework's newest release when known, else the day it was read. None when `as_of` is."""
    if as_of is None:
        return None
    reference = latest.date if latest is not None else checked
    return as_of < years_before(reference)


def claim_stale(framework: Framework, claim: Claim) -> bool | None:
    return stale(claim.as_of, claim.checked, framework.latest_release)
