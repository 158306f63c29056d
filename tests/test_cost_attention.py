"""What attention costs per kind of layer, worked by hand at 32k context for the three kinds
the frontier models mix (Qwen3.5's linear layers, gpt-oss's sliding windows, DeepSeek-V3.2's
sparse selection), and the laws every kind obeys."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from rlmguide.cost.architecture import ModelFigures
from rlmguide.cost.attention import AttentionCosts, capped_mean, capped_prefix
from rlmguide.cost.survey_model import SurveyShape, kv_cache
from rlmguide.kb.load import load_catalog
from rlmguide.kb.paths import DEFAULT_ROOTS
from rlmguide.kb.schema import Architecture

C = 32_768


@functools.cache
def costs(model: str) -> AttentionCosts:
    record = load_catalog(DEFAULT_ROOTS, ["model"]).of("model")[model]
    return AttentionCosts.of(record.architecture)


def test_qwen35_35b_a3b_at_32k_by_hand() -> None:
    a = costs("qwen3.5-35b-a3b")
    # 10 full layers of 2 KV heads x 256 (K and V: 1,024 elements, 2,048 bytes a token); 30
    # Gated DeltaNet layers of 32 heads x 128 x 128 plus a conv window of 3 x 8,192 channels.
    kv = 10 * 2048 * C
    state = 30 * (32 * 128 * 128 + 3 * 8192) * 2
    assert a.cache_bytes(C) == kv + state == 704_020_480
    # 16 heads x (256 + 256) x 2 FLOPs a key; 3 passes of 2 FLOPs over 32 x 128 x 128 states
    attention = 10 * 2 * 16 * 512 * C
    recurrence = 30 * 3 * 2 * 32 * 128 * 128
    assert a.decode_flops(C) == attention + recurrence == 5_463_080_960
    dense = a.as_full()
    assert dense.cache_bytes(C) == 40 * 2048 * C  # 3.8x the real cache
    assert dense.decode_flops(C) / a.decode_flops(C) == pytest.approx(3.93, abs=0.01)


def test_gpt_oss_120b_at_32k_by_hand() -> None:
    a = costs("gpt-oss-120b")
    # 36 layers alternate a 128-token window and full attention; 8 KV heads x 64 (2,048 bytes)
    assert a.cache_bytes(C) == 18 * 2048 * C + 18 * 2048 * 128 == 1_212_678_144
    # 64 heads x (64 + 64) x 2 = 16,384 FLOPs a key
    assert a.decode_flops(C) == 18 * 16_384 * C + 18 * 16_384 * 128 == 9_701_425_152
    dense = a.as_full()
    assert dense.cache_bytes(C) == 36 * 2048 * C
    assert dense.decode_flops(C) / a.decode_flops(C) == pytest.approx(1.99, abs=0.01)


def test_deepseek_v32_at_32k_by_hand() -> None:
    a = costs("deepseek-v3.2")
    # 61 sparse MLA layers cache the 512 latent + 64 RoPE key and the indexer's 128-wide key
    assert a.cache_bytes(C) == 61 * (576 + 128) * 2 * C == 2_814_377_984
    # attention over the top 2,048 keys: 128 heads x (192 + 128) x 2 = 81,920 FLOPs a key;
    # the indexer scores all 32,768 keys with 64 heads x 128 x 2 FLOPs
    per_layer = 81_920 * 2048 + 2 * 64 * 128 * C
    assert a.decode_flops(C) == 61 * per_layer == 42_983_227_392
    # reads: the selected latents and every indexer key
    assert a.decode_bytes(C) == 61 * (576 * 2048 + 128 * C) * 2
    dense = a.as_full()
    # full attention would cache a little less (no indexer keys) but attend to every key
    assert dense.cache_bytes(C) < a.cache_bytes(C)
    assert dense.decode_flops(C) / a.decode_flops(C) == pytest.approx(3.81, abs=0.01)
    assert dense.decode_bytes(C) / a.decode_bytes(C) == pytest.approx(3.51, abs=0.01)


def test_prefill_attends_causally_within_the_window() -> None:
    a = costs("gpt-oss-120b")
    # full layers: 32,768^2 / 2 keys; window layers: 128^2 / 2 + (32,768 - 128) x 128
    keys = 18 * C * C / 2 + 18 * (128 * 128 / 2 + (C - 128) * 128)
    assert a.prefill_flops(C) == pytest.approx(16_384 * keys)


ARCH = dict(layers=8, hidden=1024, heads=8, kv_heads=2, head_dim=128, ffn=4096, vocab=1000)
ARCH |= dict(max_context_tokens=1 << 20)


@given(
    window=st.integers(1, 1 << 16),
    context=st.integers(1, 1 << 16),
    prompt=st.integers(0, 1 << 15),
)
def test_a_window_at_least_the_sequence_is_full_attention(window, context, prompt) -> None:
    windowed = AttentionCosts.of(
        Architecture(**ARCH, layer_pattern=["sliding", "full"], sliding_window=window)
    )
    full = AttentionCosts.of(Architecture(**ARCH))
    if window >= context:
        assert windowed.cache_bytes(context) == full.cache_bytes(context)
        assert windowed.decode_flops(context) == full.decode_flops(context)
        assert windowed.prefill_flops(context) == pytest.approx(full.prefill_flops(context))
    end = prompt + context
    if window >= end:
        assert windowed.mean_decode_flops(prompt, end) == pytest.approx(
            full.mean_decode_flops(prompt, end)
        )
    # never more than full attention
    assert windowed.cache_bytes(context) <= full.cache_bytes(context)
    assert windowed.decode_flops(context) <= full.decode_flops(context)


@given(short=st.integers(1, 1 << 20), long=st.integers(1, 1 << 20))
def test_linear_layers_state_and_work_are_independent_of_length(short, long) -> None:
    gdn = dict(kind="gated-deltanet", heads=8, key_heads=4, key_dim=64, value_dim=64)
    only_linear = AttentionCosts.of(
        Architecture(
            **ARCH | dict(layers=3), layer_pattern=["linear", "linear", "full"], linear=gdn
        )
    )
    full_part = AttentionCosts.of(Architecture(**ARCH | dict(layers=1)))
    for f in ("cache_bytes", "decode_flops", "decode_bytes"):
        linear_short = getattr(only_linear, f)(short) - getattr(full_part, f)(short)
        linear_long = getattr(only_linear, f)(long) - getattr(full_part, f)(long)
        assert linear_short == pytest.approx(linear_long)
        assert linear_short > 0


@given(a=st.floats(0, 1e6), span=st.floats(0, 1e6), cap=st.floats(1, 1e6, allow_nan=False))
def test_capped_mean_is_the_mean_of_the_cap(a, span, cap) -> None:
    b = a + span
    mean = float(capped_mean(a, b, cap))
    assert min(a, cap) - 1e-6 <= mean <= min(b, cap) + 1e-6
    if b <= cap:
        assert mean == pytest.approx((a + b) / 2, rel=1e-9, abs=1e-6)
    # the prefix sum grows by min(c, cap) per token
    assert float(capped_prefix(b, cap) - capped_prefix(a, cap)) == pytest.approx(
        mean * span, rel=1e-9, abs=1e-3
    )


def test_formulas_take_arrays_of_contexts() -> None:
    a = costs("gpt-oss-120b")
    contexts = np.array([64.0, 128.0, C])
    assert a.cache_bytes(contexts).shape == (3,)
    assert a.decode_flops(contexts)[2] == a.decode_flops(C)


def figures(model: str) -> ModelFigures:
    record = load_catalog(DEFAULT_ROOTS, ["model"]).of("model")[model]
    return ModelFigures.of(record.architecture)


ONE = np.array([1.0])


@pytest.mark.parametrize("model", ["qwen3.5-35b-a3b", "gpt-oss-120b", "deepseek-v3.2"])
def test_the_cost_core_holds_and_reads_the_cache_by_kind(model: str) -> None:
    fig, a = figures(model), costs(model)
    # one GPU holds the whole replica: the per-kind figures of cost.attention
    assert fig.cache_bytes(C, ONE, ONE) == pytest.approx(a.cache_bytes(C))
    assert fig.cache_read_bytes(C, ONE, ONE) == pytest.approx(a.decode_bytes(C))
    assert fig.mixing_flops(C) == pytest.approx(a.decode_flops(C))
    # a token past the windows adds only the layers that cache every token
    grown = fig.cache_bytes(C + 1, ONE, ONE) - fig.cache_bytes(C, ONE, ONE)
    assert grown == pytest.approx(fig.kv_bytes_per_token(ONE, ONE))


def test_tensor_parallelism_splits_kv_heads_and_linear_state() -> None:
    fig = figures("qwen3.5-35b-a3b")
    two = np.array([2.0])
    # 2 KV heads split over 2 ranks, 32 GDN heads' states over 2 ranks
    assert fig.cache_bytes(C, two, ONE) == pytest.approx(fig.cache_bytes(C, ONE, ONE) / 2)
    # beyond the KV heads each rank keeps one head, the state keeps splitting
    four = np.array([4.0])
    kv = 10 * 2 * 1 * 256 * 2 * C  # 10 full layers, one KV head of 256 each (K and V), bf16
    state = 30 * (32 * 128 * 128 + 3 * 8192) * 2 / 4
    assert fig.cache_bytes(C, four, ONE) == pytest.approx(kv + state)


def test_survey_kv_term_follows_the_kinds() -> None:
    record = load_catalog(DEFAULT_ROOTS, ["model"]).of("model")["gpt-oss-120b"]
    shape = SurveyShape.of(record.architecture)
    # 2 (S+T) d for the 18 full layers, 2 min(S+T, 128) d for the 18 windowed ones
    assert kv_cache(shape, 1024, C - 1024) == 2 * 2880 * (18 * C + 18 * 128)
    qwen = SurveyShape.of(
        load_catalog(DEFAULT_ROOTS, ["model"]).of("model")["qwen2.5-7b"].architecture
    )
    assert kv_cache(qwen, 4, 4) == 2 * 8 * 28 * 3584  # every layer full: the survey's 2(S+T)Ld
