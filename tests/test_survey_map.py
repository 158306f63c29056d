"""The survey map and what the knowledge base holds of the survey: its frameworks, takeaways,
research directions and Table 10 models, each checked against the shipped records."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest
from conftest import REPO
from rlmguide.kb.load import Catalog, load_catalog
from rlmguide.kb.paths import DEFAULT_ROOTS, RULES_ROOT
from rlmguide.kb.schema import Framework

from rlmguide.sitegen.survey_pages import SURVEY, MapItem, cited_at, locator_parts, survey_map


@functools.cache
def shipped() -> Catalog:
    catalog = load_catalog([*DEFAULT_ROOTS, RULES_ROOT])
    assert catalog.problems == []
    return catalog


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
    items = takeaways()
    assert [int(item.title.split()[0]) for item in items] == list(range(1, 29))
    for item in items:
        assert item.records, item.id
        for kind, rid in item.record_refs():
            assert rid in shipped().of(kind), f"{item.id}: unknown {kind} {rid}"
            assert survey_locator(kind, rid), f"{item.id}: {kind} {rid} does not cite the survey"


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
             "chatglm3-6b", "phi-4", "athene-70b", "starling-lm-7b-alpha", "hermes-3-70b",
             "zephyr-orpo-141b-a35b", "nemotron-4-340b", "phi-4-reasoning"],
    # Open weights without a configuration read at a pinned version: what is published.
    "open, unconfigured": ["dapo-qwen-32b", "rstar-math"],
}  # fmt: skip


# Table 10's 41 rows (20 aligned LLMs, 21 RLMs), each with the records that stand for it.
TABLE_10_ROWS = {
    "InstructGPT": ["instructgpt"], "GPT-4": ["gpt-4"], "Gemini 1.x": ["gemini-1"],
    "Claude 3": ["claude-3"], "Reka": ["reka"], "InternLM2": ["internlm2-7b"],
    "Zephyr": ["zephyr-orpo-141b-a35b"], "Phi-3": ["phi-3-mini"], "Phi-4": ["phi-4"],
    "ChatGLM": ["chatglm3-6b"], "Gemma 2": ["gemma-2-2b", "gemma-2-9b", "gemma-2-27b"],
    "Starling-7B": ["starling-lm-7b-alpha"], "Hermes 3": ["hermes-3-70b"],
    "Athene-70B": ["athene-70b"], "Llama 3 & 3.1": ["llama-3.1-405b"],
    "Qwen2 & Qwen2.5": ["qwen2.5-72b", "qwen2-57b-a14b"], "Nemotron-4 340B": ["nemotron-4-340b"],
    "DeepSeek-V3": ["deepseek-v3"], "Llama 4 Scout": ["llama-4-scout"],
    "Llama 4 Maverick": ["llama-4-maverick"],
    "OpenAI o1": ["openai-o1"], "OpenAI o3": ["openai-o3"], "OpenAI o4-mini": ["openai-o4-mini"],
    "GPT-5": ["gpt-5"], "GPT-5.4 Thinking": ["gpt-5.4-thinking"],
    "GPT-5.5 Thinking": ["gpt-5.5-thinking"], "Claude 3.7 Sonnet": ["claude-3.7-sonnet"],
    "Claude 4 family": ["claude-4"], "Gemini 2.5 Pro": ["gemini-2.5-pro"],
    "Gemini 2.5 Flash": ["gemini-2.5-flash"], "Gemini 2.5 Deep Think": ["gemini-2.5-deep-think"],
    "DeepSeek-R1": ["deepseek-r1"], "DAPO": ["dapo-qwen-32b"], "Qwen3": ["qwen3-235b-a22b"],
    "Kimi k1.5": ["kimi-k1.5"], "Kimi K2": ["kimi-k2"], "Kimi K2.5": ["kimi-k2.5"],
    "Phi-4-reasoning": ["phi-4-reasoning"], "rStar-Math": ["rstar-math"], "Grok 4": ["grok-4"],
    "Grok 4 Heavy": ["grok-4-heavy"],
}  # fmt: skip


def test_every_table_10_row_is_recorded() -> None:
    assert len(TABLE_10_ROWS) == 41
    ids = [mid for row in TABLE_10_ROWS.values() for mid in row]
    assert sorted(ids) == sorted(mid for group in TABLE_10.values() for mid in group)
    models = shipped().of("model")
    assert [mid for mid in ids if mid not in models] == []


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
        papers = [s for s in algorithms[aid].sources if s != SURVEY]  # type: ignore[attr-defined]
        assert papers and all(sources[s].type == "paper" for s in papers), aid  # type: ignore[attr-defined]
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


def test_the_map_names_only_what_exists() -> None:
    catalog = shipped()
    for item in survey_map():
        for kind, rid in item.record_refs():
            assert rid in catalog.of(kind), f"{item.id}: unknown {kind} {rid}"
        for path in item.code:
            assert (REPO / path).exists(), f"{item.id}: no {path}"
        for test in item.checked_by:
            file, name = test.split("::")
            text = (REPO / file).read_text(encoding="utf-8")
            assert re.search(rf"^def {re.escape(name)}\(", text, re.M), f"{item.id}: no {test}"


def test_at_most_five_items_are_missing_each_with_its_reason() -> None:
    items = [i for i in survey_map() if i.part != "takeaway"]
    missing = [i for i in items if i.status == "missing"]
    assert len(missing) <= 5 and all(i.note for i in missing)
    parts = {i.part for i in items}
    assert parts == {"section", "table", "algorithm"}
    # Every section of §1-§7 and every table of 1-11 is an item.
    keys = {k for i in items for k in i.keys}
    for section in ("§1", "§2.1", "§2.6", "§3.1", "§3.8", "§4.1", "§4.7", "§5", "§6.2", "§7"):
        assert section in keys
    for table in range(1, 12):
        assert f"Table {table}" in keys
    for algorithm in range(1, 5):
        assert f"Algorithm {algorithm}" in keys


def test_a_present_item_needs_a_test_and_a_missing_one_a_reason() -> None:
    with pytest.raises(ValueError, match="names the test that checks it"):
        MapItem(id="x", part="section", title="§9", status="present")
    with pytest.raises(ValueError, match="says why"):
        MapItem(id="x", part="section", title="§9", status="missing")
    assert MapItem(id="k", part="takeaway", title="1 t", status="present").checked_by


def test_map_file_is_packaged() -> None:
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert "sitegen/survey_map.yaml" in pyproject
    assert Path(REPO / "rlmguide" / "sitegen" / "survey_map.yaml").exists()
