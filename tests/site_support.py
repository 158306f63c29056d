"""Helpers of the site tests: build the real site once, and check the links of built HTML."""

from __future__ import annotations

import html
import logging
import posixpath
import re
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

import pytest

REPO = Path(__file__).parent.parent
SITE_BUILD = REPO / "build" / "test-site"
"""Where the session's site is built; screenshots go under it too (`build/` is ignored)."""


@dataclass(frozen=True)
class BuiltSite:
    root: Path
    warnings: list[str]
    seconds: float
    cache: Path
    records: Path | None
    """the records folder it was built from (None: the shipped records)"""

    @property
    def screenshots(self) -> Path:
        folder = self.root.parent / "screenshots"
        folder.mkdir(parents=True, exist_ok=True)
        return folder


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(f"{record.name}: {record.getMessage()}")


FIXTURE_DEPLOYMENTS = Path(__file__).parent / "fixtures" / "deployments"
"""Deployment records the site tests add to the shipped ones (kb/records/deployments/ may be
empty), so a deployment page is built in strict mode and seen in the browser."""


def records_with_fixtures(folder: Path) -> Path:
    """A records folder in `folder`: every shipped kind linked in, rules too, and the fixture
    deployments beside the shipped ones (the RLMGUIDE_RECORDS_DIR layout)."""
    folder.mkdir(parents=True, exist_ok=True)
    for kind in sorted((REPO / "kb" / "records").iterdir()):
        if kind.is_dir() and kind.name != "deployments":
            (folder / kind.name).symlink_to(kind, target_is_directory=True)
    (folder / "rules").symlink_to(REPO / "rules" / "records", target_is_directory=True)
    deployments = folder / "deployments"
    deployments.mkdir()
    shipped = REPO / "kb" / "records" / "deployments"
    for record in [*shipped.glob("*.yaml"), *FIXTURE_DEPLOYMENTS.glob("*.yaml")]:
        (deployments / record.name).symlink_to(record)
    return folder


def build_site(out: Path, cache: Path, records: Path | None = None) -> BuiltSite:
    """Build the site into `out` from the shipped records (or the `records` folder),
    collecting every warning logged."""
    from rlmguide.sitegen.sitebuild import build

    shutil.rmtree(out, ignore_errors=True)
    collect = _Collect()
    root = logging.getLogger()
    root.addHandler(collect)
    start = time.perf_counter()
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("RLMGUIDE_CACHE_DIR", str(cache))
            if records is None:
                patch.delenv("RLMGUIDE_RECORDS_DIR", raising=False)
            else:
                patch.setenv("RLMGUIDE_RECORDS_DIR", str(records))
            build(out)
    finally:
        root.removeHandler(collect)
    return BuiltSite(out, collect.messages, time.perf_counter() - start, cache, records)


# --- links of built HTML ---------------------------------------------------------------------


ATTRIBUTE = re.compile(r'\s(href|src|id)="([^"]*)"')


@dataclass(frozen=True)
class Parsed:
    links: list[str]
    ids: set[str]


def parse(path: Path) -> Parsed:
    """Every href/src of a page and every id it defines.

    One regular expression over the file, not html.parser: a built page is mostly Material's
    navigation and the full parser took ten seconds over the site. MkDocs and the generator
    write double-quoted attributes, and text content cannot hold `href="` unescaped.
    """
    links: list[str] = []
    ids: set[str] = set()
    for name, value in ATTRIBUTE.findall(path.read_text(encoding="utf-8")):
        if name == "id":
            ids.add(html.unescape(value))
        else:
            links.append(html.unescape(value))
    return Parsed(links, ids)


def html_pages(root: Path) -> Iterator[Path]:
    """Every built page except 404.html, which links from the root since any path serves it."""
    yield from (p for p in sorted(root.rglob("*.html")) if p != root / "404.html")


SPECIAL = ("#", "mailto:", "data:", "javascript:", "http://", "https://", "//")


def resolve(files: set[str], base: str, path: str) -> str | None:
    """The site file a relative link path names from folder `base`, or None if none exists.

    Strings, not pathlib: there are some 200,000 links in the built site.
    """
    if path.startswith("/"):
        return None  # root-absolute links break when the site is served from a subfolder
    joined = posixpath.normpath(posixpath.join(base, unquote(path)))
    folder = "" if joined == "." else f"{joined}/"
    for candidate in (joined, f"{folder}index.html"):
        if candidate in files:
            return candidate
    return None


def broken_links(root: Path) -> list[str]:
    """`page: link` for every relative link (and fragment) that does not resolve."""
    files = {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}
    ids: dict[str, set[str]] = {}

    def ids_of(name: str) -> set[str]:
        if name not in ids:
            ids[name] = parse(root / name).ids
        return ids[name]

    broken: list[str] = []
    for page in html_pages(root):
        name = page.relative_to(root).as_posix()
        found = parse(page)
        ids[name] = found.ids
        for link in sorted(set(found.links)):
            path, _, fragment = link.partition("#")
            if link.startswith("#"):
                target: str | None = name
            elif link.startswith(SPECIAL):
                continue
            else:
                target = resolve(files, posixpath.dirname(name), path.partition("?")[0])
            if target is None:
                broken.append(f"{name}: {link}")
            elif fragment and target.endswith(".html") and fragment not in ids_of(target):
                broken.append(f"{name}: {link} (no such anchor)")
    return broken
