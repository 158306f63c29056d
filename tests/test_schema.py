"""Record models: derived figures checked by hand, and what the schema refuses."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from rlmguide.kb.load import parse_yaml
from rlmguide.kb.schema import Accelerator, Framework, Model, Result, Scenario, Source

QWEN25_7B = dict(
    id="qwen-7b",
    name="Qwen2.5-7B",
    family="qwen2.5",
    layers=28,
    hidden=3584,
    heads=28,
    kv_heads=4,
    ffn=18944,
    vocab=152064,
    max_context_tokens=131072,
    qkv_bias=True,
    sources=["s"],
)
DEEPSEEK_V3 = dict(
    id="dsv3",
    name="DeepSeek-V3",
    family="deepseek",
    layers=61,
    hidden=7168,
    heads=128,
    kv_heads=128,
    ffn=18432,
    vocab=129280,
    max_context_tokens=163840,
    sources=["s"],
    mla=dict(
        q_lora_rank=1536,
        kv_lora_rank=512,
        qk_nope_head_dim=128,
        qk_rope_head_dim=64,
        v_head_dim=128,
    ),
    moe=dict(experts=256, experts_per_token=8, shared_experts=1, expert_ffn=2048, dense_layers=3),
)


def test_dense_gqa_parameters_by_hand() -> None:
    m = Model(**QWEN25_7B)
    # per layer: q,k,v = 3584*128*(28+2*4) = 16,515,072; biases 128*36 = 4,608;
    # o = 28*128*3584 = 12,845,056; norms 2*3584 = 7,168; ffn 3*3584*18944 = 203,685,888
    per_layer = 16_515_072 + 4_608 + 12_845_056 + 7_168 + 203_685_888
    embeddings = 2 * 152_064 * 3_584  # untied input and output embeddings
    assert m.params_total == 28 * per_layer + embeddings + 3_584  # + final norm
    assert m.params_total == 7_615_616_512  # the 7.61B Qwen reports
    assert m.params_active == m.params_total
    assert m.attention == "gqa"
    assert m.kv_bytes_per_token == 2 * 4 * 128 * 28 * 2  # K and V, 4 heads of 128, bf16


def test_mla_moe_parameters_match_deepseek_v3_report() -> None:
    m = Model(**DEEPSEEK_V3)
    assert m.attention == "mla"
    assert m.params_total / 1e9 == pytest.approx(671, rel=0.005)  # 671B total
    assert m.params_active / 1e9 == pytest.approx(37, rel=0.02)  # 37B activated
    assert m.kv_bytes_per_token == (512 + 64) * 61 * 2  # latent + decoupled RoPE key, bf16


def test_derived_fields_cannot_be_authored() -> None:
    with pytest.raises(ValidationError, match="params_total"):
        Model(**QWEN25_7B, params_total=7)


def test_unknown_fields_and_bad_ids_are_refused() -> None:
    base = dict(type="paper", title="t", url="https://example.org")
    with pytest.raises(ValidationError):
        Source(id="Bad_ID", **base)
    with pytest.raises(ValidationError):
        Source(id="ok", colour="red", **base)
    Source(id="arxiv-2409.19256", **base)


def test_kv_heads_must_divide_heads() -> None:
    with pytest.raises(ValidationError, match="multiple of kv_heads"):
        Model(**{**QWEN25_7B, "kv_heads": 5})


AVAILABLE = dict(
    status="released", source="s", version="v1", checked="2026-12-02", as_of="2026-06-01"
)


def test_a_feature_is_claimed_once() -> None:
    claim = dict(
        feature="grpo",
        support="yes",
        source="s",
        checked="2026-12-02",
        as_of=None,
        as_of_unknown="x",
    )
    with pytest.raises(ValidationError, match="claimed twice"):
        Framework(
            id="f",
            name="f",
            type="library",
            description="d",
            sources=["s"],
            availability=AVAILABLE,
            claims=[claim, claim],
        )


def test_accelerator_ridge_point() -> None:
    h100 = Accelerator(
        id="h",
        name="H100",
        vendor="NVIDIA",
        memory_gib=80,
        hbm_tbytes_per_s=3.35,
        bf16_dense_tflops=989,
        sources=["s"],
    )
    assert h100.ridge_flop_per_byte == pytest.approx(295.2, abs=0.1)


def test_yaml_yes_stays_text() -> None:
    assert parse_yaml("support: yes\nflag: true") == {"support": "yes", "flag": True}


def test_scenario_refuses_response_longer_than_its_maximum() -> None:
    with pytest.raises(ValidationError, match="max_response_tokens"):
        Scenario.model_validate(
            {
                "cluster": {"accelerator": "h100-sxm-80gb"},
                "models": {"policy": "qwen2.5-7b"},
                "workload": {
                    "prompts_per_step": 8,
                    "prompt_tokens": 10,
                    "response_tokens": 100,
                    "max_response_tokens": 50,
                },
            }
        )


def test_locators_must_name_a_cited_source() -> None:
    base = dict(
        id="fw", name="F", type="library", description="d", sources=["s"], availability=AVAILABLE
    )
    fw = Framework(**base, locators={"s": "§6.2, Table 11"})
    assert fw.locators == {"s": "§6.2, Table 11"}
    with pytest.raises(ValidationError, match="locators name sources not in sources: t"):
        Framework(**base, locators={"t": "§1"})


CLOSED = dict(id="o3", name="OpenAI o3", family="o-series", access="closed", sources=["s"])


def test_a_closed_model_needs_no_architecture_and_derives_nothing() -> None:
    m = Model(**CLOSED, scale="undisclosed", post_training="hybrid RL (CoT and tools)")
    assert m.architecture is None
    assert (m.params_total, m.params_active, m.attention, m.kv_bytes_per_token) == (None,) * 4
    with pytest.raises(ValidationError, match="gives its scale or post_training"):
        Model(**CLOSED)


def test_an_open_model_must_give_its_architecture_whole() -> None:
    with pytest.raises(ValidationError, match="an open model gives its architecture"):
        Model(**{**CLOSED, "access": "open"}, scale="7B")
    partial = {k: v for k, v in QWEN25_7B.items() if k != "vocab"}
    with pytest.raises(ValidationError, match="vocab: Field required"):
        Model(**partial)
    with pytest.raises(ValidationError, match="active_params_b is derived"):
        Model(**QWEN25_7B, active_params_b=7.0)
    assert Model(**QWEN25_7B).architecture is not None


def test_an_open_model_without_a_configuration_says_why() -> None:
    why = "no config.json found at a pinned version"
    m = Model(**{**CLOSED, "access": "open"}, scale="32B dense", architecture_absent=why)
    assert m.architecture is None and m.params_total is None
    with pytest.raises(ValidationError, match="or says in architecture_absent why"):
        Model(**{**CLOSED, "access": "open"}, scale="32B dense")
    with pytest.raises(ValidationError, match="architecture_absent is for a model without"):
        Model(**QWEN25_7B, architecture_absent=why)
    with pytest.raises(ValidationError, match="architecture_absent is for open weights"):
        Model(**CLOSED, scale="undisclosed", architecture_absent=why)


def test_a_time_share_is_a_fraction() -> None:
    fields = {"id": "r", "source": "s", "locator": "§1", "description": "d", "unit": "fraction"}
    assert Result(**fields, metric="time_share", value=0.9).value == 0.9
    with pytest.raises(ValidationError, match="at most 1"):
        Result(**fields, metric="time_share", value=1.2)
