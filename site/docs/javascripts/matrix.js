// The comparison matrix as a query (rlmguide.matrix_page writes the table and its controls).
// Tick features: the framework columns that remain support all of them (or, with "any", at
// least one, most first); the feature box matches feature names only, never claim notes; the
// state is kept in the address (?features=a,b&frameworks=...&partial=1&any=1&find=...) so an
// answer can be linked. Dependency-free, so it works offline.
(function () {
  "use strict";

  const FIRST_FRAMEWORK = 2; // columns before the frameworks: feature, kind

  function words(text) {
    return text.toLowerCase().split(/[\s,]+/).filter(Boolean);
  }

  function setup() {
    const table = document.getElementById("framework-matrix");
    const tools = document.querySelector(".matrix-tools");
    if (!table || !tools || table.dataset.matrix === "yes") return;
    table.dataset.matrix = "yes";
    const find = tools.querySelector(".matrix-find");
    const frameworks = tools.querySelector(".matrix-frameworks");
    const partial = tools.querySelector(".matrix-partial");
    const any = tools.querySelector(".matrix-any");
    const answer = document.querySelector(".matrix-answer");
    const headRow = table.tHead.rows[0];
    const body = table.tBodies[0];
    const rows = Array.from(body.rows);
    const byFeature = new Map(rows.map(function (row) { return [row.dataset.feature, row]; }));
    // Columns are moved when ranking, so each framework is found by id, never by position.
    const heads = Array.from(headRow.cells).slice(FIRST_FRAMEWORK);
    const ids = heads.map(function (head) { return head.dataset.framework; });
    const cellsOf = new Map(); // row -> framework id -> cell
    for (const row of [headRow, ...rows]) {
      const cells = new Map();
      Array.from(row.cells).slice(FIRST_FRAMEWORK).forEach(function (cell, i) {
        cells.set(ids[i], cell);
      });
      cellsOf.set(row, cells);
    }
    rows.forEach(function (row, i) { row.dataset.order = String(i); });
    let picks = [];

    function has(row, id) {
      const cell = cellsOf.get(row).get(id);
      return cell.classList.contains("support-yes") ||
        (partial.checked && cell.classList.contains("support-partial"));
    }

    function readAddress() {
      const params = new URLSearchParams(window.location.search);
      picks = (params.get("features") || "").split(",").filter(function (id) {
        return byFeature.has(id);
      });
      frameworks.value = params.get("frameworks") || "";
      find.value = params.get("find") || "";
      partial.checked = params.get("partial") === "1";
      any.checked = params.get("any") === "1";
    }

    function writeAddress() {
      const params = new URLSearchParams(window.location.search);
      const state = {
        features: picks.join(","),
        frameworks: frameworks.value.trim(),
        find: find.value.trim(),
        partial: partial.checked ? "1" : "",
        any: any.checked ? "1" : "",
      };
      for (const [key, value] of Object.entries(state)) {
        if (value) params.set(key, value);
        else params.delete(key);
      }
      const query = params.toString();
      const address = window.location.pathname + (query ? "?" + query : "") + window.location.hash;
      window.history.replaceState(null, "", address);
    }

    function placeRows() {
      // Picked features on top in the order they were picked, then the rest as built.
      const rest = rows.filter(function (row) { return !picks.includes(row.dataset.feature); });
      rest.sort(function (a, b) { return Number(a.dataset.order) - Number(b.dataset.order); });
      for (const row of [...picks.map(function (id) { return byFeature.get(id); }), ...rest]) {
        body.appendChild(row);
      }
    }

    function update() {
      const picked = picks.map(function (id) { return byFeature.get(id); });
      const named = words(frameworks.value);
      const score = new Map(ids.map(function (id) {
        return [id, picked.filter(function (row) { return has(row, id); }).length];
      }));
      const keep = new Set(ids.filter(function (id, i) {
        const name = heads[i].dataset.name;
        if (named.length && !named.some(function (w) { return name.includes(w) || id.includes(w); })) {
          return false;
        }
        if (!picked.length) return true;
        return any.checked ? score.get(id) > 0 : score.get(id) === picked.length;
      }));
      // Most picked features first; ties keep the alphabetical order the table was built in.
      const order = ids.slice().sort(function (a, b) {
        return score.get(b) - score.get(a) || ids.indexOf(a) - ids.indexOf(b);
      });
      for (const row of [headRow, ...rows]) {
        const cells = cellsOf.get(row);
        for (const id of order) {
          const cell = cells.get(id);
          cell.hidden = !keep.has(id);
          row.appendChild(cell);
        }
      }
      heads.forEach(function (head, i) {
        head.dataset.score = picked.length ? score.get(ids[i]) + "/" + picked.length : "";
      });

      const terms = words(find.value);
      let shown = 0;
      for (const row of rows) {
        const isPicked = picks.includes(row.dataset.feature);
        const box = row.querySelector(".matrix-pick");
        box.checked = isPicked;
        let visible;
        if (terms.length) {
          visible = isPicked || terms.every(function (t) { return row.dataset.name.includes(t); });
        } else {
          visible = isPicked || !picked.length;
        }
        row.hidden = !visible;
        if (visible) shown += 1;
      }
      table.classList.toggle("matrix-querying", picked.length > 0);
      say(picked, order.filter(function (id) { return keep.has(id); }), shown);
      writeAddress();
    }

    function say(picked, kept, shown) {
      answer.textContent = "";
      const features = shown + " of " + rows.length + " features shown. ";
      if (!picked.length) {
        answer.append(features + "Tick features to keep the frameworks that support all of them.");
        return;
      }
      const level = partial.checked ? "yes or partial" : "yes";
      const how = any.checked ? "at least one of the " : "all ";
      answer.append(
        features + kept.length + " framework" + (kept.length === 1 ? "" : "s") + " with " +
        how + picked.length + " picked (" + level + "): "
      );
      kept.forEach(function (id, i) {
        const link = heads[ids.indexOf(id)].querySelector("a").cloneNode(true);
        link.className = "matrix-answer-framework";
        if (i) answer.append(", ");
        answer.append(link);
      });
      if (!kept.length) answer.append("none");
      answer.append(".");
    }

    table.addEventListener("change", function (event) {
      const box = event.target.closest(".matrix-pick");
      if (!box) return;
      picks = picks.filter(function (id) { return id !== box.value; });
      if (box.checked) picks.push(box.value);
      placeRows();
      update();
    });
    for (const input of [find, frameworks]) input.addEventListener("input", update);
    for (const box of [partial, any]) box.addEventListener("change", update);
    tools.querySelector(".matrix-clear").addEventListener("click", function () {
      picks = [];
      find.value = "";
      frameworks.value = "";
      placeRows();
      update();
    });

    readAddress();
    placeRows();
    update();
  }

  // Material publishes page loads on document$ (also with instant navigation); fall back to DOM.
  if (typeof document$ !== "undefined") document$.subscribe(setup);
  else document.addEventListener("DOMContentLoaded", setup);
})();
