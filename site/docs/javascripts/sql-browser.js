// The SQL page (rlmguide/sql_browser.py): DuckDB-WASM, shipped inside the site under
// vendor/duckdb-wasm/, loads the knowledge base from the site's Parquet files and runs the
// reader's SELECT statements in a worker. Every file comes from this site: nothing leaves it.
// Only this page loads this module (its template adds it).

const root = document.querySelector(".sql-browser");
const config = JSON.parse(document.getElementById("sql-browser-config").textContent);
// This file is javascripts/sql-browser.js: the site's root is one folder up, wherever it is served.
const SITE = new URL("../", import.meta.url);
const VENDOR = new URL(config.vendor, SITE);

const ui = {
  status: root.querySelector(".sql-status"),
  editor: root.querySelector(".sql-editor"),
  run: root.querySelector(".sql-run"),
  result: root.querySelector(".sql-result"),
};

let conn = null;
let Arrow = null;

function setState(state, message) {
  root.dataset.state = state;
  ui.status.textContent = message;
  ui.status.classList.toggle("sql-error", state === "error" || state === "failed");
}

function loadScript(url) {
  return new Promise(function (resolve, reject) {
    const script = document.createElement("script");
    script.src = url;
    script.onload = resolve;
    script.onerror = function () { reject(new Error("could not load " + url)); };
    document.head.appendChild(script);
  });
}

const ident = (name) => '"' + name.replace(/"/g, '""') + '"';
const literal = (text) => "'" + text.replace(/'/g, "''") + "'";
const seconds = (ms) => (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + " s";

async function start() {
  const begun = performance.now();
  setState("loading", "Loading DuckDB-WASM…");
  // Arrow's own build defines globalThis.Arrow; the vendored module reads it from there.
  if (!globalThis.Arrow) await loadScript(new URL("arrow.js", VENDOR).href);
  Arrow = globalThis.Arrow;
  const duckdb = await import(new URL("duckdb-browser.mjs", VENDOR).href);
  const worker = new Worker(new URL("duckdb-browser-eh.worker.js", VENDOR).href);
  const db = new duckdb.AsyncDuckDB(new duckdb.VoidLogger(), worker);
  await db.instantiate(new URL("duckdb-eh.wasm", VENDOR).href);
  await db.open({ query: { castBigIntToDouble: true, castDecimalToDouble: true } });
  conn = await db.connect();
  // Never reach for an extension over the network: Parquet and JSON are built in.
  await conn.query("SET autoinstall_known_extensions = false");
  await conn.query("SET autoload_known_extensions = false");

  setState("loading", "Loading " + config.tables.length + " tables…");
  // DuckDB-WASM would fetch its Parquet reader from an extension server: parquet-wasm, shipped
  // beside it, turns each Parquet file into an Arrow stream, which DuckDB reads natively.
  const parquet = await import(new URL("parquet_wasm.js", VENDOR).href);
  await parquet.default({ module_or_path: new URL("parquet_wasm_bg.wasm", VENDOR).href });
  const streams = await Promise.all(config.tables.map(async function (name) {
    const url = new URL(config.data + name + ".parquet", SITE);
    const response = await fetch(url);
    if (!response.ok) throw new Error("could not load " + url + " (" + response.status + ")");
    const table = parquet.readParquet(new Uint8Array(await response.arrayBuffer()));
    return [name, table.intoIPCStream()];
  }));
  for (const [name, stream] of streams) {
    await conn.insertArrowFromIPCStream(stream, { name: name, create: true });
  }
  // The reader's statements cannot reach files or the network, nor change settings back.
  await conn.query("SET enable_external_access = false");
  await conn.query("SET lock_configuration = true");
  root.dataset.readyMs = String(Math.round(performance.now() - begun));
  setState("ready", "Ready: " + config.tables.length + " tables loaded in " +
    seconds(performance.now() - begun) + ".");
  ui.run.disabled = false;
}

// Only queries run. DuckDB-WASM has no statement-kind API without its JSON extension (which
// it would also fetch from elsewhere), so the text is read here: comments and quoted text
// dropped, one statement, starting as a query does, with no data-changing verb anywhere (a
// WITH clause may lead into INSERT, UPDATE or DELETE). Each query also runs in a transaction
// that is rolled back, so whatever got past this changes nothing.
const QUERY_START = new Set(["SELECT", "WITH", "FROM", "VALUES", "TABLE", "DESCRIBE", "SHOW",
  "SUMMARIZE", "PIVOT", "UNPIVOT"]);
const CHANGES = new Set(["INSERT", "UPDATE", "DELETE", "MERGE", "TRUNCATE", "UPSERT"]);

function bare(sql) {
  return sql.replace(/--[^\n]*|\/\*[\s\S]*?(\*\/|$)|'(?:[^']|'')*('|$)|"(?:[^"]|"")*("|$)|\$\$[\s\S]*?(\$\$|$)/g,
    (match) => (match[0] === '"' ? " x " : " '' "));
}

function refuseAllButQueries(sql) {
  const statements = bare(sql).split(";").filter((part) => part.trim() !== "");
  if (statements.length === 0) throw new Error("Type a query first.");
  if (statements.length > 1) {
    throw new Error("One statement at a time, please (this text holds " + statements.length + ").");
  }
  const words = (statements[0].match(/[A-Za-z_][A-Za-z0-9_$]*/g) || []).map((w) => w.toUpperCase());
  const verb = words.find((word) => CHANGES.has(word));
  if (!QUERY_START.has(words[0]) || verb) {
    throw new Error("Only queries (SELECT …) run here: the knowledge base on this page is " +
      "read-only" + (verb ? " (" + verb + " changes data)." : "."));
  }
}

function text(value, type) {
  if (value === null || value === undefined) return null;
  const T = Arrow.DataType;
  if (T.isDate(type) || T.isTimestamp(type)) {
    const date = value instanceof Date ? value : new Date(Number(value));
    if (Number.isNaN(date.getTime())) return String(value);
    const iso = date.toISOString();
    return T.isDate(type) ? iso.slice(0, 10) : iso.replace("T", " ").replace(/(\.000)?Z$/, "");
  }
  if ((T.isList(type) || T.isFixedSizeList(type)) && value && value.length !== undefined) {
    const child = type.children[0].type;
    return "[" + Array.from(value, (v) => text(v, child) ?? "NULL").join(", ") + "]";
  }
  switch (typeof value) {
    case "string": return value;
    case "number": return String(value);
    case "bigint": return value.toString();
    case "boolean": return value ? "true" : "false";
  }
  if (value && typeof value.toJSON === "function") {
    return JSON.stringify(value.toJSON(), (k, v) => (typeof v === "bigint" ? v.toString() : v));
  }
  return String(value);
}

function render(fields, rows, more, elapsed) {
  ui.result.replaceChildren();
  // No class: Material styles the tables of an article that have none.
  const table = document.createElement("table");
  const head = table.createTHead().insertRow();
  for (const field of fields) {
    const th = document.createElement("th");
    th.textContent = field.name;
    head.appendChild(th);
  }
  const body = table.createTBody();
  for (const row of rows) {
    const tr = body.insertRow();
    row.forEach(function (value) {
      const td = tr.insertCell();
      if (value === null) {
        // NULL reads "unknown", as everywhere on the site (and sorts last).
        td.textContent = "unknown";
        td.className = "support-unknown";
      } else {
        td.textContent = value;
      }
    });
  }
  const wrap = document.createElement("div");
  wrap.className = "md-typeset__scrollwrap";
  const inner = document.createElement("div");
  inner.className = "md-typeset__table";
  inner.appendChild(table);
  wrap.appendChild(inner);
  const note = document.createElement("p");
  note.className = "sql-count";
  const shown = rows.length + (rows.length === 1 ? " row" : " rows");
  note.textContent = (more ? "First " + shown + " (the query returns more)" : shown) +
    " in " + seconds(elapsed) + ". Click a heading to sort.";
  ui.result.append(note, wrap);
  if (window.rlmguideTables) window.rlmguideTables.makeSortable(table);
}

async function run(sql) {
  if (!conn || ui.run.disabled) return;
  ui.run.disabled = true;
  let inTransaction = false;
  const begun = performance.now();
  setState("running", "Running…");
  try {
    refuseAllButQueries(sql);
    await conn.query("BEGIN TRANSACTION");
    inTransaction = true;
    // Streamed, so a huge result stops at max_rows instead of filling the tab's memory.
    const reader = await conn.send(sql, true);
    let fields = reader.schema ? reader.schema.fields : [];
    const rows = [];
    let more = false;
    for await (const batch of reader) {
      fields = batch.schema.fields;
      const columns = fields.map((_, i) => batch.getChildAt(i));
      for (let r = 0; r < batch.numRows; r++) {
        if (rows.length >= config.max_rows) { more = true; break; }
        rows.push(columns.map((column, i) => text(column.get(r), fields[i].type)));
      }
      if (more) break;
    }
    if (more) await conn.cancelSent();
    const elapsed = performance.now() - begun;
    render(fields, rows, more, elapsed);
    setState("done", "Done.");
    const address = new URL(location.href);
    address.searchParams.set("sql", sql);
    history.replaceState(null, "", address);
  } catch (error) {
    ui.result.replaceChildren();
    setState("error", String(error.message || error).split("\n")[0]);
  } finally {
    if (inTransaction) await conn.query("ROLLBACK").catch(() => undefined);
    ui.run.disabled = false;
  }
}

function wire() {
  ui.run.addEventListener("click", () => run(ui.editor.value));
  ui.editor.addEventListener("keydown", function (event) {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      run(ui.editor.value);
    }
  });
  const queries = new Map(config.queries.map((q) => [q.name, q]));
  root.querySelectorAll("button.sql-canned").forEach(function (button) {
    button.addEventListener("click", function () {
      ui.editor.value = queries.get(button.dataset.query).sql;
      run(ui.editor.value);
    });
  });
  root.querySelectorAll("button.sql-table").forEach(function (button) {
    button.addEventListener("click", function () {
      ui.editor.value = "SELECT * FROM " + ident(button.dataset.table) + " LIMIT 100";
      run(ui.editor.value);
    });
  });
}

wire();
// A linked query (?sql=...) is shown at once and run as soon as the tables are in.
const linked = new URL(location.href).searchParams.get("sql");
if (linked) ui.editor.value = linked;
start().then(
  function () { if (linked) run(linked); },
  function (error) {
    setState("failed", "SQL in the browser could not start: " + String(error.message || error));
  }
);
