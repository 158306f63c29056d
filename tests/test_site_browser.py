"""The built site in a real browser: Debian's chromium through Playwright, on a loopback server.

Each test saves a screenshot under the build folder (`build/test-site/screenshots/`).
"""

from __future__ import annotations

import functools
import json
import threading
import time
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from site_support import REPO, BuiltSite

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


MATRIX = "frameworks/matrix/"
ASYNC_PARTIAL_MEGATRON = ("asynchronous-execution", "partial-rollout", "megatron-lm")
"""The issue's question: which frameworks have async rollout, partial rollouts and Megatron?"""


def shown_frameworks(tab: Any) -> list[str]:
    """The framework columns the matrix still shows, left to right."""
    heads = tab.locator("#framework-matrix thead th.fw-col:visible")
    return [h.get_attribute("data-framework") for h in heads.all()]


def test_matrix_filter_matches_feature_names_only(tab: Any, site_url: str) -> None:
    tab.goto(site_url + MATRIX)
    rows = tab.locator("#framework-matrix tbody tr")
    total = rows.count()
    assert total > 20
    tab.locator("input.matrix-find").fill("partial rollout")
    visible = tab.locator("#framework-matrix tbody tr:visible")
    names = [row.get_attribute("data-name") for row in visible.all()]
    # The claim notes mention partial rollouts on many rows; only feature names count.
    assert names and len(names) < 5
    assert all("partial" in n and "rollout" in n for n in names), names
    assert f"{len(names)} of {total} features shown" in tab.locator(".matrix-answer").inner_text()
    assert "find=partial+rollout" in tab.url


def test_matrix_answers_a_multi_feature_question(tab: Any, site_url: str) -> None:
    tab.goto(site_url + MATRIX)
    for feature in ASYNC_PARTIAL_MEGATRON:
        tab.locator("input.matrix-find").fill(feature)
        tab.locator(f'input.matrix-pick[value="{feature}"]').check()
    tab.locator("input.matrix-find").fill("")
    expected = ["areal", "miles", "nemo-rl", "skyrl", "slime", "verl"]
    assert shown_frameworks(tab) == expected
    # Only the picked features remain as rows, in the order they were picked.
    picked = tab.locator("#framework-matrix tbody tr:visible")
    assert [r.get_attribute("data-feature") for r in picked.all()] == list(ASYNC_PARTIAL_MEGATRON)
    answer = tab.locator(".matrix-answer").inner_text()
    assert "6 frameworks with all 3 picked" in answer
    assert "AReaL" in answer and "verl" in answer
    # The address holds the answer: opened afresh, it shows the same columns.
    link = tab.url
    assert "features=asynchronous-execution%2Cpartial-rollout%2Cmegatron-lm" in link
    tab.goto(site_url)
    tab.goto(link)
    assert shown_frameworks(tab) == expected
    assert tab.locator('input.matrix-pick[value="partial-rollout"]').is_checked()


def test_matrix_any_mode_ranks_by_picked_features(tab: Any, site_url: str) -> None:
    query = "?features=" + ",".join(ASYNC_PARTIAL_MEGATRON) + "&any=1"
    tab.goto(site_url + MATRIX + query)
    shown = shown_frameworks(tab)
    scores = [
        int(tab.locator(f'th.fw-col[data-framework="{fw}"]').get_attribute("data-score")[0])
        for fw in shown
    ]
    assert len(shown) > 5 and scores[:5] == [3] * 5
    assert scores == sorted(scores, reverse=True) and min(scores) >= 1
    tab.locator("input.matrix-frameworks").fill("verl slime")
    assert shown_frameworks(tab) == ["slime", "verl"]
    tab.locator("button.matrix-clear").click()
    assert len(shown_frameworks(tab)) > 40
    assert "features=" not in tab.url


def test_matrix_header_and_feature_column_stay_put(tab: Any, site_url: str) -> None:
    tab.goto(site_url + MATRIX)
    # The page also holds the survey's Table 11 view in a box of its own.
    box = tab.locator(".matrix-scroll", has=tab.locator("#framework-matrix"))
    head = tab.locator("#framework-matrix thead th.fw-col").first
    first = tab.locator("#framework-matrix tbody tr td.feature-col").first
    top, left = head.bounding_box()["y"], first.bounding_box()["x"]
    box.evaluate("(el) => { el.scrollTop = 600; el.scrollLeft = 400; }")
    assert abs(head.bounding_box()["y"] - top) < 1, "the header row scrolled away"
    assert abs(first.bounding_box()["x"] - left) < 1, "the feature column scrolled away"


def test_matrix_on_a_phone_shows_data_on_the_first_screen(
    chromium: Any, site_url: str, built_site: BuiltSite
) -> None:
    context = chromium.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    phone = context.new_page()
    phone.route("**/*", lambda route: _local_only(route))
    try:
        phone.goto(site_url + MATRIX)
        cell = phone.locator(
            "#framework-matrix tbody tr td.support-yes, "
            "#framework-matrix tbody tr td.support-unknown"
        ).first
        assert cell.bounding_box()["y"] + cell.bounding_box()["height"] < 844
        assert not phone.locator("#framework-matrix td.kind-col").first.is_visible()
        # The page itself does not scroll sideways: the matrix scrolls in its own box.
        width = phone.evaluate("() => document.documentElement.scrollWidth")
        assert width <= 390
        phone.screenshot(path=str(built_site.screenshots / "matrix-phone.png"))
    finally:
        context.close()


def test_matrix_sorts_by_a_framework_column(tab: Any, site_url: str) -> None:
    tab.goto(site_url + "frameworks/matrix/")
    heading = tab.locator("#framework-matrix thead th").nth(2)
    # The framework's name is a link to its page; the rest of the heading sorts.
    heading.locator(".availability").click()
    assert heading.get_attribute("aria-sort") == "ascending"
    cells = tab.locator("#framework-matrix tbody tr td:nth-child(3)").all_inner_texts()
    known = [c for c in cells if c != "unknown"]
    assert cells[: len(known)] == known, "unknown cells sort last"
    order = {"yes": 0, "partial": 1, "planned": 2, "no": 3, "undocumented": 4}
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


OFFLINE_PAGES = ("", "techniques/", MATRIX, "frameworks/verl/", "results/calibration/", "plots/")


def test_pages_ask_nothing_of_the_network(tab: Any, site_url: str) -> None:
    """No request leaves the site (no CDN script, no repository widget), nothing errs, and
    the search index waits until someone searches."""
    outside: list[str] = []
    index: list[str] = []
    errors: list[str] = []
    tab.on("request", lambda r: (outside if not r.url.startswith(site_url) else []).append(r.url))
    tab.on("request", lambda r: index.append(r.url) if "search_index" in r.url else None)
    tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    for path in OFFLINE_PAGES:
        tab.goto(site_url + path)
        tab.wait_for_load_state("networkidle")
    assert outside == [] and errors == [] and index == []
    tab.locator("label.md-search__icon, .md-search__input").first.click()
    tab.locator("input.md-search__input").fill("ByteDance")
    tab.locator(".md-search-result__item").first.wait_for()
    assert len(index) == 1
    # Table cells are indexed apart ("Organisation ByteDance Seed", not "OrganisationByteDance").
    hits = tab.locator(".md-search-result__item").all_inner_texts()
    assert any("verl" in hit for hit in hits[:5]), hits[:5]


def test_search_ranks_record_pages_above_sources(tab: Any, site_url: str) -> None:
    tab.goto(site_url)
    tab.locator("label.md-search__icon, .md-search__input").first.click()
    tab.locator("input.md-search__input").fill("async")
    items = tab.locator(".md-search-result__item > a")
    items.first.wait_for()
    pages = [a.get_attribute("href").split("?")[0].removeprefix(site_url) for a in items.all()]
    technique = pages.index("techniques/asynchronous-execution/")
    # Other records that say "async" (asynchronous environment stepping, AsyncFlow) may come
    # first; a source page may not.
    assert technique < 3, pages[:5]
    assert not any(p.startswith("sources/") for p in pages[:technique]), pages[:5]


def test_taxonomy_diagrams_render_offline(tab: Any, site_url: str) -> None:
    tab.goto(site_url + "techniques/")
    diagrams = tab.locator("article svg.tree-diagram")
    assert diagrams.count() >= 5
    first = diagrams.first
    assert first.is_visible() and first.bounding_box()["height"] > 100
    assert "graph LR" not in tab.locator("article").inner_text()
    box = first.locator("g.tree-node a").first
    target = box.get_attribute("href")
    box.click()
    tab.wait_for_url(f"**/techniques/{target.strip('/')}/")
    assert heading(tab)


def test_framework_tables_fit_at_1440_px(
    chromium: Any, site_url: str, built_site: BuiltSite
) -> None:
    """No framework page's tables run past the content column on a 1440 px screen."""
    context = chromium.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    page.route("**/*", lambda route: _local_only(route))
    cut = []
    try:
        frameworks = sorted(
            p.parent.name for p in (built_site.root / "frameworks").glob("*/index.html")
        )
        for name in frameworks:
            if name == "matrix":
                continue
            page.goto(f"{site_url}frameworks/{name}/")
            widths = page.evaluate(
                "() => Array.from(document.querySelectorAll('article table')).map(t => "
                "[t.scrollWidth, (t.closest('.md-typeset__scrollwrap') || t.parentElement)"
                ".clientWidth])"
            )
            cut += [name for table, box in widths if table > box + 1]
        assert len(frameworks) > 40
        assert not cut, sorted(set(cut))
    finally:
        context.close()


def test_calibration_sorts_as_numbers_and_plots(tab: Any, site_url: str) -> None:
    tab.goto(site_url + "results/calibration/")
    table = tab.locator("article table").first
    reported = table.locator("thead th").nth(2)
    assert reported.inner_text().startswith("Reported")
    reported.click()
    values = table.locator("tbody tr td:nth-child(3)").all_inner_texts()
    numbers = [float(v.split()[0].replace(",", "")) for v in values if v != "unknown"]
    assert len(numbers) >= 20 and numbers == sorted(numbers)
    # every figure carries its result's unit (seconds, or tokens per second for a throughput)
    predicted = table.locator("tbody tr td:nth-child(4)").all_inner_texts()
    units = {v.split(" ", 1)[1] for v in values if v != "unknown"}
    assert "s" in units and units >= {p.split(" ", 1)[1] for p in predicted if p != "unknown"}
    assert all(
        p == "unknown" or p.split(" ", 1)[1] == v.split(" ", 1)[1]
        for p, v in zip(predicted, values, strict=True)
    )
    plot = tab.locator("article img[src$='calibration.svg']")
    plot.scroll_into_view_if_needed()
    assert tab.evaluate("(img) => img.naturalWidth", plot.element_handle()) > 100


def test_deployment_page(tab: Any, site_url: str) -> None:
    tab.goto(site_url + "deployments/")
    tab.locator("article table a", has_text="Test fixture").first.click()
    tab.wait_for_url("**/deployments/fixture-verl-grpo-qwen2.5-7b/")
    text = tab.locator("article").inner_text()
    assert "Published step time\tunknown" in text
    assert "plan.rollout.tp\t2" in text
    link = tab.locator("article a", has_text="run_qwen2-7b.sh")
    assert "/blob/0123456789abcdef" in (link.get_attribute("href") or "")


SQL_PAGE = "sql/browser/"
SQL_TIMEOUT_MS = 60_000
"""Starting DuckDB-WASM compiles 34 MB of WebAssembly: seconds, not the usual milliseconds."""


def needs_duckdb_wasm(built_site: BuiltSite) -> None:
    if not (built_site.root / "vendor" / "duckdb-wasm" / "duckdb-eh.wasm").is_file():
        pytest.skip("DuckDB-WASM is not installed (run `npm ci`): the SQL page says so instead")


def sql_state(tab: Any, *states: str) -> str:
    """Wait until the SQL page reaches one of `states`; return the one it reached."""
    tab.wait_for_function(
        "(states) => states.includes(document.querySelector('.sql-browser').dataset.state)",
        arg=list(states),
        timeout=SQL_TIMEOUT_MS,
    )
    return tab.locator(".sql-browser").get_attribute("data-state")


def run_sql(tab: Any, sql: str) -> str:
    tab.locator(".sql-editor").fill(sql)
    tab.locator(".sql-run").click()
    return sql_state(tab, "done", "error")


def test_sql_in_the_browser_answers_offline(tab: Any, site_url: str, built_site: BuiltSite) -> None:
    """DuckDB-WASM and the data come from the site alone; the frameworks count comes back."""
    needs_duckdb_wasm(built_site)
    outside: list[str] = []
    tab.on("request", lambda r: None if r.url.startswith(site_url) else outside.append(r.url))
    start = time.perf_counter()
    tab.goto(site_url + SQL_PAGE)
    state = sql_state(tab, "ready", "failed")
    assert state == "ready", tab.locator(".sql-status").inner_text()
    ready = time.perf_counter() - start
    assert run_sql(tab, "SELECT count(*) AS frameworks FROM frameworks") == "done"
    answered = time.perf_counter() - start
    frameworks = len(list((REPO / "kb" / "records" / "frameworks").glob("*.yaml")))
    assert tab.locator(".sql-result thead th").all_inner_texts() == ["frameworks"]
    assert tab.locator(".sql-result tbody td").all_inner_texts() == [str(frameworks)]
    assert outside == []
    timing = {"ready_seconds": round(ready, 2), "answered_seconds": round(answered, 2)}
    (built_site.root.parent / "sql-browser-timing.json").write_text(json.dumps(timing) + "\n")
    assert answered < SQL_TIMEOUT_MS / 1000


def test_sql_page_canned_queries_sort_and_refuse_writes(
    tab: Any, site_url: str, built_site: BuiltSite
) -> None:
    needs_duckdb_wasm(built_site)
    tab.goto(site_url + SQL_PAGE)
    assert sql_state(tab, "ready", "failed") == "ready"
    # A canned query is one click away, and its result sorts like every table of the site.
    tab.locator('button.sql-canned[data-query="claims-by-source"]').click()
    assert sql_state(tab, "done", "error") == "done"
    rows = tab.locator(".sql-result tbody tr")
    assert rows.count() > 20
    claims = tab.locator(".sql-result thead th").nth(2)
    assert claims.inner_text().startswith("claims")
    claims.click()
    assert claims.get_attribute("aria-sort") == "ascending"
    counts = [int(c) for c in tab.locator(".sql-result tbody td:nth-child(3)").all_inner_texts()]
    assert counts == sorted(counts) and counts[0] < counts[-1]
    # The parameterised query runs with its example value filled in.
    tab.locator('button.sql-canned[data-query="frameworks-supporting"]').click()
    assert sql_state(tab, "done", "error") == "done"
    assert "'asynchronous-execution'" in tab.locator(".sql-editor").input_value()
    assert tab.locator(".sql-result tbody tr").count() > 5
    # Writes are refused before they reach DuckDB, and the table is still whole.
    for statement in ("DROP TABLE frameworks", "WITH x AS (SELECT 1) DELETE FROM frameworks"):
        assert run_sql(tab, statement) == "error"
        assert "read-only" in tab.locator(".sql-status").inner_text()
    assert run_sql(tab, "SELECT 1; SELECT 2") == "error"
    # A long result stops at the row limit, and the next query runs as usual.
    assert run_sql(tab, "SELECT * FROM range(5000)") == "done"
    assert tab.locator(".sql-result tbody tr").count() == 1000
    assert "returns more" in tab.locator(".sql-count").inner_text()
    assert run_sql(tab, "SELECT count(*) FROM frameworks WHERE id = 'verl'") == "done"
    assert tab.locator(".sql-result tbody td").all_inner_texts() == ["1"]
    # The address holds the query: opened afresh, the page runs it.
    link = tab.url
    assert "sql=" in link
    tab.goto(site_url)
    tab.goto(link)
    assert sql_state(tab, "done", "error", "failed") == "done"
    assert tab.locator(".sql-result tbody td").all_inner_texts() == ["1"]


def test_atlas_filters_to_a_setup_and_sorts_step_time_as_numbers(tab: Any, site_url: str) -> None:
    """ "For 128 H100s and a 32B model, what do I run?": typing the setup leaves its rows."""
    tab.goto(site_url + "atlas/")
    rows = tab.locator("#atlas-table tbody tr")
    total = rows.count()
    assert total >= 30
    table, box = tab.evaluate(
        "() => { const t = document.getElementById('atlas-table'); return [t.scrollWidth, "
        "(t.closest('.md-typeset__scrollwrap') || t.parentElement).clientWidth]; }"
    )
    assert table <= box + 1, "the atlas fits the page at 1400 px"
    tab.locator("input.table-filter[data-table='atlas-table']").fill("qwen2.5-32b h100 grpo")
    visible = rows.filter(has=tab.locator("td")).evaluate_all(
        "rows => rows.filter(r => r.style.display !== 'none').map(r => r.innerText)"
    )
    assert len(visible) == 5  # 8, 32, 128, 1,024 and 4,096 GPUs
    assert any("\t128\t" in row and " s" in row for row in visible)
    count = tab.locator(".table-count[data-table='atlas-table']").inner_text()
    assert count == f"5 of {total} rows"
    tab.locator("input.table-filter[data-table='atlas-table']").fill("")
    step = tab.locator("#atlas-table thead th", has_text="Step time")
    step.click()
    values = tab.locator("#atlas-table tbody tr td:nth-child(9)").all_inner_texts()
    seconds = [float(v.split()[0].replace(",", "")) for v in values if v != "unknown"]
    assert len(seconds) >= 30 and seconds == sorted(seconds)
    assert values[len(seconds) :] == ["unknown"] * (len(values) - len(seconds))
