// Sorting and filtering for the site's tables: small, dependency-free, so it works offline.
// Every table in an article gets clickable headings; an <input class="table-filter"
// data-table="ID"> hides the rows of table ID that do not contain every word typed.
(function () {
  "use strict";

  // A cell's sort key: its data-sort attribute, else its text; "unknown" and empty sort last.
  function sortKey(cell) {
    if (!cell) return { missing: true };
    const raw = cell.dataset.sort !== undefined ? cell.dataset.sort : cell.textContent.trim();
    if (raw === "" || raw === "unknown") return { missing: true };
    // A number, alone or followed by its unit ("1,050 s"), sorts as a number; dates such as
    // 2025-10-01 do not match and sort as text, which orders them correctly too.
    const match = /^(-?[\d,]*\.?\d+(?:e[+-]?\d+)?)(?:\s+\S.*)?$/i.exec(raw);
    const value = match ? Number(match[1].replace(/,/g, "")) : NaN;
    return Number.isFinite(value)
      ? { missing: false, number: true, value: value }
      : { missing: false, number: false, value: raw.toLowerCase() };
  }

  function compare(a, b) {
    if (a.number && b.number) return a.value - b.value;
    return String(a.value).localeCompare(String(b.value));
  }

  function sortBy(table, column, heading) {
    const ascending = heading.getAttribute("aria-sort") !== "ascending";
    for (const other of heading.parentNode.cells) other.setAttribute("aria-sort", "none");
    heading.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    const body = table.tBodies[0];
    const rows = Array.from(body.rows);
    rows.sort(function (first, second) {
      const a = sortKey(first.cells[column]);
      const b = sortKey(second.cells[column]);
      if (a.missing || b.missing) return a.missing === b.missing ? 0 : a.missing ? 1 : -1;
      return ascending ? compare(a, b) : -compare(a, b);
    });
    for (const row of rows) body.appendChild(row);
  }

  function makeSortable(table) {
    if (!table.tHead || !table.tBodies.length || table.dataset.sortable === "yes") return;
    table.dataset.sortable = "yes";
    Array.from(table.tHead.rows[0].cells).forEach(function (heading) {
      heading.classList.add("sortable");
      heading.setAttribute("aria-sort", "none");
      heading.tabIndex = 0;
      heading.title = "Sort by this column";
      heading.addEventListener("click", function (event) {
        if (event.target.closest("a")) return; // a link in a heading still navigates
        // cellIndex at click time: the matrix moves its columns when it ranks frameworks.
        sortBy(table, heading.cellIndex, heading);
      });
      heading.addEventListener("keydown", function (event) {
        if (event.key !== "Enter" && event.key !== " ") return;
        event.preventDefault();
        sortBy(table, heading.cellIndex, heading);
      });
    });
  }

  function attachFilter(input) {
    const table = document.getElementById(input.dataset.table);
    if (!table || input.dataset.attached === "yes") return;
    input.dataset.attached = "yes";
    const count = document.querySelector('.table-count[data-table="' + input.dataset.table + '"]');
    function update() {
      const words = input.value.toLowerCase().split(/\s+/).filter(Boolean);
      const rows = table.tBodies[0].rows;
      let shown = 0;
      for (const row of rows) {
        const text = row.textContent.toLowerCase();
        const keep = words.every(function (word) { return text.includes(word); });
        row.style.display = keep ? "" : "none";
        if (keep) shown += 1;
      }
      if (count) count.textContent = shown + " of " + rows.length + " rows";
    }
    input.addEventListener("input", update);
    update();
  }

  // Tables made after the page loaded (the SQL page's results) are made sortable by their page.
  window.rlmguideTables = { makeSortable: makeSortable };

  function init() {
    document.querySelectorAll("article table").forEach(makeSortable);
    document.querySelectorAll("input.table-filter").forEach(attachFilter);
  }

  // Material publishes page loads on document$ (also with instant navigation); fall back to DOM.
  if (typeof document$ !== "undefined") document$.subscribe(init);
  else document.addEventListener("DOMContentLoaded", init);
})();
