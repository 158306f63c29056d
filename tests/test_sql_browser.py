"""The in-browser SQL page: DuckDB-WASM vendored from node_modules, or a page saying it is not.

The browser itself runs the page in test_site_browser.py; these tests check the vendoring and
the generated page without one.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from rlmguide.kb.query import canned_queries
from site_support import REPO, BuiltSite

from rlmguide.sitegen import sql_browser
from rlmguide.sitegen.sql_browser import (
    BROWSER_PAGE,
    LICENSES,
    VENDOR_DIR,
    Vendored,
    VendorError,
    browser_page,
    browser_sql,
    patch_module,
    vendor,
)

INSTALLED = (REPO / "node_modules" / sql_browser.PACKAGE / "package.json").is_file()
needs_npm_ci = pytest.mark.skipif(
    not INSTALLED, reason="DuckDB-WASM is not installed: run `npm ci` at the repository root"
)

DATA = {
    f"data/{name}.{fmt}": b"" for name in ("frameworks", "claims") for fmt in ("csv", "parquet")
}


def config_of(page: str) -> dict:
    found = re.search(
        r'<script type="application/json" id="sql-browser-config">(.*?)</script>', page
    )
    assert found, "the page carries its configuration"
    return json.loads(found.group(1))


def test_without_node_modules_the_page_says_sql_is_unavailable(tmp_path: Path) -> None:
    vendored = vendor(tmp_path)
    assert not vendored.available and vendored.copies == {} and vendored.files == {}
    assert "npm ci" in vendored.reason
    page = browser_page(DATA, vendored)
    assert "SQL in the browser is unavailable" in page
    assert "template:" not in page and "sql-browser-config" not in page
    assert "(data.md)" in page  # the downloads are still offered


def test_the_arrow_imports_are_bound_to_the_arrow_global() -> None:
    source = b'var a=1;import*as u from"apache-arrow";f(u.Table);import * as d from "apache-arrow";'
    patched = patch_module(source)
    assert patched == b"var a=1;const u=globalThis.Arrow;f(u.Table);const d=globalThis.Arrow;"
    with pytest.raises(VendorError):
        patch_module(b'import{Table}from"apache-arrow";')


def fake_node_modules(folder: Path, version: str) -> Path:
    for name in LICENSES:
        (folder / name).mkdir(parents=True)
        (folder / name / "package.json").write_text(json.dumps({"version": version}))
    return folder


def test_a_stale_install_is_an_error_not_a_silent_downgrade(tmp_path: Path) -> None:
    with pytest.raises(VendorError, match="npm ci"):
        vendor(fake_node_modules(tmp_path / "node_modules", "0.0.1"))


def test_package_lock_pins_what_package_json_names() -> None:
    pins = json.loads((REPO / "package.json").read_text())["dependencies"]
    lock = json.loads((REPO / "package-lock.json").read_text())["packages"]
    for name, version in pins.items():
        assert re.fullmatch(r"\d+\.\d+\.\d+", version), f"{name} is pinned exactly"
        assert lock[f"node_modules/{name}"]["version"] == version
        assert lock[f"node_modules/{name}"]["integrity"].startswith("sha512-")
    assert set(pins) <= set(LICENSES)


@needs_npm_ci
def test_the_installed_package_gives_every_file_the_page_loads() -> None:
    vendored = vendor()
    assert vendored.available, vendored.reason
    names = {path.removeprefix(f"{VENDOR_DIR}/") for path in [*vendored.copies, *vendored.files]}
    script = (REPO / "site" / "docs" / "javascripts" / "sql-browser.js").read_text()
    loaded = set(re.findall(r'new URL\("([\w.-]+)", VENDOR\)', script))
    assert loaded and loaded <= names, loaded - names
    module = vendored.files[f"{VENDOR_DIR}/duckdb-browser.mjs"]
    assert b"globalThis.Arrow" in module and b'from"apache-arrow"' not in module
    assert (
        vendored.version
        == json.loads((REPO / "package.json").read_text())["dependencies"][sql_browser.PACKAGE]
    )


def test_canned_queries_get_their_example_parameters_as_literals() -> None:
    query = canned_queries()["frameworks-supporting"]
    sql = browser_sql(query)
    assert "$feature" not in sql and "feature = 'asynchronous-execution'" in sql
    plain = canned_queries()["taxonomy"]
    assert browser_sql(plain) == plain.sql.strip()


def test_the_page_offers_every_canned_query_and_table() -> None:
    vendored = Vendored(version="1.2.3", files={f"{VENDOR_DIR}/x": b"12"})
    page = browser_page(DATA, vendored)
    assert page.startswith("---\ntemplate: sql-browser.html\n")
    config = config_of(page)
    assert config["tables"] == ["claims", "frameworks"]
    assert [q["name"] for q in config["queries"]] == list(canned_queries())
    for name in canned_queries():
        assert f'data-query="{name}"' in page
    assert config["vendor"] == f"{VENDOR_DIR}/" and config["data"] == "data/"


def test_only_the_sql_page_loads_duckdb(built_site: BuiltSite) -> None:
    page = (built_site.root / BROWSER_PAGE.removesuffix(".md") / "index.html").read_text()
    if not (built_site.root / VENDOR_DIR).is_dir():
        assert "SQL in the browser is unavailable" in page
        pytest.skip("DuckDB-WASM is not installed: run `npm ci` at the repository root")
    assert 'type="module" src="../../javascripts/sql-browser.js"' in page
    for other in ("index.html", "frameworks/verl/index.html", "sql/index.html"):
        text = (built_site.root / other).read_text()
        assert "sql-browser" not in text.replace("sql/browser/", ""), other
        assert "duckdb-wasm" not in text, other
    shipped = sorted(p.name for p in (built_site.root / VENDOR_DIR).iterdir())
    assert "duckdb-eh.wasm" in shipped and "NOTICE.txt" in shipped
