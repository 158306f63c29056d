"""The built site in a real browser: Debian's chromium through Playwright, on a loopback server.

Each test saves a screenshot under the build folder (`build/test-site/screenshots/`).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from site_support import BuiltSite

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
TIMEOUT_MS = 15_000

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="needs Debian's chromium at /usr/bin/chromium (apt install chromium)",
)


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Keep request lines out of the test output."""


@pytest.fixture(scope="module")
def site_url(built_site: BuiltSite) -> Iterator[str]:
    """The built site served on a free port of 127.0.0.1 for this module's tests."""
    handler = functools.partial(QuietHandler, directory=str(built_site.root))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def tab(chromium: Any, built_site: BuiltSite, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A fresh page; its final state is saved as `<test name>.png` under the build folder."""
    context = chromium.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    # Nothing may leave the machine: Mermaid's CDN script and the like are answered locally.
    page.route("**/*", lambda route: _local_only(route))
    try:
        yield page
    finally:
        page.screenshot(path=str(built_site.screenshots / f"{request.node.name}.png"))
        context.close()


def _local_only(route: Any) -> None:
    if route.request.url.startswith("http://127.0.0.1:"):
        route.continue_()
    else:
        route.abort()


def heading(tab: Any) -> str:
    """The page's title heading, without the permalink mark the toc extension appends."""
    return tab.locator("article h1").inner_text().removesuffix("¶").strip()


def test_home_page_renders(tab: Any, site_url: str) -> None:
    tab.goto(site_url)
    assert heading(tab) == "rlmguide"
    assert tab.title().startswith("rlmguide")
    tabs = tab.locator(".md-tabs__link").all_inner_texts()
    for section in ("Taxonomy", "Frameworks", "Guidelines", "SQL"):
        assert section in tabs


def test_search_finds_verl(tab: Any, site_url: str) -> None:
    tab.goto(site_url)
    tab.locator("label.md-search__icon, .md-search__input").first.click()
    tab.locator("input.md-search__input").fill("verl")
    results = tab.locator(".md-search-result__item")
    results.first.wait_for()
    assert "verl" in results.first.inner_text().lower()


def test_matrix_filter_hides_rows(tab: Any, site_url: str) -> None:
    tab.goto(site_url + "frameworks/matrix/")
    rows = tab.locator("#framework-matrix tbody tr")
    total = rows.count()
    assert total > 20
    assert tab.locator(".table-count").inner_text() == f"{total} of {total} rows"
    tab.locator("input.table-filter").fill("vllm")
    visible = tab.locator("#framework-matrix tbody tr:visible")
    assert 0 < visible.count() < total
    for text in visible.all_inner_texts():
        assert "vllm" in text.lower()
    assert tab.locator(".table-count").inner_text() == f"{visible.count()} of {total} rows"


def test_matrix_sorts_by_a_framework_column(tab: Any, site_url: str) -> None:
    tab.goto(site_url + "frameworks/matrix/")
    heading = tab.locator("#framework-matrix thead th").nth(2)
    heading.click()
    assert heading.get_attribute("aria-sort") == "ascending"
    cells = tab.locator("#framework-matrix tbody tr td:nth-child(3)").all_inner_texts()
    known = [c for c in cells if c != "unknown"]
    assert cells[: len(known)] == known, "unknown cells sort last"
    order = {"yes": 0, "partial": 1, "planned": 2, "no": 3}
    assert [order[c] for c in known] == sorted(order[c] for c in known)


def test_framework_page_shows_its_sources(tab: Any, site_url: str) -> None:
    tab.goto(site_url + "frameworks/verl/")
    assert heading(tab) == "verl"
    source_pages = tab.locator("article a[href*='/sources/']")
    addresses = tab.locator("article a[title^='http']")
    assert source_pages.count() > 20
    assert addresses.count() > 20
    assert source_pages.first.is_visible()
    edit = tab.locator("a.md-content__button[href*='/edit/']")
    assert "kb/records/frameworks/verl.yaml" in (edit.first.get_attribute("href") or "")


def test_plots_are_visible(tab: Any, site_url: str) -> None:
    tab.goto(site_url + "plots/")
    images = tab.locator("article img[src$='.svg']")
    assert images.count() == 3
    for i in range(3):
        image = images.nth(i)
        image.scroll_into_view_if_needed()
        assert image.is_visible()
        # a loaded SVG has a natural size; a broken one has none
        assert tab.evaluate("(img) => img.naturalWidth", image.element_handle()) > 100


def test_calibration_table_lists_predictions(tab: Any, site_url: str) -> None:
    tab.goto(site_url + "results/calibration/")
    rows = tab.locator("article table tbody tr")
    assert rows.count() >= 20
    assert "median absolute error" in tab.locator("article").inner_text()
