"""Build and serve the site: check the records, generate the pages, run MkDocs in strict mode.

`site/hooks.py` calls `generated_site` while MkDocs collects files, so `build`, `serve` and a
plain `mkdocs build -f site/mkdocs.yml` all produce the same site from the current records.
MkDocs is imported inside the functions: the rest of rlmguide does not need it installed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
CONFIG_FILE = REPO / "site" / "mkdocs.yml"
DEFAULT_OUT = REPO / "build" / "site"
SHOWN_PROBLEMS = 10


class SiteError(Exception):
    """The records do not validate, so no site can be generated from them."""


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


def generated_site() -> GeneratedSite:
    """Every generated page, the navigation and the edit links, from the current records."""
    from cost.efficiency import default_sources
    from kb.db import connect_read_only, ensure_database
    from kb.load import load_catalog
    from kb.validate import validate
    from rlmguide.cli import record_roots
    from rlmguide.cost_pages import cost_pages
    from rlmguide.generate import generate
    from rlmguide.pages import edit_paths, navigation, unlisted
    from rules.engine import compile_rules

    roots = record_roots()
    catalog = load_catalog(roots)
    problems = [*validate(catalog, default_sources()), *compile_rules(catalog)[1]]
    errors = [p for p in problems if p.severity == "error"]
    if errors:
        shown = "; ".join(str(p) for p in errors[:SHOWN_PROBLEMS])
        raise SiteError(f"{len(errors)} problem(s) in the records (run rlmguide validate): {shown}")
    con = connect_read_only(ensure_database(roots))
    try:
        pages = generate(catalog, con, extra=cost_pages(catalog, roots))
    finally:
        con.close()
    return GeneratedSite(pages, navigation(catalog, pages), edit_paths(catalog), unlisted(pages))


def build(out_dir: Path = DEFAULT_OUT) -> Path:
    """Build the site into `out_dir` in strict mode; any warning aborts (mkdocs Abort)."""
    from mkdocs.commands.build import build as mkdocs_build
    from mkdocs.config import load_config

    out_dir = Path(out_dir).resolve()
    config = load_config(config_file=str(CONFIG_FILE), site_dir=str(out_dir), strict=True)
    mkdocs_build(config)
    return out_dir


def serve(port: int = 8000) -> None:
    """Serve the site on 127.0.0.1:`port`, rebuilding when pages or records change."""
    import logging

    from mkdocs.commands.serve import serve as mkdocs_serve

    log = logging.getLogger("mkdocs")
    if not log.handlers:  # say where the site is served and when it rebuilds
        log.addHandler(logging.StreamHandler())
        log.setLevel(logging.INFO)
    mkdocs_serve(config_file=str(CONFIG_FILE), dev_addr=f"127.0.0.1:{port}", strict=True)
