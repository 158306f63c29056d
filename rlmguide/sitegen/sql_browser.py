"""SQL in the reader's browser: DuckDB-WASM vendored into the site, and the page that runs it.

DuckDB-WASM comes from the npm registry at the version `package.json` pins (`npm ci` at the
repository root installs it into `node_modules/`, `package-lock.json` fixes every byte). The
build copies the few files the page needs into the site under `vendor/duckdb-wasm/`, so the
page fetches nothing from anywhere but the site itself. Without `node_modules` (no npm on the
machine, or `npm ci` not run) the site still builds and the page says SQL in the browser is
unavailable.

Only the page at `sql/browser/` loads DuckDB-WASM (its template adds the one script); it reads
the knowledge base from the Parquet downloads `rlmguide.sitegen.data_files` publishes.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from rlmguide.kb.query import CannedQuery, canned_queries
from rlmguide.sitegen.data_files import DATA_DIR, DATA_PAGE
from rlmguide.sitegen.mdtext import code, document, html, link
from rlmguide.sitegen.pages import SQL_QUERIES, SQL_REFERENCE

REPO = Path(__file__).resolve().parent.parent.parent
PACKAGE = "@duckdb/duckdb-wasm"
NODE_MODULES_ENV = "RLMGUIDE_NODE_MODULES"
"""Where to find `node_modules` instead of the repository root (the tests point it elsewhere)."""

BROWSER_PAGE = "sql/browser.md"
TEMPLATE = "sql-browser.html"
"""The page's template (site/overrides): it adds javascripts/sql-browser.js to this page only."""
VENDOR_DIR = "vendor/duckdb-wasm"
MAX_ROWS = 1000
"""Rows a result shows; a query returning more is stopped there and says so."""

# Site file name -> file in node_modules. The "eh" build (WebAssembly exceptions) runs in every
# current browser; the others (mvp, coi) would add 73 MB for browsers from before 2022.
SHIPPED = {
    "duckdb-eh.wasm": "@duckdb/duckdb-wasm/dist/duckdb-eh.wasm",
    "duckdb-browser-eh.worker.js": "@duckdb/duckdb-wasm/dist/duckdb-browser-eh.worker.js",
    "arrow.js": "apache-arrow/Arrow.esnext.min.js",
    # DuckDB-WASM fetches its Parquet reader from an extension server at run time; the site
    # may fetch nothing from elsewhere, so parquet-wasm reads the Parquet files into Arrow.
    "parquet_wasm.js": "parquet-wasm/esm/parquet_wasm.js",
    "parquet_wasm_bg.wasm": "parquet-wasm/esm/parquet_wasm_bg.wasm",
}
MODULE = "duckdb-browser.mjs"
MODULE_SOURCE = "@duckdb/duckdb-wasm/dist/duckdb-browser.mjs"
ARROW_IMPORT = re.compile(rb'import\s*\*\s*as\s*([A-Za-z_$][\w$]*)\s*from\s*"apache-arrow";')
ANY_ARROW_IMPORT = re.compile(rb'(import|from)\s*"apache-arrow"|import\s*\(\s*"apache-arrow"')
LICENSES = {PACKAGE: "MIT", "apache-arrow": "Apache-2.0", "parquet-wasm": "MIT OR Apache-2.0"}


@dataclass(frozen=True)
class Vendored:
    """DuckDB-WASM's files for the site, or why there are none."""

    version: str = ""
    copies: dict[str, Path] = field(default_factory=dict)
    """site path -> installed file copied as it is"""
    files: dict[str, bytes] = field(default_factory=dict)
    """site path -> content made from installed files (the patched module, the notice)"""
    reason: str = ""
    """why SQL in the browser is unavailable; empty when it is available"""

    @property
    def available(self) -> bool:
        return not self.reason

    def size(self) -> int:
        """Bytes these files add to the site."""
        return sum(p.stat().st_size for p in self.copies.values()) + sum(
            len(b) for b in self.files.values()
        )


class VendorError(Exception):
    """node_modules holds something other than what package.json pins: run `npm ci`."""


def node_modules() -> Path:
    given = os.environ.get(NODE_MODULES_ENV)
    return Path(given) if given else REPO / "node_modules"


def pinned_versions(package_json: Path = REPO / "package.json") -> dict[str, str]:
    """The packages package.json pins, by name (package-lock.json pins what they pull in)."""
    return json.loads(package_json.read_text(encoding="utf-8"))["dependencies"]


def patch_module(source: bytes) -> bytes:
    """DuckDB-WASM's browser module with its `apache-arrow` imports bound to the Arrow global.

    The module imports Arrow by its bare package name, which a browser cannot resolve without a
    bundler. Arrow's own build (`arrow.js`, a classic script) defines `globalThis.Arrow`, and
    the module only uses it as a namespace (`import * as x`), so each import becomes a constant.
    """
    patched, count = ARROW_IMPORT.subn(rb"const \1=globalThis.Arrow;", source)
    if count == 0 or ANY_ARROW_IMPORT.search(patched):
        raise VendorError(f"{MODULE_SOURCE} no longer imports Arrow as a namespace: update patch")
    return patched


def notice(versions: Mapping[str, str]) -> bytes:
    lines = [
        "Vendored into this site at build time from the npm registry (package-lock.json):",
        *(f"- {name} {version}, licence {LICENSES[name]}" for name, version in versions.items()),
        f"{MODULE} is {MODULE_SOURCE} with its apache-arrow imports bound to globalThis.Arrow.",
        "",
    ]
    return "\n".join(lines).encode()


def vendor(modules: Path | None = None) -> Vendored:
    """The DuckDB-WASM files for the site from `node_modules`, or the reason there are none."""
    modules = modules or node_modules()
    installed = modules / PACKAGE / "package.json"
    if not installed.is_file():
        return Vendored(reason=f"{PACKAGE} is not installed (run `npm ci` at the repository root)")
    versions = {}
    for name in LICENSES:
        manifest = modules / name / "package.json"
        if not manifest.is_file():
            raise VendorError(f"{name} is missing from {modules}: run `npm ci`")
        versions[name] = json.loads(manifest.read_text(encoding="utf-8"))["version"]
    for name, pinned in pinned_versions().items():
        if versions.get(name) != pinned:
            raise VendorError(
                f"node_modules holds {name} {versions.get(name)}, package.json pins {pinned}: "
                "run `npm ci` at the repository root"
            )
    copies = {f"{VENDOR_DIR}/{name}": modules / source for name, source in SHIPPED.items()}
    missing = [str(p) for p in copies.values() if not p.is_file()]
    if missing:
        raise VendorError(f"node_modules lacks {', '.join(missing)}: run `npm ci`")
    files = {
        f"{VENDOR_DIR}/{MODULE}": patch_module((modules / MODULE_SOURCE).read_bytes()),
        f"{VENDOR_DIR}/NOTICE.txt": notice(versions),
    }
    return Vendored(versions[PACKAGE], copies, files)


# --- the page --------------------------------------------------------------------------------


EXAMPLE_PARAM = re.compile(r"-p\s+(\w+)\s+(\S+)")


def browser_sql(query: CannedQuery) -> str:
    """A canned query as the page runs it: `$name` parameters given their example values
    (`-p NAME VALUE` in its header) as literals, which the reader may edit."""
    header = "\n".join(line for line in query.sql.splitlines() if line.startswith("--"))
    params = dict(EXAMPLE_PARAM.findall(header))
    sql = query.sql.strip()
    for name, value in params.items():
        literal = "'" + value.replace("'", "''") + "'"
        sql = re.sub(rf"\${name}\b", lambda _, lit=literal: lit, sql)
    return sql


def tables_of(data: Mapping[str, bytes]) -> list[str]:
    """The relations published as Parquet, by name."""
    prefix, suffix = f"{DATA_DIR}/", ".parquet"
    return sorted(
        p.removeprefix(prefix).removesuffix(suffix)
        for p in data
        if p.startswith(prefix) and p.endswith(suffix)
    )


FIRST_QUERY = "SELECT count(*) AS frameworks FROM frameworks"


def browser_page(data: Mapping[str, bytes], vendored: Vendored) -> str:
    """The SQL page: the editor, the canned queries as buttons and the result table; without
    DuckDB-WASM, a page that says so and points to the other ways in."""
    src = BROWSER_PAGE
    others = (
        f"The {link(src, SQL_QUERIES, 'canned queries')} are shown with their output, every "
        f"table can be {link(src, DATA_PAGE, 'downloaded')}, and `rlmguide sql` runs any "
        "query on your machine."
    )
    tables = tables_of(data)
    if not vendored.available or not tables:
        reason = vendored.reason or "the site was built without its data files"
        return document(
            "# SQL in your browser",
            '!!! warning "SQL in the browser is unavailable in this build"\n\n'
            f"    DuckDB-WASM was not shipped with this copy of the site: {html(reason)}.",
            others,
        )
    queries = [
        {"name": q.name, "title": q.title, "description": q.description, "sql": browser_sql(q)}
        for q in canned_queries().values()
    ]
    config = {
        "vendor": f"{VENDOR_DIR}/",
        "data": f"{DATA_DIR}/",
        "tables": tables,
        "queries": queries,
        "max_rows": MAX_ROWS,
        "first": FIRST_QUERY,
    }
    # `</` cannot end the script element early once escaped; JSON reads `<\/` as `</`.
    payload = json.dumps(config, indent=None, sort_keys=True).replace("</", "<\\/")
    buttons = "\n".join(
        f'<button type="button" class="md-button sql-canned" data-query="{html(q["name"])}" '
        f'title="{html(q["description"] or q["title"])}">{html(q["title"])}</button>'
        for q in queries
    )
    table_buttons = " ".join(
        f'<button type="button" class="sql-table" data-table="{html(t)}">{html(t)}</button>'
        for t in tables
    )
    return document(
        # No table of contents (the page has no sections): the results get its width.
        f"---\ntemplate: {TEMPLATE}\nhide:\n  - toc\n---",
        "# SQL in your browser",
        "Run SQL over the knowledge base here, in this tab: "
        f"[DuckDB-WASM](https://duckdb.org/docs/api/wasm/overview) {html(vendored.version)}, "
        "shipped with this site, loads every table and view from the site's own "
        f"{link(src, DATA_PAGE, 'Parquet files')}. Nothing is sent anywhere, and only "
        f"`SELECT` statements run. Tables and columns are described in the "
        f"{link(src, SQL_REFERENCE, 'SQL reference')}. The first visit downloads DuckDB-WASM, "
        f"{vendored.size() / 1e6:.0f} MB (under a quarter of that when the server compresses "
        "it), which the browser then keeps.",
        '<div class="sql-browser">\n'
        f'<p class="sql-status" role="status" aria-live="polite">Loading DuckDB-WASM…</p>\n'
        f'<div class="sql-canned-list">\n{buttons}\n</div>\n'
        '<label class="sql-label" for="sql-editor">Query '
        "<kbd>Ctrl</kbd>+<kbd>Enter</kbd> runs it</label>\n"
        f'<textarea id="sql-editor" class="sql-editor" rows="8" spellcheck="false">'
        f"{html(FIRST_QUERY)}</textarea>\n"
        '<p class="sql-actions"><button type="button" class="md-button md-button--primary '
        'sql-run" disabled>Run</button></p>\n'
        f'<p class="sql-tables">Tables and views: {table_buttons}</p>\n'
        '<div class="sql-result"></div>\n'
        f'<script type="application/json" id="sql-browser-config">{payload}</script>\n'
        "</div>",
        f"{others} Each canned query runs with one click; {code('$name')} parameters are "
        "filled in with an example value you can edit.",
    )


def browser_pages(data: Mapping[str, bytes], vendored: Vendored) -> dict[str, str]:
    return {BROWSER_PAGE: browser_page(data, vendored)} if data else {}
