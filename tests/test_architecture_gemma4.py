"""Full-attention layers with their own head shape and shared K=V, and a dense MLP beside the
routed experts (Gemma 4's global layers and its 26B-A4B's MoE block): parameters, KV cache,
attention FLOPs and the config.json reader, worked by hand and checked against the totals
Google publishes (model card: 31B 30.7B parameters; 26B-A4B 25.2B in total, 3.8B active, the
vision encoder of about 550M counted apart)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError
from rlmguide.cost.architecture import ModelFigures
from rlmguide.cost.memory import LayerTerms
from rlmguide.kb.load import load_catalog
from rlmguide.kb.paths import DEFAULT_ROOTS
from rlmguide.kb.schema import Architecture

from rlmguide.review.architecture import from_hf_config
from rlmguide.review.budget import Budget

# embeddings of 262,144 x hidden (tied), two norms per layer and the final norm
EMB_31B, NORMS_31B = 262_144 * 5_376, (2 * 60 + 1) * 5_376
EMB_26B, NORMS_26B = 262_144 * 2_816, (2 * 30 + 1) * 2_816


@functools.cache
def models() -> dict:
    return dict(load_catalog(DEFAULT_ROOTS, ["model"]).of("model"))


def arch(model: str) -> Architecture:
    found = models()[model].architecture
    assert found is not None
    return found


def test_gemma_4_31b_parameters_by_hand() -> None:
    h = 5_376
    # sliding layers: q 32 x 256, k and v 16 x 256, o back to h
    sliding = h * 32 * 256 + 2 * h * 16 * 256 + 32 * 256 * h
    # global layers: q 32 x 512, k 4 x 512 and no v (K is V), o back to h
    full = h * 32 * 512 + h * 4 * 512 + 32 * 512 * h
    assert (sliding, full) == (132_120_576, 187_170_816)
    mlp = 3 * h * 21_504  # GeGLU: gate, up, down
    total = 50 * (sliding + mlp) + 10 * (full + mlp) + EMB_31B + NORMS_31B
    assert total == 30_696_664_320
    a = arch("gemma-4-31b")
    assert a.params_total == a.params_active == total
    assert total / 1e9 == pytest.approx(30.7, abs=0.05)


def test_gemma_4_26b_a4b_parameters_by_hand() -> None:
    h = 2_816
    sliding = h * 16 * 256 + 2 * h * 8 * 256 + 16 * 256 * h
    full = h * 16 * 512 + h * 2 * 512 + 16 * 512 * h
    dense = 3 * h * 2_112  # the MLP every layer keeps beside its experts
    expert = 3 * h * 704
    router = h * 128
    per_layer = dense + router
    total = 25 * sliding + 5 * full + 30 * (per_layer + 128 * expert) + EMB_26B + NORMS_26B
    active = 25 * sliding + 5 * full + 30 * (per_layer + 8 * expert) + EMB_26B + NORMS_26B
    assert (total, active) == (25_232_613_120, 3_822_001_920)
    a = arch("gemma-4-26b-a4b")
    assert (a.params_total, a.params_active) == (total, active)
    assert total / 1e9 == pytest.approx(25.2, abs=0.05)
    assert active / 1e9 == pytest.approx(3.8, abs=0.05)


def test_global_layers_cache_their_own_head_shape() -> None:
    # bf16 keys and values of the 10 (5) global layers: 4 (2) KV heads of 512, both cached
    # although projected once (keys are normalised and rotated, values only normalised)
    assert arch("gemma-4-31b").kv_bytes_per_token == 10 * 2 * 4 * 512 * 2 == 81_920
    assert arch("gemma-4-26b-a4b").kv_bytes_per_token == 5 * 2 * 2 * 512 * 2 == 20_480
    # the sliding layers keep their own 16 (8) KV heads of 256 for at most 1,024 tokens
    assert arch("gemma-4-31b").window_kv_bytes_per_token == 50 * 2 * 16 * 256 * 2
    assert arch("gemma-4-26b-a4b").window_kv_bytes_per_token == 25 * 2 * 8 * 256 * 2


def test_the_cost_core_splits_each_kind_by_its_own_kv_heads() -> None:
    fig = ModelFigures.of(arch("gemma-4-31b"))
    one = np.array([1.0])
    assert fig.kv_bytes_per_token(one, one)[0] == 81_920
    # tp 4 splits the 4 global KV heads; tp 8 keeps one replica per rank, as engines do
    for tp, heads in ((4.0, 1), (8.0, 1), (2.0, 2)):
        assert fig.kv_bytes_per_token(np.array([tp]), one)[0] == 10 * 2 * heads * 512 * 2
    # a 4,096-token sequence: every global key, the last 1,024 of each sliding layer
    cache = fig.cache_bytes(np.array([4_096.0]), one, one)[0]
    assert cache == 81_920 * 4_096 + 50 * 2 * 16 * 256 * 1_024 * 2


def test_global_layers_attend_with_their_own_head_dimension() -> None:
    mixing = ModelFigures.of(arch("gemma-4-31b")).mixing
    c = 4_096.0
    # QK^T and AV: 2 x 32 heads x (512 + 512) per key in the 10 global layers, 2 x 32 x
    # (256 + 256) per key of the window in the 50 sliding ones
    by_hand = 2 * 32 * 1_024 * 10 * c + 2 * 32 * 512 * 50 * 1_024
    assert mixing.decode_flops(np.array([c]))[0] == by_hand
    read = (10 * 2 * 4 * 512 * c + 50 * 2 * 16 * 256 * 1_024) * 2
    assert mixing.decode_bytes(np.array([c]))[0] == read


def test_sharing_k_with_v_drops_the_value_projection_only() -> None:
    base = dict(layers=6, hidden=1024, heads=8, kv_heads=4, head_dim=128, ffn=2048, vocab=100)
    base |= dict(max_context_tokens=4096, layer_pattern=["sliding"] * 5 + ["full"])
    base |= dict(sliding_window=512)
    own = dict(head_dim=256, kv_heads=2)
    split = Architecture(**base, full_attention=own)
    shared = Architecture(**base, full_attention=own | {"shared_kv": True})
    assert split.params_total - shared.params_total == 1024 * 2 * 256
    assert split.kv_bytes_per_token == shared.kv_bytes_per_token == 2 * 2 * 256 * 2
    with pytest.raises(ValidationError, match="no layer is full attention"):
        Architecture(**base | {"layer_pattern": ["sliding"]}, full_attention=own)
    with pytest.raises(ValidationError, match=r"not a multiple of full_attention\.kv_heads"):
        Architecture(**base, full_attention=own | {"kv_heads": 3})


def test_a_dense_mlp_beside_the_experts_is_counted_in_every_expert_layer() -> None:
    base = dict(layers=4, hidden=1024, heads=8, kv_heads=4, head_dim=128, ffn=2048, vocab=100)
    base |= dict(max_context_tokens=4096)
    moe = dict(experts=8, experts_per_token=2, expert_ffn=512)
    alone = Architecture(**base, moe=moe)
    beside = Architecture(**base, moe=moe | {"dense_beside": True})
    assert beside.params_total - alone.params_total == 4 * 3 * 1024 * 2048
    assert beside.params_active - alone.params_active == 4 * 3 * 1024 * 2048
    assert ModelFigures.of(beside).shared_ffn == 2048
    without_ffn = {k: v for k, v in base.items() if k != "ffn"}
    with pytest.raises(ValidationError, match="ffn is required"):
        Architecture(**without_ffn, moe=moe | {"dense_beside": True})


def test_a_gemma_4_config_json_reads_back_the_record(tmp_path: Path) -> None:
    # the keys of google/gemma-4-26B-A4B's text_config as the pinned copy spells them
    text = {
        "num_hidden_layers": 30, "hidden_size": 2816, "num_attention_heads": 16,
        "num_key_value_heads": 8, "head_dim": 256, "intermediate_size": 2112,
        "vocab_size": 262144, "max_position_embeddings": 262144, "tie_word_embeddings": True,
        "attention_bias": False, "num_experts": 128, "top_k_experts": 8,
        "moe_intermediate_size": 704, "enable_moe_block": True, "global_head_dim": 512,
        "num_global_key_value_heads": 2, "attention_k_eq_v": True, "sliding_window": 1024,
        "layer_types": (["sliding_attention"] * 5 + ["full_attention"]) * 5,
        "model_type": "gemma4_text",
    }  # fmt: skip
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "gemma4", "text_config": text}))
    built = Architecture.model_validate(from_hf_config(path, Budget()).spec)
    a = arch("gemma-4-26b-a4b")
    assert (built.params_total, built.params_active) == (a.params_total, a.params_active)
    assert built.kv_bytes_per_token == a.kv_bytes_per_token
    # without K=V the global layers keep the model's KV heads (transformers' Gemma4TextConfig)
    path.write_text(json.dumps({"text_config": text | {"attention_k_eq_v": False}}))
    unshared = Architecture.model_validate(from_hf_config(path, Budget()).spec)
    assert unshared.full_attention is not None
    assert (unshared.full_attention.kv_heads, unshared.full_attention.shared_kv) == (8, False)


def test_global_layers_keep_their_attention_activations_at_their_own_shape() -> None:
    terms = LayerTerms.of(ModelFigures.of(arch("gemma-4-31b")), megatron=True)
    # q, k, v and the output per token: 32 x 256 + 16 x 2 x 256 + 32 x 256 in the 50 sliding
    # layers, 32 x 512 + 4 x 2 x 512 + 32 x 512 in the 10 global ones (values kept apart
    # although projected with the keys), on average per layer, in bf16; fp32 LSE per head
    elements = (50 * 24_576 + 10 * 36_864) / 60
    assert terms.attention == 2 * elements + 4 * 32 == 53_376
    # QK-norm inputs (bf16 under Megatron) and an fp32 statistic per q and k head
    qk_norm = (50 * 48 * (2 * 256 + 4) + 10 * 36 * (2 * 512 + 4)) / 60
    assert terms.qk_norm == qk_norm == 26_808
