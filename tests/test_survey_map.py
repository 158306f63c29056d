"""The survey map and what the knowledge base holds of the survey: its frameworks, takeaways,
research directions and Table 10 models, each checked against the shipped records."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner
from conftest import REPO, run_cli
from pydantic import ValidationError
from rlmguide.kb.db import open_knowledge_base
from rlmguide.kb.load import Catalog, load_catalog
from rlmguide.kb.paths import DEFAULT_ROOTS, RULES_ROOT
from rlmguide.kb.schema import Framework

from rlmguide.cli import cli
from rlmguide.sitegen.survey_checks import (
    Checker,
    Finding,
    Requirement,
    scenario_field,
    status_of,
)
from rlmguide.sitegen.survey_pages import (
    SURVEY,
    MapItem,
    cited_at,
    findings,
    locator_parts,
    map_summary,
    run_checks,
    survey_map,
)


@functools.cache
def shipped() -> Catalog:
    catalog = load_catalog([*DEFAULT_ROOTS, RULES_ROOT])
    assert catalog.problems == []
    return catalog


@pytest.fixture(scope="module")
def con(tmp_path_factory: pytest.TempPathFactory) -> Iterator[duckdb.DuckDBPyConnection]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RLMGUIDE_CACHE_DIR", str(tmp_path_factory.mktemp("map-cache")))
        connection = open_knowledge_base([*DEFAULT_ROOTS, RULES_ROOT])
    yield connection
    connection.close()


def survey_locator(kind: str, record_id: str) -> str | None:
    record = shipped().of(kind)[record_id]
    return getattr(record, "locators", {}).get(SURVEY)


SURVEY_FRAMEWORKS = {
    # §6.2's three classes, then the two systems only §1 names (their class is not given).
    "library-centric": ["trl", "deepspeed-chat", "colossalchat"],
    "orchestrator-centric": ["openrlhf", "verl", "skyrl", "nemo-rl", "slime", "roll", "real"],
    "scheduling-centric": [
        "rlhfuse",
        "pipe-rlhf",
        "streamrl",
        "areal",
        "asyncflow",
        "laminar",
        "staleflow",
        "mindspeed-rl",
    ],
    None: ["flexrlhf", "async-rlhf"],
}


def test_every_framework_the_survey_names_is_a_record() -> None:
    frameworks = shipped().of("framework")
    names = [fid for ids in SURVEY_FRAMEWORKS.values() for fid in ids]
    assert len(names) == 20 and set(names) <= set(frameworks)
    for survey_class, ids in SURVEY_FRAMEWORKS.items():
        for fid in ids:
            fw = frameworks[fid]
            assert isinstance(fw, Framework)
            assert fw.survey_class == survey_class, fid
            assert survey_locator("framework", fid), f"{fid} does not cite the survey's section"
            assert fw.claims, fid
    # OPPO is cited in §4.3 for pipeline overlap, not classed in §6.2.
    assert frameworks["oppo"].survey_class is None  # type: ignore[attr-defined]
    assert survey_locator("framework", "oppo") == "§4.3"


def takeaways() -> list[MapItem]:
    return [item for item in survey_map() if item.part == "takeaway"]


def test_every_takeaway_names_records_that_cite_the_survey() -> None:
    # A named record that does not exist yet is the map's own finding (the row shows partial);
    # every one that exists cites the survey where it says so.
    items = takeaways()
    assert [int(item.title.split()[0]) for item in items] == list(range(1, 29))
    for item in items:
        assert item.records, item.id
        for kind, rid in item.record_refs():
            if rid in shipped().of(kind):
                assert survey_locator(kind, rid), f"{item.id}: {kind} {rid} does not cite it"


def test_the_three_missing_takeaways_are_rules_with_examples() -> None:
    # Takeaway 21 (shared actor-critic) and 24 (library-centric stacks) can fire on a scenario;
    # takeaway 5 (reward granularity) has no scenario fact to fire on and is a statement.
    rules = shipped().of("rule")
    for rule_id, where in (
        ("shared-actor-critic-when-memory-is-scarce", "§4.7"),
        ("library-centric-stack-for-small-experiments", "§6.2"),
    ):
        assert where in locator_parts(survey_locator("rule", rule_id) or "")
        assert {e.fires for e in rules[rule_id].examples} == {True, False}  # type: ignore[attr-defined]
    tradeoffs = shipped().of("technique")["model-based-reward"].tradeoffs  # type: ignore[attr-defined]
    assert "process reward" in tradeoffs and "§2.6" in survey_locator(
        "technique", "model-based-reward"
    )


def test_the_thirteen_directions_are_records() -> None:
    directions = shipped().of("direction").values()
    seventh = sorted((d for d in directions if d.section == "§7"), key=lambda d: d.position)  # type: ignore[attr-defined]
    assert [d.position for d in seventh] == list(range(1, 14))  # type: ignore[attr-defined]
    assert seventh[12].id == "snapshot-consistent-shared-weights"
    assert {d.section for d in directions} == {"§7", "§1", "§3.6.1", "§4.4"}  # type: ignore[attr-defined]


TABLE_10 = {
    # Closed or mixed models: what is published, no architecture.
    "closed": [
        "instructgpt", "gpt-4", "gemini-1", "claude-3", "reka", "openai-o1", "openai-o3",
        "openai-o4-mini", "gpt-5", "gpt-5.4-thinking", "gpt-5.5-thinking", "claude-3.7-sonnet",
        "claude-4", "gemini-2.5-pro", "gemini-2.5-flash", "gemini-2.5-deep-think", "kimi-k1.5",
        "grok-4", "grok-4-heavy",
    ],
    # Open models with their configuration.
    "open": ["deepseek-v3", "deepseek-r1", "llama-4-scout", "llama-4-maverick", "llama-3.1-405b",
             "qwen2.5-72b", "qwen3-235b-a22b", "kimi-k2", "kimi-k2.5", "qwen2-57b-a14b",
             "gemma-2-2b", "gemma-2-9b", "gemma-2-27b", "phi-3-mini", "internlm2-7b",
             "chatglm3-6b", "phi-4", "athene-70b", "starling-lm-7b-alpha", "hermes-3-8b",
             "hermes-3-70b", "hermes-3-405b",
             "zephyr-orpo-141b-a35b", "nemotron-4-340b", "phi-4-reasoning"],
    # Open weights without a configuration read at a pinned version: what is published.
    "open, unconfigured": ["dapo-qwen-32b", "rstar-math", "internlm2-1.8b", "internlm2-20b",
                           "phi-3-small", "phi-3-medium", "glm-4-9b"],
}  # fmt: skip


def test_every_table_10_row_is_recorded() -> None:
    # Table 10's 41 rows (20 aligned LLMs, 21 RLMs) are the map's model rows, each with every
    # size it lists.
    rows = [item for item in survey_map() if item.part == "model"]
    assert len(rows) == 41
    ids = [rid for row in rows for kind, rid in row.record_refs() if kind == "model"]
    assert sorted(ids) == sorted(mid for group in TABLE_10.values() for mid in group)
    models = shipped().of("model")
    assert [mid for mid in ids if mid not in models] == []
    internlm2 = next(row for row in rows if row.title.startswith("InternLM2"))
    assert internlm2.records == [
        "model:internlm2-1.8b",
        "model:internlm2-7b",
        "model:internlm2-20b",
    ]


def test_table_10_models_are_records() -> None:
    models = shipped().of("model")
    for mid in TABLE_10["closed"]:
        model = models[mid]
        assert model.architecture is None and model.access != "open", mid  # type: ignore[attr-defined]
        assert survey_locator("model", mid) == "Table 10"
    for mid in TABLE_10["open"]:
        assert models[mid].architecture is not None, mid  # type: ignore[attr-defined]
        assert "Table 10" in locator_parts(survey_locator("model", mid) or "")
    for mid in TABLE_10["open, unconfigured"]:
        model = models[mid]
        assert model.access == "open" and model.architecture is None, mid  # type: ignore[attr-defined]
        assert model.architecture_absent and model.scale, mid  # type: ignore[attr-defined]
        assert survey_locator("model", mid) == "Table 10"
    # Llama 4's published scales (Table 10): about 109B and 400B in total, 17B active; the
    # text model alone, counted from the configuration, by hand: 107.8B / 17.2B and 400.7B / 17.2B.
    scout, maverick = models["llama-4-scout"], models["llama-4-maverick"]
    assert scout.params_total / 1e9 == pytest.approx(107.77, abs=0.01)  # type: ignore[attr-defined]
    assert maverick.params_total / 1e9 == pytest.approx(400.71, abs=0.01)  # type: ignore[attr-defined]
    for model in (scout, maverick):
        assert model.params_active / 1e9 == pytest.approx(17.18, abs=0.01)  # type: ignore[attr-defined]
    # Qwen2-57B-A14B by hand (28 layers, h 3584, head 128, 28 heads, 4 KV heads with QKV bias):
    # attention 3584*4608 + 4608 + 3584*3584 = 29,364,736 and 7,168 of norms per layer; experts
    # 3*3584*2560 = 27,525,120 each, 64 routed + the shared one written as 8 (20480 = 8 * 2560),
    # router 3584*64; embeddings 2*151936*3584; final norm 3584.
    qwen2 = models["qwen2-57b-a14b"]
    expert, layer = 27_525_120, 29_364_736 + 7_168
    embed = 2 * 151_936 * 3_584 + 3_584
    assert qwen2.params_total == 28 * (layer + 72 * expert + 3_584 * 64) + embed  # type: ignore[attr-defined]
    assert qwen2.params_total == 57_408_558_592  # type: ignore[attr-defined]
    assert qwen2.params_active == 28 * (layer + 16 * expert + 3_584 * 64) + embed  # type: ignore[attr-defined]
    # Gemma 2 by hand: Hugging Face counts 2,614,341,888 / 9,241,705,984 / 27,227,128,320
    # parameters; the architecture leaves out Gemma 2's two extra norms per layer (2 * hidden).
    for mid, layers, hidden, published in (
        ("gemma-2-2b", 26, 2_304, 2_614_341_888),
        ("gemma-2-9b", 42, 3_584, 9_241_705_984),
        ("gemma-2-27b", 46, 4_608, 27_227_128_320),
    ):
        assert models[mid].params_total + layers * 2 * hidden == published, mid  # type: ignore[attr-defined]
    # Phi-4 by hand: per layer 5120*7680 + 5120*5120 (attention, 10 KV heads of 128) +
    # 3*5120*17920 (gated MLP) + 2*5120 (norms); 40 layers, untied 100352-token embeddings.
    per_layer = 5_120 * 7_680 + 5_120 * 5_120 + 3 * 5_120 * 17_920 + 2 * 5_120
    phi4 = 40 * per_layer + 2 * 100_352 * 5_120 + 5_120
    assert models["phi-4"].params_total == phi4 == 14_659_507_200  # type: ignore[attr-defined]
    # Llama 3 70B's shapes, which Athene-70B and Hermes 3 70B keep, by hand: per layer
    # 8192*(8192 + 2*1024) (attention, 8 KV heads of 128) + 8192*8192 (output) + 3*8192*28672
    # (gated MLP) + 2*8192 (norms); 80 layers, untied 128256-token embeddings. The leaderboard
    # request files count Athene-70B at 70.554B, the same figure.
    per_layer = 8_192 * 10_240 + 8_192 * 8_192 + 3 * 8_192 * 28_672 + 2 * 8_192
    llama70 = 80 * per_layer + 2 * 128_256 * 8_192 + 8_192
    assert llama70 == 70_553_706_496
    for mid in ("athene-70b", "hermes-3-70b"):
        assert models[mid].params_total == llama70, mid  # type: ignore[attr-defined]
    assert models["hermes-3-70b"].max_context_tokens == 131_072  # type: ignore[attr-defined]
    assert models["athene-70b"].max_context_tokens == 8_192  # type: ignore[attr-defined]
    # Starling-LM-7B-alpha (Mistral-7B shapes, vocab 32002) by hand: per layer
    # 4096*(4096 + 2*1024) + 4096*4096 + 3*4096*14336 + 2*4096; 32 layers; untied embeddings.
    per_layer = 4_096 * 6_144 + 4_096 * 4_096 + 3 * 4_096 * 14_336 + 2 * 4_096
    starling = 32 * per_layer + 2 * 32_002 * 4_096 + 4_096
    assert models["starling-lm-7b-alpha"].params_total == starling == 7_241_748_480  # type: ignore[attr-defined]
    # Phi-4-reasoning keeps Phi-4's architecture (its card) with a 32k context.
    reasoning = models["phi-4-reasoning"]
    assert reasoning.params_total == phi4 and reasoning.max_context_tokens == 32_768  # type: ignore[attr-defined]
    # Zephyr 141B-A35B by hand (Mixtral-8x22B shapes): attention 6144*(6144 + 2*1024) +
    # 6144*6144 and 2*6144 of norms per layer; experts 3*6144*16384 each, 8 with router
    # 6144*8; 56 layers; untied 32000-token embeddings. The leaderboard counts 140.621B.
    attention = 6_144 * 8_192 + 6_144 * 6_144 + 2 * 6_144
    expert, router = 3 * 6_144 * 16_384, 6_144 * 8
    embed = 2 * 32_000 * 6_144 + 6_144
    zephyr = models["zephyr-orpo-141b-a35b"]
    assert zephyr.params_total == 56 * (attention + 8 * expert + router) + embed  # type: ignore[attr-defined]
    assert zephyr.params_total / 1e9 == pytest.approx(140.621, abs=0.0005)  # type: ignore[attr-defined]
    assert zephyr.params_active == 56 * (attention + 2 * expert + router) + embed  # type: ignore[attr-defined]
    # Nemotron-4 340B by hand: a plain (ungated) MLP, so 2*18432*73728; attention
    # 18432*(18432 + 2*8*192) + 18432*18432; 2*18432 norm weights; 96 layers; untied
    # 256000-token embeddings: 341.0B, the "340B-class" of Table 10.
    attention = 18_432 * (18_432 + 2 * 8 * 192) + 18_432 * 18_432
    per_layer = attention + 2 * 18_432 * 73_728 + 2 * 18_432
    nemotron = 96 * per_layer + 2 * 256_000 * 18_432 + 18_432
    assert models["nemotron-4-340b"].params_total == nemotron == 341_025_638_400  # type: ignore[attr-defined]
    # Kimi K2 as published in Table 10: 1T MoE, 32B active.
    k2 = models["kimi-k2"]
    assert k2.params_total / 1e12 == pytest.approx(1.026, abs=0.001)  # type: ignore[attr-defined]
    assert k2.params_active / 1e9 == pytest.approx(32.86, abs=0.01)  # type: ignore[attr-defined]


# §2.4.1's variants as the survey reads their compute profile: (family, critic, reference, online).
# The survey names two DPPOs (the divergence trust region [198] and dynamic pruning [286]).
SURVEY_VARIANTS = {
    "vapo": ("ppo", True, False, True),
    "rto": ("ppo", True, True, True),
    "safe-rlhf": ("ppo", True, True, True),
    "dppo-divergence": ("ppo", False, False, True),
    "mdpo": ("ppo", True, False, True),
    "dapo": ("grpo", False, False, True),
    "dppo-dynamic-pruning": ("grpo", False, False, True),
    "graph-grpo": ("grpo", False, False, True),
    "riskpo": ("grpo", False, False, True),
    "gbmpo": ("grpo", False, True, True),
    "microcoder-grpo": ("grpo", False, False, True),
    "pipo": ("grpo", False, False, True),
    "alphadpo": ("dpo", False, True, False),
    "reward-aware-po": ("dpo", False, True, False),
}


def test_section_2_4_1_variants_are_records_with_their_paper() -> None:
    algorithms = shipped().of("algorithm")
    sources = shipped().of("source")
    item = next(i for i in survey_map() if i.id == "s2.4.1")
    listed = {rid for kind, rid in item.record_refs() if kind == "algorithm"}
    # At least these (the DPO family's IPO, ORPO, SimPO and KTO may join the list).
    assert set(SURVEY_VARIANTS) | {"rloo", "remax", "maxrl"} <= listed
    for aid, (family, critic, reference, online) in SURVEY_VARIANTS.items():
        algo = algorithms[aid]
        assert (algo.variant_of, algo.needs_critic, algo.needs_reference, algo.online) == (  # type: ignore[attr-defined]
            family,
            critic,
            reference,
            online,
        ), aid
    for aid in listed - {"rloo", "remax", "dapo", "vapo"}:
        assert "§2.4.1" in locator_parts(survey_locator("algorithm", aid) or ""), aid
        cited = [sources[s].type for s in algorithms[aid].sources if s != SURVEY]  # type: ignore[attr-defined]
        # its paper, and beside it at most the code that runs it
        assert "paper" in cited and set(cited) <= {"paper", "repository"}, aid
    # Offline preference variants never generate; critic-free ones never train a value model.
    offline = {a for a in listed if not algorithms[a].online}  # type: ignore[attr-defined]
    assert {"alphadpo", "reward-aware-po"} <= offline
    assert offline.isdisjoint(a for a, profile in SURVEY_VARIANTS.items() if profile[3])
    assert not algorithms["maxrl"].needs_critic and algorithms["maxrl"].grouped  # type: ignore[attr-defined]


def test_locators_name_subsections_of_an_item() -> None:
    assert locator_parts("§4.3, §4.7; Table 9") == ["§4.3", "§4.7", "Table 9"]
    records = list(shipped().all())
    pipeline = {r.id for r in cited_at(records, ["§3.5"])}
    assert "pipeline-parallelism" in pipeline  # cited at §3.5.1
    assert "tensor-parallelism" not in pipeline
    assert {r.id for r in cited_at(records, ["Table 1"])}.isdisjoint(
        {r.id for r in cited_at(records, ["Table 10"])}
    )


def test_the_map_names_code_and_tests_that_exist() -> None:
    # Records the survey asks for may be pending (their check fails, the row shows partial);
    # code and tests named as implementing a row must be there.
    catalog = shipped()
    for item in survey_map():
        for kind, _ in item.record_refs():
            assert kind in {"technique", "rule", "algorithm", "model", "framework"}, item.id
        if item.direction:
            assert item.direction in catalog.of("direction"), item.id
        for path in item.code:
            assert (REPO / path).exists(), f"{item.id}: no {path}"
        for test in item.checked_by:
            file, name = test.split("::")
            text = (REPO / file).read_text(encoding="utf-8")
            assert re.search(rf"^def {re.escape(name)}\(", text, re.M), f"{item.id}: no {test}"


def test_every_section_table_and_algorithm_is_a_row(con: duckdb.DuckDBPyConnection) -> None:
    found = findings(shipped(), con)
    items = [i for i in survey_map() if i.part in {"section", "table", "algorithm"}]
    assert [i.id for i in items if status_of(found[i.id]) == "missing"] == []
    # Every section of §1-§7 and every table of 1-11 is an item.
    keys = {k for i in items for k in i.keys}
    for section in ("§1", "§2.1", "§2.6", "§3.1", "§3.8", "§4.1", "§4.7", "§5", "§6.2", "§7"):
        assert section in keys
    for table in range(1, 12):
        assert f"Table {table}" in keys
    for algorithm in range(1, 5):
        assert f"Algorithm {algorithm}" in keys


def test_a_requirement_is_one_check_with_its_reason() -> None:
    with pytest.raises(ValidationError, match="one of field, fact, query, column"):
        Requirement(field="plan.fusion", fact="plan.fusion", need="x")
    with pytest.raises(ValidationError, match="one of field, fact, query, column"):
        Requirement(need="x")
    with pytest.raises(ValidationError, match="need"):
        Requirement(field="plan.fusion")  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="status"):
        MapItem(id="x", part="section", title="§9", status="present")  # type: ignore[call-arg]
    assert MapItem(id="k", part="takeaway", title="1 t").checked_by


def test_status_is_what_the_checks_find() -> None:
    yes, no = Finding("a", True), Finding("b", False, "absent")
    assert status_of([yes, yes]) == "present"
    assert status_of([yes, no]) == "partial"
    assert status_of([no]) == "missing" and status_of([]) == "missing"


def test_scenario_fields_through_unions_and_options() -> None:
    # models.reward is an id, an inline model or a reward by kind: the field is in one form.
    assert scenario_field("models.reward.steps_per_response")
    assert scenario_field("workload.agent.environment.mean_seconds")
    assert scenario_field("plan.train.cp") and not scenario_field("plan.train.sp_degree")
    assert not scenario_field("models.reward.steps_per_response.x")


def test_each_check_kind_runs(con: duckdb.DuckDBPyConnection) -> None:
    checker = Checker(shipped(), con)
    assert checker.record("rule:verifier-on-cpu", cite=False).passed
    missing = checker.record("rule:no-such-rule", cite=False)
    assert not missing.passed and missing.detail == "no rule record no-such-rule"
    # A technique that does not cite the survey fails where the row must cite it.
    uncited = [t.id for t in shipped().of("technique").values() if SURVEY not in t.sources]
    assert uncited and not checker.record(f"technique:{uncited[0]}", cite=True).passed
    assert checker.path("cost/compose.py").passed and not checker.path("cost/nothing.py").passed
    assert checker.test("tests/test_survey_map.py::test_each_check_kind_runs").passed
    assert not checker.test("tests/test_survey_map.py::test_nothing").passed
    query = Requirement(query="SELECT count(*) > 40 FROM models", need="models")
    assert checker.requirement(query).passed
    empty = Requirement(query="SELECT count(*) FROM models WHERE id = 'none'", need="one model")
    assert checker.requirement(empty).detail == "one model: the query finds 0"
    assert checker.requirement(Requirement(fact="plan.fusion", need="f")).passed
    assert not checker.requirement(Requirement(field="plan.sp", need="f")).passed


def test_table_11_cells_without_a_claim_are_counted(con: duckdb.DuckDBPyConnection) -> None:
    checker = Checker(shipped(), con)
    named = checker.survey_frameworks()
    # The 20 frameworks of §1 and §6.2 (OPPO, cited at §4.3 only, is not one of them).
    assert sorted(named) == sorted(f for ids in SURVEY_FRAMEWORKS.values() for f in ids)
    disagg = checker.requirement(Requirement(column="Disagg.", need="cells"))
    unknown = sum(
        not ({"disaggregated-placement", "reward-service-disaggregation"} & claims.keys())
        for claims in named.values()
    )
    assert disagg.passed is (unknown == 0)
    if unknown:
        assert disagg.detail == f"cells: {unknown} of 20 cells have no cited claim"
    assert checker.requirement(Requirement(column="*", need="cells")).passed
    # Every cell is cited; 29 of them (StaleFlow 11, Pipe-RLHF 10, RLHFuse 8) cite sources that
    # leave the feature undocumented, counted so that the map does not pass them off as facts.
    assert checker._column("*") == (
        True,
        "0 of 260 cells have no cited claim; 29 cite sources that leave the feature undocumented",
    )


def test_page_and_command_show_the_computed_counts(con: duckdb.DuckDBPyConnection) -> None:
    found = findings(shipped(), con)
    statuses = {rid: status_of(f) for rid, f in found.items()}
    summary = map_summary(statuses)
    assert sum(summary["main"].values()) == 44 and sum(summary["finer"].values()) == 118
    result = CliRunner().invoke(cli, ["survey-map", "--all", "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["counts"] == summary
    assert {r["id"]: r["status"] for r in data["rows"]} == statuses
    process = run_cli("survey-map")
    assert process.returncode == 0, process.stderr
    main = ", ".join(f"{n} {s}" for s, n in summary["main"].items())
    assert f"main: {main}" in process.stdout
    # Only unmet rows are listed without --all, each with what fails.
    unmet = [r for r in data["rows"] if r["status"] != "present"]
    assert all(r["failing"] for r in unmet)


def test_a_row_whose_check_fails_is_partial(con: duckdb.DuckDBPyConnection) -> None:
    item = MapItem(
        id="x", part="section", title="§9", code=["cost/compose.py"],
        requires=[Requirement(field="plan.no_such_switch", need="a switch")],
    )  # fmt: skip
    found = run_checks(Checker(shipped(), con), item)
    assert status_of(found) == "partial"
    assert [f.detail for f in found if not f.passed] == [
        "a switch: no scenario field plan.no_such_switch"
    ]


def test_map_file_is_packaged() -> None:
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert "sitegen/survey_map.yaml" in pyproject
    assert Path(REPO / "rlmguide" / "sitegen" / "survey_map.yaml").exists()


def test_the_surveys_figures_of_section_3_2_1_are_results() -> None:
    results = shipped().of("result")
    share = results["survey-openrlhf-inference-share"]
    assert (share.metric, share.value, share.framework) == ("time_share", 0.9, "openrlhf")  # type: ignore[attr-defined]
    assert "[117]" in share.locator and share.source == SURVEY  # type: ignore[attr-defined]
    readme = results["openrlhf-readme-generation-share"]
    assert (readme.metric, readme.value) == ("time_share", 0.8)  # type: ignore[attr-defined]
    mi300x = results["survey-mi300x-qwen2-7b-rollout-without-tp"]
    assert (mi300x.metric, mi300x.value) == ("speedup", 4.3)  # type: ignore[attr-defined]
    assert "2.3" in mi300x.unit and "TP 2 or TP 4" in mi300x.baseline  # type: ignore[attr-defined]
    # None gives a setting, so the cost core is not scored against them.
    assert all(r.scenario is None for r in (share, readme, mi300x))  # type: ignore[attr-defined]


def test_the_seven_partial_takeaways_are_rules_with_examples() -> None:
    # Takeaways 7, 9, 10, 12, 13, 23 and 26 each rest on a rule that fires where the survey says
    # (tests/test_rule_examples.py runs every example); each cites the survey's section.
    rules = shipped().of("rule")
    by_takeaway = {
        "k7": ("forward-only-roles-as-replicas", "§3.1.1"),
        "k9": ("sequence-parallelism-for-long-training", "§3.3.1"),
        "k10": ("context-parallelism-does-not-shorten-decode", "§3.4.1"),
        "k12": ("expert-load-balance-under-rl", "§3.6.1"),
        "k13": ("stage-specific-layouts", "§3.8"),
        "k23": ("fusion-raises-peak-memory", "§4.3"),
        "k26": ("disaggregated-rollout-when-rollout-dominates", "§6.2"),
    }
    items = {item.id: item for item in takeaways()}
    for takeaway, (rule_id, section) in by_takeaway.items():
        assert f"rule:{rule_id}" in items[takeaway].records, takeaway
        assert section in locator_parts(survey_locator("rule", rule_id) or ""), rule_id
        assert {e.fires for e in rules[rule_id].examples} == {True, False}  # type: ignore[attr-defined]
