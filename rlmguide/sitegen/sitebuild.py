"""Build and serve the site: check the records, generate the pages, run MkDocs in strict mode.

`site/hooks.py` calls `generated_site` while MkDocs collects files, so `build`, `serve` and a
plain `mkdocs build -f site/mkdocs.yml` all produce the same site from the current records.
MkDocs is imported inside the functions: the rest of rlmguide does not need it installed.
"""

from __future__ import annotations

import calendar
import datetime as dt
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent.parent
CONFIG_FILE = REPO / "site" / "mkdocs.yml"
DEFAULT_OUT = REPO / "build" / "site"
SHOWN_PROBLEMS = 10
SENTINEL = ".rlmguide-site"
"""Marks a folder a site build made: MkDocs empties its output folder before writing, so a
build may only reuse a folder that carries this mark (MkDocs keeps dot-files)."""


class SiteError(Exception):
    """The records do not validate, so no site can be generated from them."""


class OutputFolderError(ValueError):
    """The output folder holds files a site build did not write: building would delete them."""


class SiteUrlError(ValueError):
    """RLMGUIDE_SITE_URL is not the address of a site (it goes into every page's links)."""


SITE_URL = re.compile(
    r"https?://(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)*"
    r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?::[0-9]{1,5})?(?:/[A-Za-z0-9._~%/-]*)?"
)
"""An http(s) address: a host name (or IPv4 address), an optional port, a path of unreserved
characters and percent escapes. Nothing in it needs escaping in HTML, XML or JavaScript text,
so MkDocs can place it in every page, the sitemap and the search index as it is."""


def checked_site_url(url: str, name: str = "RLMGUIDE_SITE_URL") -> str:
    """`url` ending in a slash, or SiteUrlError in one line (the value shown escaped)."""
    if len(url) > 2000 or not SITE_URL.fullmatch(url):
        raise SiteUrlError(
            f"{name}: {url[:80]!r} is not the address of a site: http:// or https://, a host, "
            "an optional port and a path of letters, digits, - . _ ~ / and %XX"
        )
    return url if url.endswith("/") else f"{url}/"


def site_url(environ: Mapping[str, str]) -> str | None:
    """The site address RLMGUIDE_SITE_URL gives, checked; None when it is unset."""
    url = environ.get("RLMGUIDE_SITE_URL")
    return None if not url else checked_site_url(url)


def claim_output_folder(out_dir: Path) -> Path:
    """The folder to build into, resolved; refuses one whose contents are not a former build.

    MkDocs deletes everything but dot-files in its `site_dir`, so a user's folder (`--out .`,
    a symlink to their home, the cache) must never become one. An empty or missing folder is
    taken and marked; a marked one is a previous build and is replaced.
    """
    target = Path(out_dir).resolve()
    if target.exists() and not target.is_dir():
        raise OutputFolderError(f"--out {out_dir}: exists and is not a folder")
    if target == REPO or target in REPO.parents or REPO / "site" in (target, *target.parents):
        raise OutputFolderError(
            f"--out {out_dir}: is the project or its site sources; choose a folder of its own"
        )
    if target.is_dir() and not (target / SENTINEL).is_file():
        try:
            occupied = next(target.iterdir(), None) is not None
        except OSError as exc:
            raise OutputFolderError(f"--out {out_dir}: cannot be read ({exc.strerror})") from None
        if occupied:
            raise OutputFolderError(
                f"--out {out_dir}: holds files a site build did not write and building would "
                "delete them; give an empty or new folder"
            )
    try:
        target.mkdir(parents=True, exist_ok=True)
        (target / SENTINEL).write_text("written by rlmguide site build; safe to replace\n")
    except OSError as exc:
        raise OutputFolderError(f"--out {out_dir}: cannot be written ({exc.strerror})") from None
    return target


@dataclass(frozen=True)
class GeneratedSite:
    pages: dict[str, str]
    """page path inside the docs folder -> Markdown"""
    nav: list[Any]
    """the MkDocs `nav` covering generated and hand-written pages"""
    edit_paths: dict[str, str]
    """page path -> repository path of the record file behind it"""
    unlisted: set[str]
    """pages built but left out of the navigation"""
    files: dict[str, bytes]
    """other files of the site (the data downloads), by path"""
    copies: dict[str, Path] = field(default_factory=dict)
    """files copied into the site as they are (vendored DuckDB-WASM), by path"""


def generated_site() -> GeneratedSite:
    """Every generated page, the navigation and the edit links, from the current records."""
    from rlmguide.cost.efficiency import default_sources
    from rlmguide.kb.db import connect_read_only
    from rlmguide.kb.load import load_catalog
    from rlmguide.kb.paths import record_roots
    from rlmguide.kb.validate import validate
    from rlmguide.knowledge import database as knowledge_base
    from rlmguide.rules.engine import compile_rules
    from rlmguide.sitegen.cost_pages import cost_pages
    from rlmguide.sitegen.data_files import data_files
    from rlmguide.sitegen.generate import generate
    from rlmguide.sitegen.pages import edit_paths, navigation, unlisted
    from rlmguide.sitegen.sql_browser import VendorError, browser_pages, vendor

    roots = record_roots()
    catalog = load_catalog(roots)
    problems = [*validate(catalog, default_sources()), *compile_rules(catalog)[1]]
    errors = [p for p in problems if p.severity == "error"]
    if errors:
        shown = "; ".join(str(p) for p in errors[:SHOWN_PROBLEMS])
        raise SiteError(f"{len(errors)} problem(s) in the records (run rlmguide validate): {shown}")
    database = knowledge_base(roots)
    files = data_files(database, content_date(catalog))
    try:
        vendored = vendor()
    except VendorError as exc:
        raise SiteError(str(exc)) from None
    extra = {**cost_pages(catalog, roots), **browser_pages(files, vendored)}
    con = connect_read_only(database)
    try:
        pages = generate(catalog, con, extra=extra, data=files)
    finally:
        con.close()
    nav = navigation(catalog, pages)
    return GeneratedSite(
        pages,
        nav,
        edit_paths(catalog),
        unlisted(pages),
        {**files, **vendored.files},
        vendored.copies,
    )


def newest_date(value: Any) -> dt.date | None:
    """The latest date anywhere in a record dump (claims' `checked`, sources' `accessed`)."""
    if isinstance(value, dt.date):
        return value
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        found = [d for d in (newest_date(v) for v in value) if d is not None]
        return max(found, default=None)
    return None


def content_date(catalog: Any) -> dt.date:
    """The newest date the records carry: what a reproducible build is dated by."""
    return newest_date([r.model_dump() for r in catalog.all()]) or dt.date(1970, 1, 1)


def content_epoch() -> str:
    """The newest date the records carry, as seconds since the epoch (UTC midnight)."""
    from rlmguide.kb.load import load_catalog
    from rlmguide.kb.paths import record_roots

    return str(calendar.timegm(content_date(load_catalog(record_roots())).timetuple()))


def build(out_dir: Path = DEFAULT_OUT) -> Path:
    """Build the site into `out_dir` in strict mode; any warning aborts (mkdocs Abort).

    The same records build the same bytes: MkDocs dates the sitemap (and stamps its gzip
    copy) with SOURCE_DATE_EPOCH when it is set, so unless the caller sets it, it is the
    newest date in the records rather than the day of the build.
    """
    from mkdocs.commands.build import build as mkdocs_build
    from mkdocs.config import load_config

    url = site_url(os.environ)  # before the folder is claimed: a bad address changes nothing
    out_dir = claim_output_folder(out_dir)
    config = load_config(
        config_file=str(CONFIG_FILE),
        site_dir=str(out_dir),
        strict=True,
        **({"site_url": url} if url else {}),
    )
    given = os.environ.get("SOURCE_DATE_EPOCH")
    os.environ["SOURCE_DATE_EPOCH"] = given or content_epoch()
    try:
        mkdocs_build(config)
    finally:
        if given is None:
            del os.environ["SOURCE_DATE_EPOCH"]
    return out_dir


def serve(port: int = 8000) -> None:
    """Serve the site on 127.0.0.1:`port`, rebuilding when pages or records change."""
    import logging

    from mkdocs.commands.serve import serve as mkdocs_serve

    site_url(os.environ)
    log = logging.getLogger("mkdocs")
    if not log.handlers:  # say where the site is served and when it rebuilds
        log.addHandler(logging.StreamHandler())
        log.setLevel(logging.INFO)
    mkdocs_serve(config_file=str(CONFIG_FILE), dev_addr=f"127.0.0.1:{port}", strict=True)
