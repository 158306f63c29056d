"""MkDocs hook: add the pages generated from the knowledge base as in-memory files.

Nothing is written into `docs/`: each generated page becomes a virtual `File`, its "edit this
page" link points at the record's YAML file, and the generated navigation replaces `nav`.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from types import ModuleType

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files, InclusionLevel
from mkdocs.structure.pages import Page

REPO = Path(__file__).resolve().parent.parent
log = logging.getLogger("mkdocs.hooks.rlmguide")


def _sitebuild() -> ModuleType:
    """rlmguide.sitegen.sitebuild, also when MkDocs runs from a checkout without rlmguide
    installed."""
    try:
        from rlmguide.sitegen import sitebuild
    except ModuleNotFoundError:
        sys.path.insert(0, str(REPO))
        from rlmguide.sitegen import sitebuild
    return sitebuild


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    """The site address goes into every page: refuse one that is not a plain http(s) address
    (`rlmguide site build` checks RLMGUIDE_SITE_URL first; this covers `mkdocs build`)."""
    sitebuild = _sitebuild()
    if config.site_url:
        try:
            config.site_url = sitebuild.checked_site_url(config.site_url, "site_url")
        except sitebuild.SiteUrlError as exc:
            raise PluginError(str(exc)) from None
    return config


def on_files(files: Files, config: MkDocsConfig) -> Files:
    sitebuild = _sitebuild()
    try:
        site = sitebuild.generated_site()
    except sitebuild.SiteError as exc:
        raise PluginError(str(exc)) from None
    docs = Path(config.docs_dir).resolve().relative_to(REPO).as_posix()
    for file in files:
        if file.is_documentation_page():
            file.edit_uri = f"{docs}/{file.src_uri}"
    for path, text in site.pages.items():
        if files.get_file_from_path(path) is not None:
            raise PluginError(f"{path} is both hand-written in {docs}/ and generated")
        # Unlisted pages are built and linked but not in the nav; saying so keeps the strict
        # build's omitted-files check quiet for them alone.
        inclusion = InclusionLevel.NOT_IN_NAV if path in site.unlisted else InclusionLevel.UNDEFINED
        page = File.generated(config, path, content=text, inclusion=inclusion)
        # Index and overview pages have no single record behind them: no edit button.
        page.edit_uri = site.edit_paths.get(path)
        files.append(page)
    for path, content in site.files.items():
        files.append(File.generated(config, path, content=content))
    for path, source in site.copies.items():
        files.append(File.generated(config, path, abs_src_path=str(source)))
    config["nav"] = site.nav
    log.info("rlmguide: generated %d pages from the knowledge base", len(site.pages))
    if not site.copies:
        log.info("rlmguide: no DuckDB-WASM in node_modules: the SQL page says it is unavailable")
    return files


def on_post_page(output: str, page: Page, config: MkDocsConfig) -> str:
    """Drop the blank lines and indentation the theme's templates leave (see htmlcompact)."""
    from rlmguide.sitegen.htmlcompact import compact

    return compact(output)
