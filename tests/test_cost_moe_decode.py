"""MoE decode from measurements: the expert-parallel straggler factor and where decode pays it,
and the fused expert kernels' fixed time per MoE layer."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rlmguide.cost.architecture import ModelFigures
from rlmguide.cost.collectives import Fabric
from rlmguide.cost.efficiency import DEFAULTS, EfficiencyFactors
from rlmguide.cost.hardware import Hardware
from rlmguide.cost.layouts import RolloutLayout
from rlmguide.cost.model_pass import expert_straggler, routed_active_params
from rlmguide.cost.overheads import DEFAULT_OVERHEADS, Overheads
from rlmguide.cost.rollout import DecodeModel
from rlmguide.kb.load import load_catalog
from rlmguide.kb.paths import DEFAULT_ROOTS
from test_cost_specs import DEEPSEEK_V3, H100, QWEN3_30B_A3B, QWEN25_7B, one_plan

SKEW = DEFAULT_OVERHEADS.expert_skew_by_ep
MANY = 1e12  # routed copies per rank at which sampling noise vanishes


def test_the_measured_points_come_back() -> None:
    # blog-lmsys-large-scale-ep, without EPLB: balancedness 0.673, 0.612, 0.548, 0.476.
    got = expert_straggler(np.array([8.0, 16.0, 32.0, 64.0]), MANY, SKEW)
    assert got == pytest.approx([1.49, 1.63, 1.82, 2.10])


def test_the_table_is_the_result_records() -> None:
    results = load_catalog(DEFAULT_ROOTS, ("result",)).of("result")
    for ep, skew in SKEW:
        record = results[f"lmsys-eplb-balancedness-ep{int(ep)}-without-eplb"]
        assert (record.metric, record.value) == ("expert_load_imbalance", skew)  # type: ignore[attr-defined]


def test_one_rank_never_straggles() -> None:
    got = expert_straggler(np.ones(4), np.array([1.0, 10.0, 1e3, MANY]), SKEW)
    assert got == pytest.approx(np.ones(4))


def test_between_and_beyond_the_measurements_by_hand() -> None:
    # log2 interpolation: EP sqrt(8 x 16) lies halfway between 1.49 and 1.63; EP 2 a third of
    # the way from 1.0 (EP 1) to 1.49 (EP 8); beyond EP 64 the last measurement holds.
    assert expert_straggler(math.sqrt(128.0), MANY, SKEW) == pytest.approx(1.56)
    assert expert_straggler(2.0, MANY, SKEW) == pytest.approx(1.0 + 0.49 / 3)
    assert expert_straggler(256.0, MANY, SKEW) == pytest.approx(2.10)


def test_few_tokens_per_rank_are_bound_by_sampling_by_hand() -> None:
    # EP 8, 16 routed copies per rank: 1 + sqrt(2 ln 8 / 16) = 1 + sqrt(0.25993) = 1.50983,
    # above the measured 1.49; at 1 copy per rank on EP 2 the bound (2.18) is capped at 2.
    assert expert_straggler(8.0, 16.0, SKEW) == pytest.approx(1.50983, rel=1e-5)
    assert expert_straggler(2.0, 1.0, SKEW) == pytest.approx(2.0)


def test_without_a_table_there_is_no_straggler() -> None:
    assert expert_straggler(np.array([8.0, 64.0]), 4.0, ()) == pytest.approx([1.0, 1.0])


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    ep=st.sampled_from([1.0, 2.0, 4.0, 8.0, 12.0, 16.0, 32.0, 64.0, 72.0, 128.0]),
    more=st.sampled_from([1.0, 2.0, 3.0, 8.0]),
    routed=st.floats(0.1, 1e7),
    grown=st.floats(1.0, 100.0),
)
def test_laws_at_least_one_more_ranks_worse_more_tokens_better(
    ep: float, more: float, routed: float, grown: float
) -> None:
    here = float(expert_straggler(ep, routed, SKEW))
    assert 1.0 <= here <= max(ep, 1.0)
    assert float(expert_straggler(ep * more, routed, SKEW)) >= here - 1e-12
    assert float(expert_straggler(ep, routed * grown, SKEW)) <= here + 1e-12


def _decode(  # type: ignore[no-untyped-def]
    overheads: Overheads, ep: int, tp: int = 8, arch=QWEN3_30B_A3B, gpus: int = 8
) -> DecodeModel:
    eff = EfficiencyFactors()
    hw = Hardware.of(H100, 8, overheads)
    layout = RolloutLayout.of(one_plan(rollout_gpus=gpus, rollout_tp=tp, rollout_ep=ep))
    return DecodeModel(
        ModelFigures.of(arch), layout, hw, Fabric.of(hw, eff, overheads), eff, overheads
    )


def test_decode_pays_the_straggler_on_the_experts_alone_by_hand() -> None:
    # Qwen3-30B-A3B on TP 8 with EP 8, 2048 sequences at context 16: 2048 x 8 / 8 = 2048
    # copies per rank, so the measured 1.49 binds (sampling: 1 + sqrt(2 ln 8 / 2048) = 1.045).
    # The routed experts' FLOPs (2 x 48 layers x 8 of 128 experts x 3 x 2048 x 768 per token)
    # take 0.49 x longer; the dense part and the weight reads do not change.
    batch, context = np.array([[2048.0]]), np.array([[16.0]])
    balanced = _decode(replace(DEFAULT_OVERHEADS, expert_skew_by_ep=()), 8).step(batch, context)
    skewed = _decode(DEFAULT_OVERHEADS, 8).step(batch, context)
    fig = ModelFigures.of(QWEN3_30B_A3B)
    assert routed_active_params(fig) == pytest.approx(48 * 8 * 3 * 2048 * 768)
    expert = 2048 * 2.0 * routed_active_params(fig) / 8 / (989e12 * 0.5)
    assert skewed.compute[0, 0] - balanced.compute[0, 0] == pytest.approx(0.49 * expert)
    assert skewed.hbm[0, 0] == pytest.approx(balanced.hbm[0, 0])
    assert skewed.scale_up[0, 0] > balanced.scale_up[0, 0]


def test_decode_without_expert_parallelism_is_unchanged() -> None:
    batch, context = np.array([[512.0]]), np.array([[1024.0]])
    balanced = _decode(replace(DEFAULT_OVERHEADS, expert_skew_by_ep=()), 1).step(batch, context)
    skewed = _decode(DEFAULT_OVERHEADS, 1).step(batch, context)
    assert skewed.seconds[0, 0] == pytest.approx(balanced.seconds[0, 0])


def test_the_table_is_checked() -> None:
    with pytest.raises(ValueError, match="increasing"):
        Overheads(expert_skew_by_ep=((16.0, 1.6), (8.0, 1.5)))
    with pytest.raises(ValueError, match="at least 1"):
        Overheads(expert_skew_by_ep=((8.0, 0.9),))


def test_the_fixed_moe_kernel_time_is_the_published_line_by_hand() -> None:
    # vLLM PR 24700, Qwen3-30B-A3B FP8 on H100 at TP 1: 44.54 us at batch 1 (8 experts of
    # 3 x 2048 x 768 bytes touched) and 262.73 us at batch 64 (128 x (1 - (120/128)^64) touched).
    expert = 3 * 2048 * 768
    one, many = 8 * expert, 128 * (1 - (120 / 128) ** 64) * expert
    rate = (many - one) / (262.73e-6 - 44.54e-6)
    assert rate == pytest.approx(2.55e12, rel=1e-2)
    assert 44.54e-6 - one / rate == pytest.approx(
        DEFAULT_OVERHEADS.moe_layer_decode_seconds, rel=1e-2
    )


def test_each_moe_layer_adds_its_fixed_kernel_time_by_hand() -> None:
    # Qwen3-30B-A3B has 48 MoE layers: 48 x 29.7 us = 1.4256 ms more per decode step, at any
    # batch; a dense model pays nothing.
    batch, context = np.array([[1.0], [64.0]]), np.array([[1024.0], [1024.0]])
    without = replace(DEFAULT_OVERHEADS, moe_layer_decode_seconds=0.0)
    moe = _decode(DEFAULT_OVERHEADS, 1, tp=1).step_seconds(batch[:1], context[:1])
    bare = _decode(without, 1, tp=1).step_seconds(batch[:1], context[:1])
    assert moe[0, 0] - bare[0, 0] == pytest.approx(48 * 29.7e-6)
    dense = _decode(DEFAULT_OVERHEADS, 1, tp=1, arch=QWEN25_7B).step_seconds(batch, context)
    dense_bare = _decode(without, 1, tp=1, arch=QWEN25_7B).step_seconds(batch, context)
    assert dense == pytest.approx(dense_bare)


def test_deepseek_v3_experts_touched_per_step_by_hand() -> None:
    # 256 routed experts, top-8: one token reads 8/256 of a GPU's experts; 64 tokens leave an
    # expert unread with probability (248/256)^64 = exp(64 ln 0.96875) = exp(-2.03195) = 0.13109,
    # so 86.9% are read: at the batches of an RL rollout nearly every expert's weights are read
    # once per step, not top-k / experts of them.
    fig = ModelFigures.of(DEEPSEEK_V3)
    got = fig.expert_read_fraction(np.array([1.0, 64.0, 1024.0]))
    assert got == pytest.approx([8 / 256, 0.86891, 1.0], rel=1e-4)


def test_expert_ranks_beyond_tensor_ranks_pool_their_replicas_tokens_by_hand() -> None:
    # TP 1 and EP 8 on 8 GPUs: each GPU holds 32 of the 256 experts and receives the tokens of
    # all 8 replicas, so 8 sequences per replica read the experts 64 tokens read (86.9% of the
    # GPU's 32), against 8 tokens' share (22.4%) with EP 1, where every GPU holds all experts.
    fig = ModelFigures.of(DEEPSEEK_V3)
    batch, context = np.array([[8.0]]), np.array([[128.0]])
    pooled = _decode(DEFAULT_OVERHEADS, 8, tp=1, arch=DEEPSEEK_V3).step(batch, context)
    alone = _decode(DEFAULT_OVERHEADS, 1, tp=1, arch=DEEPSEEK_V3).step(batch, context)
    held = 2.0 * fig.expert_params  # bf16 bytes of every routed expert
    dense_and_kv = alone.hbm_bytes[0, 0] - held * (1 - (248 / 256) ** 8)
    assert pooled.hbm_bytes[0, 0] - dense_and_kv == pytest.approx(
        held / 8 * (1 - (248 / 256) ** 64), rel=1e-9
    )


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    arch=st.sampled_from([DEEPSEEK_V3, QWEN3_30B_A3B]),
    shape=st.sampled_from([(1, 1, 8), (8, 1, 8), (1, 8, 8), (8, 8, 8), (8, 16, 16), (8, 32, 32)]),
    batch=st.floats(1.0, 4096.0),
    grown=st.floats(1.0, 64.0),
    context=st.floats(16.0, 32768.0),
)
def test_law_a_decode_step_never_gets_faster_with_more_sequences_at_fixed_ep(
    arch, shape: tuple[int, int, int], batch: float, grown: float, context: float
) -> None:  # type: ignore[no-untyped-def]
    # More sequences add FLOPs, cache reads, touched experts and routed bytes; the straggler
    # factor falls with more tokens per rank but multiplies only the growing expert work.
    tp, ep, gpus = shape
    model = _decode(DEFAULT_OVERHEADS, ep, tp=tp, arch=arch, gpus=gpus)
    steps = model.step_seconds(np.array([[batch, batch * grown]]), np.full((1, 2), context))
    assert steps[0, 1] >= steps[0, 0] * (1 - 1e-12)


def test_the_experts_stream_at_the_published_line_s_rate_by_hand() -> None:
    # The line through vLLM's two benchmark_moe points (PR 24700) is 29.7 us plus the touched
    # experts' bytes at 2.55 TB/s: 76% of H100's 3.35 TB/s, the default expert_decode_hbm. With
    # both, one MoE layer at batch 64 (126.0 of 128 experts of 3 x 2048 x 768 FP8 bytes)
    # comes back to the measured 262.73 us.
    share = DEFAULTS["expert_decode_hbm"].value
    assert share == pytest.approx(2.55e12 / 3.35e12, rel=1e-2)
    touched = 128 * (1 - (120 / 128) ** 64) * 3 * 2048 * 768
    layer = DEFAULT_OVERHEADS.moe_layer_decode_seconds + touched / (3.35e12 * share)
    assert layer == pytest.approx(262.73e-6, rel=1e-2)


def test_decode_reads_the_experts_at_their_own_rate_by_hand() -> None:
    # Qwen3-30B-A3B in bf16 at TP 1, 64 sequences: the touched experts (48 layers x 126.0 of
    # 128 x 3 x 2048 x 768 x 2 bytes) at 3.35 TB/s x 0.76, everything else the step reads
    # (dense weights, KV cache) at 3.35 TB/s x 0.60.
    batch, context = np.array([[64.0]]), np.array([[1024.0]])
    step = _decode(DEFAULT_OVERHEADS, 1, tp=1, gpus=1).step(batch, context)
    experts = 48 * 128 * (1 - (120 / 128) ** 64) * 3 * 2048 * 768 * 2
    rest = step.hbm_bytes[0, 0] - experts
    assert step.hbm[0, 0] == pytest.approx(experts / (3.35e12 * 0.76) + rest / (3.35e12 * 0.6))
