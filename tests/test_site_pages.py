"""The page generator as a pure function: which pages it makes and what they say.

Most checks run on the small fixture knowledge base (plus one rule written here), where every
expected cell is known; a few run on the shipped records to catch what only real data has.
"""

from __future__ import annotations

import datetime as dt
import posixpath
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
from conftest import REPO
from rlmguide.kb.db import connect_read_only, ensure_database
from rlmguide.kb.load import Catalog, load_catalog
from rlmguide.kb.paths import PLURALS, RecordRoot
from rlmguide.kb.validate import validate

from rlmguide.sitegen import pages as site
from rlmguide.sitegen.formulas_page import FORMULAS_PAGE, GROUPS
from rlmguide.sitegen.generate import generate
from rlmguide.sitegen.mdtext import html, html_code, number, page_dir
from rlmguide.sitegen.notation_page import NOTATION, NOTATION_PAGE, STAGES
from rlmguide.sitegen.survey_pages import MAP_PAGE, survey_map

RULE = """\
id: colocate-small
title: Colocate on one node
topic: placement
effect: prefer
statement: On one node, prefer rollout and training on the same GPUs.
rationale: Nothing idles and the weights move in memory.
applies: cluster.gpus <= 8
condition: plan.placement == 'colocated'
sources: [paper-a]
examples:
  - description: one node of 8
    fires: true
    scenario:
      cluster: {accelerator: gpu-x, nodes: 1, gpus_per_node: 8}
      models: {policy: model-7b}
      workload: {algorithm: grpo, prompts_per_step: 8, prompt_tokens: 64, response_tokens: 64}
  - description: four nodes
    fires: false
    scenario:
      cluster: {accelerator: gpu-x, nodes: 4, gpus_per_node: 8}
      models: {policy: model-7b}
      workload: {algorithm: grpo, prompts_per_step: 8, prompt_tokens: 64, response_tokens: 64}
"""


def load(roots: tuple[RecordRoot, ...]) -> tuple[Catalog, duckdb.DuckDBPyConnection]:
    catalog = load_catalog(roots)
    errors = [p for p in validate(catalog) if p.severity == "error"]
    assert not errors, errors
    return catalog, connect_read_only(ensure_database(roots))


DEPLOYMENT = """\
id: fw-one-grpo-8gpu
name: Framework One GRPO on one node
framework: fw-one
source: repo-b
file: examples/run_grpo.sh
commit: abcdef1234567
url: https://example.org/repo-b/blob/abcdef1234567/examples/run_grpo.sh
checked: 2026-12-03
as_of: null
description: The fixture framework's GRPO example.
scenario:
  cluster: {accelerator: gpu-x, nodes: 1, gpus_per_node: 8}
  models: {policy: model-7b}
  workload: {algorithm: grpo, prompts_per_step: 64, samples_per_prompt: 8, prompt_tokens: 256,
             response_tokens: 1024}
  plan:
    placement: colocated
    execution: sync
    rollout: {gpus: 8, tp: 2}
    train: {gpus: 8, tp: 1, zero: 3}
defaults:
  - "train.recompute: full, the framework's default"
step_seconds: 42.5
step_source: paper-a
step_locator: Table 3
"""


@pytest.fixture
def small(fixture_kb: Path) -> Iterator[tuple[Catalog, dict[str, str]]]:
    """The fixture KB with one rule and one deployment, and its generated pages."""
    (fixture_kb / "rules").mkdir()
    (fixture_kb / "rules" / "colocate-small.yaml").write_text(RULE)
    (fixture_kb / "deployments").mkdir()
    (fixture_kb / "deployments" / "fw-one-grpo-8gpu.yaml").write_text(DEPLOYMENT)
    catalog, con = load(((fixture_kb, None),))
    try:
        yield catalog, generate(catalog, con)
    finally:
        con.close()


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Catalog, dict[str, str]]]:
    """The shipped records and their generated pages (built once for this module)."""
    from rlmguide.kb.paths import record_roots

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RLMGUIDE_CACHE_DIR", str(tmp_path_factory.mktemp("pages-cache")))
        patch.delenv("RLMGUIDE_RECORDS_DIR", raising=False)
        catalog, con = load(record_roots())
        try:
            yield catalog, generate(catalog, con)
        finally:
            con.close()


def record_pages(catalog: Catalog) -> set[str]:
    return {site.page_of(r.kind, r.id) for r in catalog.all()}


def nav_paths(nav: Any) -> list[str]:
    """Every page path a MkDocs nav names, in order (duplicates kept)."""
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, dict):
        return [p for value in nav.values() for p in nav_paths(value)]
    return [p for item in nav for p in nav_paths(item)]


def row_of(page: str, first_cell_text: str) -> str:
    """The HTML table row whose first cell shows `first_cell_text`."""
    for row in re.findall(r"<tr[ >].*?</tr>", page):
        first = re.sub(r"<[^>]+>", "", row.split("</td>")[0]).strip()
        if first == first_cell_text:
            return row
    raise AssertionError(f"no row for {first_cell_text!r}")


# --- the page set ----------------------------------------------------------------------------


def test_one_page_per_record_and_rule(small: tuple[Catalog, dict[str, str]]) -> None:
    catalog, pages = small
    expected = record_pages(catalog)
    assert {"rules/colocate-small.md", "deployments/fw-one-grpo-8gpu.md"} <= expected
    assert expected <= set(pages)
    overviews = {site.index_of(k) for k in PLURALS} | {
        MAP_PAGE,
        FORMULAS_PAGE,
        NOTATION_PAGE,
        site.MATRIX,
        site.FACTS_PAGE,
        site.SQL_REFERENCE,
        site.SQL_QUERIES,
    }
    assert set(pages) == expected | overviews


def test_real_records_each_get_a_page(real: tuple[Catalog, dict[str, str]]) -> None:
    catalog, pages = real
    assert record_pages(catalog) <= set(pages)
    for kind in PLURALS:
        assert len([p for p in pages if p.startswith(f"{PLURALS[kind]}/")]) >= len(catalog.of(kind))


def test_nav_names_every_page_exactly_once(real: tuple[Catalog, dict[str, str]]) -> None:
    catalog, pages = real
    listed = nav_paths(site.navigation(catalog, pages))
    assert len(listed) == len(set(listed)), "a page is listed twice"
    hidden = site.unlisted(pages)
    assert not hidden & set(listed)
    assert set(listed) | hidden == {p for p in pages if p.endswith(".md")} | set(site.HAND_WRITTEN)
    assert listed[0] == site.HOME
    # Only source records are left out, and their index stays in to list them.
    assert hidden == {site.page_of("source", s) for s in catalog.of("source")}
    assert site.index_of("source") in listed


def test_extra_pages_join_the_site_and_the_nav(small: tuple[Catalog, dict[str, str]]) -> None:
    catalog, pages = small
    more = {"plots/index.md": "# Plots\n", "results/calibration.md": "# Calibration\n"}
    merged = {**pages, **more}
    listed = nav_paths(site.navigation(catalog, merged))
    assert {"plots/index.md", "results/calibration.md"} <= set(listed)
    with pytest.raises(ValueError, match="generated twice"):
        site.merge(dict(pages), {site.MATRIX: "# again\n"})
    with pytest.raises(ValueError, match="generated twice"):
        site.merge({}, {site.HOME: "# home\n"})


def test_generation_is_deterministic(
    small: tuple[Catalog, dict[str, str]], fixture_kb: Path
) -> None:
    catalog, pages = small
    before = sorted(p.relative_to(fixture_kb) for p in fixture_kb.rglob("*"))
    _, con = load(((fixture_kb, None),))
    try:
        again = generate(catalog, con)
    finally:
        con.close()
    assert again == pages
    assert sorted(p.relative_to(fixture_kb) for p in fixture_kb.rglob("*")) == before


# --- the matrix ------------------------------------------------------------------------------


def test_matrix_cells_link_sources_and_say_unknown(small: tuple[Catalog, dict[str, str]]) -> None:
    _, pages = small
    matrix = pages[site.MATRIX]
    grpo = row_of(matrix, "GRPO")
    cells = re.findall(r"<td class=\"support-(\w+)\"[^>]*>(.*?)</td>", grpo)
    # Columns are frameworks by name: Framework One claims GRPO, Framework Two does not.
    assert [c[0] for c in cells] == ["yes", "unknown"]
    assert 'href="https://example.org/repo-b"' in cells[0][1]
    assert cells[1][1] == "unknown"
    ppo = row_of(matrix, "PPO")
    assert re.findall(r"<td class=\"support-(\w+)\"", ppo) == ["unknown", "yes"]
    assert ">no<" not in matrix  # no claim says no, and missing ones must not either
    assert 'class="matrix-find"' in matrix and 'id="framework-matrix"' in matrix


def test_claims_show_both_dates_and_the_stale_flag(small: tuple[Catalog, dict[str, str]]) -> None:
    _, pages = small
    grpo = row_of(pages[site.MATRIX], "GRPO")
    # fw-one's evidence for GRPO (2025-03-01) is over a year older than its v1.2 (2026-06-01).
    # the cell says which version the claim describes
    assert "version v1.0, source repo-b, checked 2026-12-02, as of 2025-03-01, stale yes" in grpo
    assert "(stale)</span>" in grpo
    vllm = row_of(pages[site.MATRIX], "vLLM")
    assert "as of 2026-01-10, stale no" in vllm and "(stale)" not in vllm
    page = pages["frameworks/fw-one.md"]
    assert "<th>Checked</th> <th>As of</th> <th>Stale</th>" in page
    cells = re.findall(r"<td>(.*?)</td>", row_of(page, "Tensor parallelism"))
    # Checked, as of, stale, version: an unknown evidence date leaves the flag unknown, not "no".
    assert cells[-4:] == ["2026-12-02", "unknown", "unknown", "unknown"]
    release = row_of(page, "Latest release")
    assert "v1.2 (2026-06-01, " in release and "sources/repo-b/" in release


def test_matrix_rows_carry_what_the_query_needs(small: tuple[Catalog, dict[str, str]]) -> None:
    _, pages = small
    matrix = pages[site.MATRIX]
    # The name filter reads data-name (title, id, aliases), never the claim notes.
    grpo = re.search(r'<tr data-feature="grpo" data-name="([^"]*)">', matrix)
    assert grpo is not None and grpo.group(1) == "grpo grpo"
    assert "trains with grpo" not in grpo.group(1)
    assert '<input type="checkbox" class="matrix-pick" value="grpo"' in matrix
    assert 'data-framework="fw-one" data-name="framework one"' in matrix
    # Kind reads "algorithm", not "algorithm · algorithm"; techniques keep their scope.
    assert '<td class="kind-col">algorithm</td>' in row_of(matrix, "GRPO")
    assert "algorithm · algorithm" not in matrix
    assert '<td class="kind-col">technique · intra-model</td>' in matrix
    # Out of the search index: a page of support words would match every search.
    assert '<table id="framework-matrix" class="matrix" data-search-exclude>' in matrix


def test_matrix_has_a_row_per_claimed_feature(real: tuple[Catalog, dict[str, str]]) -> None:
    catalog, pages = real
    claimed = {c.feature for fw in catalog.of("framework").values() for c in fw.claims}
    body = pages[site.MATRIX].split("<tbody>")[1]
    assert body.count("<tr data-feature=") == len(claimed)
    claims = sum(len(fw.claims) for fw in catalog.of("framework").values())
    cells = len(claimed) * len(catalog.of("framework"))
    assert body.count('class="support-unknown"') == cells - claims


# --- record pages ----------------------------------------------------------------------------


def test_framework_page_shows_every_claim(real: tuple[Catalog, dict[str, str]]) -> None:
    catalog, pages = real
    verl = catalog.of("framework")["verl"]
    page = pages["frameworks/verl.md"]
    for claim in verl.claims:
        source = catalog.of("source")[claim.source]
        assert f'href="{html(source.url)}"' in page
        assert claim.checked.isoformat() in page
        assert f"sources/{claim.source}/" in page
    assert page.count("<tr>") >= len(verl.claims)


def test_framework_page_lists_every_cited_source_and_its_results(
    real: tuple[Catalog, dict[str, str]],
) -> None:
    catalog, pages = real
    verl = catalog.of("framework")["verl"]
    page = pages["frameworks/verl.md"]
    sources = page.split("## Sources")[1]
    cited = {*verl.cited_sources(), *(c.source for c in verl.claims)}
    assert len(cited) > 10
    for source in cited:
        assert f"](../sources/{source}.md)" in sources, source
    results = [r for r in catalog.of("result").values() if r.framework == "verl"]
    measured = page.split("## Published measurements")[1].split("## Sources")[0]
    assert measured.count("<tr>") == len(results) + 1  # a heading row, then one per result
    for result in results:
        row = row_of(measured, result.id)
        assert f"<td>{number(result.value)}</td> <td>{html(result.unit)}</td>" in row


def test_deployment_page_and_index(small: tuple[Catalog, dict[str, str]]) -> None:
    catalog, pages = small
    page = pages["deployments/fw-one-grpo-8gpu.md"]
    assert "# Framework One GRPO on one node" in page
    assert '<a href="../../frameworks/fw-one/">Framework One</a>' in page
    file_link = (
        '<a href="https://example.org/repo-b/blob/abcdef1234567/examples/run_grpo.sh" '
        'title="https://example.org/repo-b/blob/abcdef1234567/examples/run_grpo.sh">'
        "<code>examples/run_grpo.sh</code> at <code>abcdef123456</code></a>"  # 12 digits shown
    )
    assert file_link in page
    assert '8 x <a href="../../accelerators/gpu-x/">' in page
    assert 'policy <a href="../../models/model-7b/">' in page and "reward verifier" in page
    assert '<a href="../../algorithms/grpo/">GRPO</a>: 64 prompts x 8 samples' in page
    # The plan as the scenario names it, the defaults list, the step time with its source.
    for field, value in [("placement", "colocated"), ("rollout.tp", "2"), ("train.zero", "3")]:
        assert f"<tr><td><code>plan.{field}</code></td> <td>{value}</td></tr>" in page
    assert "- train.recompute: full, the framework&#x27;s default" not in page
    assert "- train.recompute: full, the framework's default" in page
    assert "42.5 s (" in page and "sources/paper-a/" in page and "Table 3" in page
    index = pages[site.index_of("deployment")]
    row = row_of(index, "Framework One GRPO on one node")
    assert "<td>colocated / sync</td>" in row and row.endswith("<td>42.5</td></tr>")
    listed = nav_paths(site.navigation(catalog, pages))
    assert {"deployments/index.md", "deployments/fw-one-grpo-8gpu.md"} <= set(listed)


def test_deployment_without_a_published_time_reads_unknown(fixture_kb: Path) -> None:
    (fixture_kb / "deployments").mkdir()
    text = DEPLOYMENT.split("step_seconds:")[0].split("defaults:")[0]
    (fixture_kb / "deployments" / "fw-one-grpo-8gpu.yaml").write_text(text)
    catalog, con = load(((fixture_kb, None),))
    try:
        pages = generate(catalog, con)
    finally:
        con.close()
    page = pages["deployments/fw-one-grpo-8gpu.md"]
    assert "<tr><td>Published step time</td> <td>unknown</td></tr>" in page
    assert "None: the file sets every value." in page
    assert row_of(pages[site.index_of("deployment")], "Framework One GRPO on one node").endswith(
        "<td>unknown</td></tr>"
    )


def test_search_ranks_record_pages_over_sources(small: tuple[Catalog, dict[str, str]]) -> None:
    _, pages = small
    assert pages["techniques/tensor-parallelism.md"].startswith("---\nsearch:\n  boost: 3\n")
    assert pages["sources/paper-a.md"].startswith("---\nsearch:\n  boost: 0.5\n")
    # Front matter already there (hide) is kept, with the weight added to it.
    assert pages["frameworks/fw-one.md"].startswith(
        "---\nsearch:\n  boost: 2\nhide:\n  - toc\n---\n"
    )
    # The lists of what cites a source stay out of the index.
    assert "<ul data-search-exclude><li>" in pages["sources/paper-a.md"]


def test_missing_values_read_unknown(small: tuple[Catalog, dict[str, str]]) -> None:
    _, pages = small
    tensor = pages["techniques/tensor-parallelism.md"]
    assert "<tr><td>Work</td> <td>unknown</td></tr>" in tensor
    assert "<tr><td>Memory</td> <td>weights per GPU divided by tp</td></tr>" in tensor
    assert (
        "<p data-search-exclude>Unknown (no claim recorded) for: "
        '<a href="../../frameworks/fw-two/">Framework Two</a>.</p>'
    ) in tensor
    two = pages["frameworks/fw-two.md"]
    assert "<tr><td>Licence</td> <td>unknown</td></tr>" in two
    assert "<tr><td>Year</td> <td>unknown</td></tr>" in pages["sources/repo-b.md"]


def test_technique_page_sections(small: tuple[Catalog, dict[str, str]]) -> None:
    _, pages = small
    page = pages["techniques/tensor-parallelism.md"]
    for heading in ("## What it splits or overlaps", "## Effects", "## Trade-offs"):
        assert heading in page
    assert "## Framework support" in page and "partial" in page
    assert "[A fixture paper](../sources/paper-a.md)" in page
    taxonomy = pages[site.TAXONOMY]
    # Drawn at build time as SVG, each box a link: no Mermaid, nothing fetched at run time.
    assert "mermaid" not in taxonomy
    assert '<svg class="tree-diagram"' in taxonomy
    assert '<a href="tensor-parallelism/">' in taxonomy and ">Tensor parallelism<" in taxonomy


def test_rule_page_and_guidelines_index(small: tuple[Catalog, dict[str, str]]) -> None:
    _, pages = small
    page = pages["rules/colocate-small.md"]
    assert "On one node, prefer rollout and training on the same GPUs." in page
    assert "<code>cluster.gpus &lt;= 8</code>" in page
    assert "<code>plan.placement == &#x27;colocated&#x27;</code>" in page
    assert "### one node of 8" in page and "The rule fires." in page
    assert "### four nodes" in page and "The rule stays silent." in page
    assert "accelerator: gpu-x" in page
    assert "colocate-small/" in pages[site.index_of("rule")]
    facts = pages[site.FACTS_PAGE]
    assert "<code>cluster.gpus</code>" in row_of(facts, "cluster.gpus")
    assert "colocate-small" in row_of(facts, "plan.placement")


def test_algorithms_table_lists_the_models_each_needs(
    small: tuple[Catalog, dict[str, str]],
) -> None:
    _, pages = small
    table = pages[site.index_of("algorithm")]
    assert "<td>actor, critic</td> <td>reference, reward model</td>" in row_of(table, "PPO")
    assert "<td>actor</td> <td>reference, reward model (or a verifier)</td>" in row_of(
        table, "GRPO"
    )


def test_algorithm_pages_show_the_survey_specification(
    real: tuple[Catalog, dict[str, str]],
) -> None:
    """Algorithms 1-4 of the survey (§5) with their annotations on the algorithm pages; DPO
    is offline, with no generation step and no reward model."""
    _, pages = real
    ppo, dpo = pages["algorithms/ppo.md"], pages["algorithms/dpo.md"]
    assert "## Parallelism specification (survey §5)" in ppo
    decode = row_of(ppo, "Algorithm 1 (rollout generation shared by PPO and GRPO)")
    assert "<td>generation</td> <td>actor</td>" in decode
    assert "<td>prompts, candidates per prompt</td>" in decode
    assert "one decode step per token" in decode
    critic = [r for r in re.findall(r"<tr[ >].*?</tr>", ppo) if "<td>critic</td>" in r]
    assert any("<td>reward, reference</td>" in r for r in critic)
    assert "Algorithm 4 (DPO)" in dpo and "Algorithm 1 " not in dpo
    assert "none: offline, trains on a fixed dataset" in dpo
    assert "<td>TP, PP, SP, CP, EP</td>" in dpo
    row = row_of(pages[site.index_of("algorithm")], "DPO (Direct Preference Optimization, offline)")
    assert "<td>actor</td> <td>reference</td> <td>none</td>" in row
    orpo = row_of(
        pages[site.index_of("algorithm")],
        "ORPO (Odds Ratio Preference Optimization, reference-free, offline)",
    )
    assert "<td>actor</td> <td>none</td> <td>none</td>" in orpo


def test_matrix_page_has_the_survey_table11_view(real: tuple[Catalog, dict[str, str]]) -> None:
    """The survey's Table 11 column set as a preset view: one row per framework, its 13
    columns, each cell a cited claim or unknown."""
    catalog, pages = real
    page = pages[site.MATRIX]
    block = page[page.index('<table id="survey-table-11"') :]
    block = block[: block.index("</table>")]
    heads = re.findall(r"<th[^>]*>([^<]*)</th>", block)
    assert heads == ["Framework", "DP", "Z1", "Z2", "Z3", "TP", "CP", "EP", "PP",
                     "AC Share", "Disagg.", "Stage Fusion", "Hybrid", "Async"]  # fmt: skip
    rows = re.findall(r"<tr>.*?</tr>", block.split("<tbody>")[1])
    assert len(rows) == len(catalog.of("framework"))
    verl = next(r for r in rows if re.search(r'href="[./]*verl/"', r))
    assert verl.count("<td") == 14 and "support-yes" in verl
    assert "compare --preset table11" in page


def test_catalog_tables_have_derived_figures(real: tuple[Catalog, dict[str, str]]) -> None:
    catalog, pages = real
    h100 = catalog.of("accelerator")["h100-sxm-80gb"]
    assert f"<td>{h100.ridge_flop_per_byte:.4g}</td>" in pages[site.index_of("accelerator")]
    model = catalog.of("model")["deepseek-v3"]
    row = row_of(pages[site.index_of("model")], model.name)
    assert f"<td>{model.kv_bytes_per_token / 1024:.4g}</td>" in row
    assert "KV cache per token, bf16" in pages["models/deepseek-v3.md"]
    assert "deepseek-ai/DeepSeek-V3.1" in row_of(pages["models/deepseek-v3.md"], "Also known as")
    # A model without an architecture says why: unpublished, or open but not read at a pin.
    assert "Its architecture is not published" in pages["models/openai-o1.md"]
    dapo = pages["models/dapo-qwen-32b.md"]
    assert "Its weights are open but its architecture is not recorded" in dapo
    assert "no copy of its config.json was found at a pinned version" in dapo


def test_record_text_is_escaped(fixture_kb: Path) -> None:
    technique = fixture_kb / "techniques" / "parallelism.yaml"
    technique.write_text(
        technique.read_text().replace(
            "Root of the fixture taxonomy.", "Uses a*b and x_y < z | w [sic]."
        )
    )
    catalog, con = load(((fixture_kb, None),))
    try:
        page = generate(catalog, con)["techniques/parallelism.md"]
    finally:
        con.close()
    assert r"Uses a\*b and x\_y &lt; z | w \[sic\]." in page


# --- SQL pages -------------------------------------------------------------------------------


def test_sql_reference_documents_every_table_and_view(
    small: tuple[Catalog, dict[str, str]], fixture_kb: Path
) -> None:
    _, pages = small
    reference = pages[site.SQL_REFERENCE]
    _, con = load(((fixture_kb, None),))
    try:
        names = con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE NOT internal "
            "AND database_name = current_database() UNION ALL "
            "SELECT view_name FROM duckdb_views() WHERE NOT internal "
            "AND database_name = current_database()"
        ).fetchall()
        columns = con.execute(
            "SELECT table_name, column_name, data_type FROM duckdb_columns() "
            "WHERE database_name = current_database() AND schema_name = 'main'"
        ).fetchall()
    finally:
        con.close()
    for (name,) in names:
        assert f"\n### {name}\n" in reference
    for _, column, data_type in columns:
        assert f"<tr><td><code>{column}</code></td> <td><code>{data_type}</code></td>" in reference
    assert "derived: Arithmetic intensity" in reference  # comments come from the database
    # Names in backticks become code, in table comments (Markdown) and column comments (HTML).
    assert "(claims cite theirs in `claims.source_id`)" in reference
    assert "\\`" not in reference
    # Columns without a comment say which record field they hold, its values and its unit.
    assert "the source record's <code>type</code>; one of <code>paper</code> |" in reference
    memory = row_of(reference, "memory_gib")
    assert "the accelerator record's <code>memory_gib</code>; in GiB" in memory
    assert "the model record's <code>moe.experts</code>" in row_of(reference, "moe_experts")
    assert "the framework claim record's <code>note</code>" in reference


def test_data_downloads_cover_every_relation(
    small: tuple[Catalog, dict[str, str]], fixture_kb: Path
) -> None:
    import json

    from rlmguide.kb.db import ensure_database

    from rlmguide.sitegen.data_files import DATA_PAGE, data_files

    catalog, _ = small
    database = ensure_database(((fixture_kb, None),))
    files = data_files(database, dt.date(2025, 1, 2))
    assert files == data_files(database, dt.date(2025, 1, 2))  # the same bytes every time
    assert "data/kb_meta.csv" not in files  # its build time would change them
    frameworks = files["data/frameworks.csv"].decode().splitlines()
    assert frameworks[0].startswith("id,") and frameworks[1].startswith("fw-one,")
    rows = json.loads(files["data/framework_matrix.json"])
    assert {r["framework_id"] for r in rows} == {"fw-one", "fw-two"}
    assert files["data/claims.parquet"].startswith(b"PAR1")
    _, con = load(((fixture_kb, None),))
    try:
        pages = generate(catalog, con, data=files)
    finally:
        con.close()
    reference = pages[site.SQL_REFERENCE]
    section = reference.split("### frameworks\n")[1].split("<table>")[0]
    assert "Download: [CSV](../data/frameworks.csv) · [JSON]" in section
    assert "[Parquet](../data/claims.parquet)" in reference
    assert "[JSON](../data/framework_matrix.json)" in pages[DATA_PAGE]


def test_canned_queries_show_their_output(small: tuple[Catalog, dict[str, str]]) -> None:
    from rlmguide.kb.query import canned_queries

    _, pages = small
    page = pages[site.SQL_QUERIES]
    for query in canned_queries().values():
        assert f"`rlmguide query {query.name}`" in page
    assert "Output with `-p feature asynchronous-execution`:" in page
    assert "needs parameters" not in page
    assert "<td>fw-one</td>" in page  # frameworks appear in the matrix query's output


# --- links -----------------------------------------------------------------------------------

MARKDOWN_LINK = re.compile(r"\]\(([^)\s]+)\)")
HTML_LINK = re.compile(r'href="([^"]+)"')


def resolve(page: str, target: str, markdown: bool) -> str:
    """The page folder a link names: Markdown links name files, HTML links served folders."""
    base = posixpath.dirname(page) if markdown else page_dir(page)
    joined = posixpath.normpath(posixpath.join(base, target.split("#")[0]))
    if markdown:
        return page_dir(joined)
    return "" if joined == "." else joined


def test_every_internal_link_names_a_page(real: tuple[Catalog, dict[str, str]]) -> None:
    _, pages = real
    known = {page_dir(p) for p in (*pages, *site.HAND_WRITTEN)}
    broken = []
    for path, text in pages.items():
        for markdown, pattern in ((True, MARKDOWN_LINK), (False, HTML_LINK)):
            for target in pattern.findall(text):
                if target.startswith(("http://", "https://")):
                    continue
                if resolve(path, target, markdown) not in known:
                    broken.append(f"{path}: {target}")
    assert not broken, broken[:20]


def test_edit_paths_name_record_files(real: tuple[Catalog, dict[str, str]]) -> None:
    catalog, pages = real
    paths = site.edit_paths(catalog)
    assert set(paths) == record_pages(catalog)
    assert paths["frameworks/verl.md"] == "kb/records/frameworks/verl.yaml"
    for page, file in paths.items():
        assert page in pages
        assert (REPO / file).is_file(), file


def test_results_nav_groups_measurements_by_framework(real: tuple[Catalog, dict[str, str]]) -> None:
    catalog, pages = real
    merged = {**pages, "results/calibration.md": "# Calibration\n"}
    [results] = [e["Results"] for e in site.navigation(catalog, merged) if "Results" in e]
    assert results[0] == "results/index.md"
    assert results[1] == {"Calibration": "results/calibration.md"}
    groups = {title: entries for e in results[2:] for title, entries in e.items()}
    verl = {path for entry in groups["verl"] for path in entry.values()}
    assert "results/verl-dpsk-deepseek-v3-96gpu-step.md" in verl
    assert max(len(entries) for entries in groups.values()) < len(catalog.of("result")) / 2


def test_rule_pages_link_their_techniques_and_the_frameworks_claiming_them(
    real: tuple[Catalog, dict[str, str]],
) -> None:
    _, pages = real
    page = pages["rules/prefix-caching-for-groups.md"]
    assert "## Techniques and the frameworks that implement them" in page
    assert 'href="../../techniques/prefix-caching/"' in page
    assert 'href="../../frameworks/verl/"' in page
    # Every rule names at least one technique unless it is about a model, algorithm or framework
    # choice.
    bare = sorted(p for p, text in pages.items() if p.startswith("rules/")
                  and p not in ("rules/index.md", "rules/facts.md")
                  and "## Techniques and the frameworks" not in text)  # fmt: skip
    assert bare == [
        "rules/critic-free-with-verifiable-rewards.md",
        "rules/library-centric-stack-for-small-experiments.md",
        "rules/verifier-on-cpu.md",
    ]


def test_formulas_page_states_every_formula_the_code_evaluates(
    real: tuple[Catalog, dict[str, str]],
) -> None:
    from rlmguide.cost.survey_formula import FORMULAS

    page = real[1][FORMULAS_PAGE]
    assert {f.table for f in FORMULAS} == set(GROUPS)  # no formula left out of a group
    assert len(FORMULAS) >= 40
    for f in FORMULAS:
        row = row_of(page, html(f.name))
        assert html_code(f.text) in row and html_code(f.function) in row, f.name
    decode = row_of(page, "Decode FLOPs of one rollout (closed form)")
    assert "4L_π d_π((T-1)S + (T-1)T/2)" in decode and "cost.survey_model.decode_flops" in decode
    assert "2P + 2P/P_z" in row_of(page, "ZeRO-1 (optimizer states sharded)")
    # The survey is cited with the tables and sections the page states.
    assert "(2026), Table 3, Table 4, Table 7, Table 8, §3.7.1, Table 9, Appendix B, §7:" in page
    # The agentic rollout's formulas sit beside the survey's, from the code that evaluates them.
    from rlmguide.cost.agentic import FORMULAS as AGENTIC

    assert "## Beyond the survey: agentic episodes" in page
    for quantity, formula, _ in AGENTIC:
        assert html_code(formula) in row_of(page, html(quantity)), quantity


def _has_path(obj: Any, path: list[str]) -> bool:
    for name in path:
        if name not in type(obj).model_fields:
            return False
        obj = getattr(obj, name)
    return True


def test_notation_page_names_fields_and_functions_that_exist(
    real: tuple[Catalog, dict[str, str]],
) -> None:
    import dataclasses
    import importlib

    from rlmguide.cost import survey_iteration, survey_model
    from rlmguide.rules.facts import STAGES as JSON_STAGES
    from rlmguide.rules.scenario import read_scenario

    catalog, pages = real
    page = pages[NOTATION_PAGE]
    scenario = read_scenario(REPO / "examples" / "grpo-qwen2.5-7b-8xh100.yaml")
    moe = catalog.of("model")["deepseek-v3"]
    classes = {
        "Iteration": survey_iteration.Iteration,
        "SurveyShape": survey_model.SurveyShape,
        "Degrees": survey_model.Degrees,
    }
    for symbol in NOTATION:
        for field in symbol.fields:
            head, *rest = field.split(".")
            owner = moe if head == "model" else getattr(scenario, head)
            assert _has_path(owner, rest), field
        if symbol.survey_input:
            name, attribute = symbol.survey_input.split(".")
            cls = classes[name]
            known = {f.name for f in dataclasses.fields(cls)}
            assert attribute in known or isinstance(getattr(cls, attribute, None), property)
        row = row_of(page, html(symbol.symbol))
        assert all(html_code(f) in row for f in symbol.fields), symbol.symbol
    # The JSON `stages` of recommend and estimate carry these names, in this order.
    assert tuple(s.json_stage for s in STAGES) == JSON_STAGES
    for stage in STAGES:
        module, function = stage.function.rsplit(".", 1)
        assert callable(getattr(importlib.import_module(module), function)), stage.function
        assert html_code(stage.function) in row_of(page, html(stage.survey))
    assert "(2026), Table 1, Appendix A:" in page


def test_survey_map_directions_and_locators(real: tuple[Catalog, dict[str, str]]) -> None:
    catalog, pages = real
    survey = pages[MAP_PAGE]
    items = survey_map()
    for item in items:
        assert html(item.title) in survey, item.id
    # The counts and each row's status are computed by the checks (tests/test_survey_map.py);
    # a row whose check fails shows partial with what fails.
    counted = r"\d+ present, \d+ partial, \d+ missing"
    assert re.search(rf"Sections, tables and algorithms: {counted}", survey)
    assert re.search(rf"Finer rows: {counted}", survey)
    sequence = row_of(survey, "§3.3 Sequence parallelism")
    # HTML, not markdown: inside a raw HTML table "**present**" shows its asterisks.
    assert "<strong>present</strong>" in sequence
    assert "a plan switch (plan.train.sequence_parallel" in sequence
    assert "../directions/tools-as-operators/" in survey
    # A takeaway row links the rule it rests on; a section row gains the records whose
    # locators name it (the pipeline-parallelism technique cites §3.5.1).
    assert "library-centric-stack-for-small-experiments/" in row_of(
        survey, "24 Small experiments: library-centric stacks"
    )
    assert "../techniques/pipeline-parallelism/" in row_of(survey, "§3.5 Pipeline parallelism")
    assert "../directions/snapshot-consistent-shared-weights/" in survey
    direction = pages[site.page_of("direction", "asynchronous-stale-data-rl")]
    assert "Asynchronous and stale-data RL" in direction and "§7, item 8" in direction
    assert "../../techniques/staleness-correction/" in direction
    assert "../../frameworks/areal/" in direction
    assert len(catalog.of("direction")) == 16
    assert "snapshot-consistent-shared-weights/" in pages[site.index_of("direction")]
    # Citations show where in the survey a record rests.
    technique = pages[site.page_of("technique", "stage-fusion")]
    assert "(2026), §4.3, §4.7, Table 9:" in technique
    source = pages[site.page_of("source", "arxiv-2608.27046")]
    assert "Shared actor-critic (§4.1, §4.6, §4.7, Table 9, Table 11)" in source
    # A closed model has a page of what is published and a row of its own on the index.
    o3 = pages[site.page_of("model", "openai-o3")]
    assert "cannot cost it" in o3 and "hybrid RL over chains of thought and tool use" in o3
    models = pages[site.index_of("model")]
    assert "## Models without a published architecture" in models
    assert "openai-o3/" in row_of(models, "OpenAI o3")
    nav = nav_paths(site.navigation(catalog, pages))
    assert MAP_PAGE in nav and site.index_of("direction") in nav
    # A framework page states the survey's class for it, or that it has none.
    staleflow = pages[site.page_of("framework", "staleflow")]
    assert "scheduling-centric" in row_of(staleflow, "Class in the survey (§6.2)")
    oppo = pages[site.page_of("framework", "oppo")]
    assert "centric" not in row_of(oppo, "Class in the survey (§6.2)")


def test_survey_pages_say_why_a_cell_is_empty(real: tuple[Catalog, dict[str, str]]) -> None:
    # "unknown" is for a fact nobody published; a formula with no reading note, or a symbol
    # with nothing to add, is not one.
    for page in (FORMULAS_PAGE, NOTATION_PAGE, MAP_PAGE):
        assert "<td>unknown</td>" not in real[1][page], page
    assert "as stated: its inputs are the survey's own symbols" in real[1][FORMULAS_PAGE]
