"""Helpers of the site tests: build the real site once, and check the links of built HTML."""

from __future__ import annotations

import logging
import posixpath
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

REPO = Path(__file__).parent.parent
SITE_BUILD = REPO / "build" / "test-site"
"""Where the session's site is built; screenshots go under it too (`build/` is ignored)."""


@dataclass(frozen=True)
class BuiltSite:
    root: Path
    warnings: list[str]
    seconds: float

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


def build_site(out: Path, cache: Path) -> BuiltSite:
    """Build the site from the shipped records into `out`, collecting every warning logged."""
    from rlmguide.sitebuild import build

    shutil.rmtree(out, ignore_errors=True)
    collect = _Collect()
    root = logging.getLogger()
    root.addHandler(collect)
    start = time.perf_counter()
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("RLMGUIDE_CACHE_DIR", str(cache))
            patch.delenv("RLMGUIDE_RECORDS_DIR", raising=False)
            build(out)
    finally:
        root.removeHandler(collect)
    return BuiltSite(out, collect.messages, time.perf_counter() - start)


# --- links of built HTML ---------------------------------------------------------------------


class _Links(HTMLParser):
    """Every href/src of a page and every id it defines."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name in ("href", "src"):
                self.links.append(value)
            elif name in ("id", "name"):
                self.ids.add(value)


def parse(path: Path) -> _Links:
    parser = _Links()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def html_pages(root: Path) -> Iterator[Path]:
    yield from sorted(root.rglob("*.html"))


def target_file(root: Path, page: Path, link: str) -> Path | None:
    """The file a relative link of `page` points to, or None for external and special links."""
    parts = urlsplit(link)
    if parts.scheme or parts.netloc or link.startswith(("#", "mailto:", "data:", "javascript:")):
        return None
    if parts.path.startswith("/"):
        return root / "__absolute__" / parts.path.lstrip("/")  # never valid on a moved site
    base = page.parent.relative_to(root).as_posix()
    joined = posixpath.normpath(posixpath.join(base, unquote(parts.path)))
    target = root / joined
    return target / "index.html" if target.is_dir() else target


def broken_links(root: Path) -> list[str]:
    """`page: link` for every relative link (and fragment) that does not resolve."""
    ids: dict[Path, set[str]] = {}
    broken: list[str] = []
    for page in html_pages(root):
        found = parse(page)
        ids[page] = found.ids
        for link in found.links:
            target = target_file(root, page, link)
            if target is None:
                fragment = urlsplit(link).fragment
                if link.startswith("#") and fragment and fragment not in found.ids:
                    broken.append(f"{page.relative_to(root)}: {link}")
                continue
            if not target.exists():
                broken.append(f"{page.relative_to(root)}: {link}")
                continue
            fragment = urlsplit(link).fragment
            if fragment and target.suffix == ".html":
                if target not in ids:
                    ids[target] = parse(target).ids
                if fragment not in ids[target]:
                    broken.append(f"{page.relative_to(root)}: {link} (no such anchor)")
    return broken
