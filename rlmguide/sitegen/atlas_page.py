"""The plan atlas page: the `atlas` table of the database as a filterable, sortable table.

Read from the database, not recomputed: the rows are the ones `rlmguide sql` returns. The
filter box and the sorting are tables.js's (an `input.table-filter` names the table), so the
page needs no script of its own; numeric cells lead with their number and carry their unit,
which tables.js sorts as numbers.
"""

from __future__ import annotations

from typing import Any

import duckdb

from rlmguide.rules.atlas import TABLE
from rlmguide.sitegen.data_files import download_links
from rlmguide.sitegen.mdtext import document, front_matter, html, number, table
from rlmguide.sitegen.pages import page_of, to_page

ATLAS_PAGE = "atlas.md"
TABLE_ID = "atlas-table"
HEADERS = (
    "Model",
    "Accelerator",
    "GPUs",
    "Algorithm",
    "Placement",
    "Execution",
    "Rollout",
    "Training",
    "Step time",
    "Tokens per second",
    "Bottleneck",
    "Launch with",
    "Also launchable by",
)
QUERY = """
SELECT model_id, accelerator_id, gpus, algorithm_id, feasible, infeasible_reason, placement,
       execution, rollout_layout, train_layout, step_seconds, tokens_per_second, bottleneck,
       framework, launchable_by, launch_refused_by, ranked_for, no_launch_reason, params_b
FROM atlas ORDER BY params_b, model_id, accelerator_id, gpus, algorithm_id
"""
UNCHECKED = """
SELECT DISTINCT framework FROM (SELECT unnest(launchable_by) AS framework FROM atlas)
WHERE framework NOT IN (SELECT framework FROM mappings) ORDER BY framework
"""
"""The frameworks the rows list that have no export mapping: nothing checks their launch."""


def _link(kind: str, record_id: str) -> str:
    return to_page(ATLAS_PAGE, page_of(kind, record_id), record_id)


def atlas_row(row: dict[str, Any]) -> list[str]:
    setup = [
        _link("model", row["model_id"]),
        _link("accelerator", row["accelerator_id"]),
        str(row["gpus"]),
        _link("algorithm", row["algorithm_id"]),
    ]
    if not row["feasible"]:
        reason = html(row["infeasible_reason"])
        # The reason is long; its first clause fits the row and the rest is on hover.
        short = html(str(row["infeasible_reason"]).split(":")[0])
        # Empty cells read "unknown", which tables.js keeps last whichever way a column sorts.
        return [*setup, f'<span title="{reason}">{short}</span>', *[""] * 8]
    if row["framework"]:
        first = _link("framework", row["framework"])
        if row["ranked_for"]:
            first += " (its own ranking: the default one's runners refuse it at export)"
        others = ", ".join(_link("framework", f) for f in row["launchable_by"][1:])
    else:  # the best plan that fits, but no released framework's launch writes it
        first = f'<span title="{html(row["no_launch_reason"])}">no launchable plan</span>'
        others = "export refuses it: " + ", ".join(
            _link("framework", f) for f in row["launch_refused_by"]
        )
    return [
        *setup,
        html(row["placement"]),
        html(row["execution"]),
        html(row["rollout_layout"]),
        html(row["train_layout"]),
        f"{number(row['step_seconds'])} s",
        f"{number(row['tokens_per_second'])} tok/s",
        html(row["bottleneck"]),
        first,
        others,
    ]


def atlas_pages(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """The atlas page, or none when the database has no atlas rows (a database built by kb
    alone, or a test knowledge base without the grid's models)."""
    tables = con.execute("SELECT table_name FROM information_schema.tables").fetchall()
    if (TABLE,) not in tables:
        return {}
    cursor = con.execute(QUERY)
    names = [d[0] for d in cursor.description]
    rows = [dict(zip(names, r, strict=True)) for r in cursor.fetchall()]
    if not rows:
        return {}
    feasible = sum(1 for r in rows if r["feasible"])
    unlaunched = sum(1 for r in rows if r["feasible"] and not r["framework"])
    unchecked = [_link("framework", f) for (f,) in con.execute(UNCHECKED).fetchall()]
    text = document(
        # No side navigation or toc: thirteen columns need the page's whole width.
        front_matter(["navigation", "toc"]),
        "# Plan atlas: what to run on common setups",
        "The top plan `rlmguide recommend` gives for each setup of a grid: dense models of "
        "1.5 to 405 billion parameters and mixtures of experts up to DeepSeek-V3's 671 "
        "billion, on 8 to 4,096 H100, H200, H20, B200 and A100 GPUs (nodes of 8), with GRPO, "
        "DAPO and PPO. GRPO and DAPO sample 16 responses for each of 512 prompts, PPO one for "
        "each of 1,024 (with a critic of the policy's shape), more on large clusters so that "
        "every GPU trains at least 8 responses per optimizer step; prompts of 1,024 tokens, "
        "responses of 4,096 on average and 16,384 at most, a verifier as reward. Step time is "
        "predicted by the cost core; tokens per second counts prompt and response tokens "
        "trained per second across the cluster. A plan is one a released framework "
        "launches: *Launch with* is the first (one with an export mapping where any runs it, "
        "then the newest release), and the others follow. A framework with an export mapping "
        "is listed only where its export writes the plan, as `rlmguide recommend` lists it "
        "(`rlmguide recommend --emit FRAMEWORK` prints the launch); one whose export refuses "
        "the plan is left out (column `launch_refused_by` of the rows).",
        "Frameworks without an export mapping are listed by their claims and constraint "
        "records alone: their launch is unchecked"
        + (f" ({', '.join(unchecked)})." if unchecked else "."),
        f"{feasible} of {len(rows)} setups have a plan that fits; for the others the row says "
        "which constraint binds (hover for the figures)."
        + (
            f" Of those, {unlaunched} have no launchable plan: every released framework that "
            "runs the best plan that fits refuses it at export, and so does each mapped "
            "framework's own best plan; *Launch with* says so (hover for why) and the row "
            "shows the best plan that fits."
            if unlaunched
            else ""
        )
        + (
            f" In {own}, every runner of the default ranking's best plans refuses them at "
            "export, and the row is the fastest plan a mapped framework's own ranking "
            "(`rlmguide recommend --framework`) gives and launches."
            if (own := sum(1 for r in rows if r["ranked_for"]))
            else ""
        )
        + " For another workload, run "
        "`rlmguide recommend` with your own numbers, or query the rows with "
        '`rlmguide sql "SELECT * FROM atlas WHERE gpus = 128"`.',
        download_links(ATLAS_PAGE, "atlas"),
        f'<input class="table-filter" data-table="{TABLE_ID}" type="search" '
        'placeholder="Filter: e.g. h100 128 32b" aria-label="Filter the atlas">\n'
        f'<p class="table-count" data-table="{TABLE_ID}"></p>',
        "Type words to keep the rows that contain all of them; click a heading to sort.",
        table(HEADERS, (atlas_row(r) for r in rows), TABLE_ID, searchable=False),
    )
    return {ATLAS_PAGE: text}
