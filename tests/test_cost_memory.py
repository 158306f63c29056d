"""Memory per GPU: ZeRO stages, Korthikanti activations, KV capacity, offload, LoRA."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rlmguide.cost import evaluate
from rlmguide.cost.architecture import ModelFigures
from rlmguide.cost.batch import Batch, Needs
from rlmguide.cost.layouts import RolloutLayout, TrainLayout
from rlmguide.cost.memory import (
    activation_bytes,
    host_state_bytes,
    rollout_memory,
    trained_state,
    training_memory,
)
from rlmguide.cost.overheads import DEFAULT_OVERHEADS
from rlmguide.cost.plans import PlanTable
from rlmguide.cost.units import GIB
from test_cost_specs import (
    H100,
    LLAMA31_70B,
    QWEN3_30B_A3B,
    QWEN7B_PARAMS,
    QWEN25_7B,
    one_plan,
    workload,
)

P = float(QWEN7B_PARAMS)


def train_layout(**fields: object) -> TrainLayout:
    return TrainLayout.of(one_plan(**fields))


@pytest.mark.parametrize(
    ("zero", "expected"),
    [
        (0, 16 * P),  # 2 + 2 + 12 bytes per parameter, nothing sharded: 121.8 GB
        (1, 4 * P + 12 * P / 8),  # optimizer states / 8: 5.5 P = 41.9 GB
        (2, 2 * P + 14 * P / 8),  # gradients too: 3.75 P = 28.6 GB
        (3, 16 * P / 8),  # weights too: 2 P = 15.2 GB
    ],
)
def test_zero_stage_memory_by_hand(zero: int, expected: float) -> None:
    # Qwen2.5-7B, tp = pp = 1, ZeRO over dp = 8
    layout = train_layout(train_zero=zero)
    got = trained_state(ModelFigures.of(QWEN25_7B), layout).total[0]
    assert got == pytest.approx(expected, rel=1e-12)


def test_zero_shards_over_dp_times_cp_and_model_parallel_splits_first() -> None:
    # tp 2, cp 2 on 8 GPUs: dp 2, ZeRO-1 group dp * cp = 4; shard P / 2:
    # 4 * P/2 + 12 * P/2 / 4 = 2 P + 1.5 P = 3.5 P
    layout = train_layout(train_tp=2, train_cp=2, train_zero=1)
    got = trained_state(ModelFigures.of(QWEN25_7B), layout).total[0]
    assert got == pytest.approx(3.5 * P, rel=1e-12)


def test_expert_states_shard_over_expert_data_parallel_group() -> None:
    # Qwen3-30B-A3B on 8 GPUs, ep 8, ZeRO-1: experts / 8 per GPU and their optimizer states
    # shard over dp * cp / ep = 1 rank (no sharding); dense weights' over 8.
    fig = ModelFigures.of(QWEN3_30B_A3B)
    layout = train_layout(train_ep=8, train_zero=1)
    expert = fig.expert_params / 8
    expected = 16 * expert + 4 * fig.dense_params + 12 * fig.dense_params / 8
    assert trained_state(fig, layout).total[0] == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(
    ("recompute", "per_layer"),
    [
        # s = 4096 tokens, h = 3584, FlashAttention stores no score matrix: 34 s h either way
        ("none", 34 * 4096 * 3584),  # 499,122,176 bytes
        ("selective", 34 * 4096 * 3584),
        ("full", 2 * 4096 * 3584),  # 29,360,128 bytes
    ],
)
def test_korthikanti_activations_by_hand(recompute: str, per_layer: int) -> None:
    fig = ModelFigures.of(QWEN25_7B)
    logits = 4096 * 152064 * 4  # fp32 logits of the micro-batch: 2,491,416,576 bytes
    # full recompute rebuilds one layer at a time, with fused attention: 34 s h
    working = 34 * 4096 * 3584 if recompute == "full" else 0
    for tp in (1, 4):
        layout = train_layout(train_tp=tp, train_recompute=recompute)
        got = activation_bytes(fig, layout, np.array([4096.0]), np.array([1.0]))[0]
        # sequence parallelism divides everything by tp; 28 layers, one micro-batch in flight
        assert got == pytest.approx((28 * per_layer + working + logits) / tp, rel=1e-12)


def test_pipeline_keeps_pp_micro_batches_of_its_layers_in_flight() -> None:
    fig = ModelFigures.of(QWEN25_7B)
    flat = activation_bytes(
        fig, train_layout(train_recompute="selective"), np.array([4096.0]), np.array([1.0])
    )
    layout = train_layout(train_pp=4, train_recompute="selective")
    staged = activation_bytes(fig, layout, np.array([4096.0]), np.array([4.0]))
    # 1F1B: 7 layers x 4 micro-batches on the first stage = 28 layers' worth, as without pp
    assert staged[0] == pytest.approx(flat[0], rel=1e-12)


def test_rollout_kv_capacity_by_hand() -> None:
    # Qwen2.5-7B on one H100, tp 1: usable 0.9 * 80 GiB = 77,309,411,328 bytes;
    # weights 2 * 7,615,616,512 = 15,231,233,024; workspace 1 GiB = 1,073,741,824;
    # free for KV 61,004,436,480; per sequence (1024 + 4096) * 57,344 = 293,601,280 bytes:
    # floor(61,004,436,480 / 293,601,280) = 207 concurrent sequences.
    layout = RolloutLayout.of(one_plan(rollout_gpus=1, train_gpus=1))
    batch = Batch.of(workload(), Needs())
    usable = 0.9 * 80 * GIB
    mem = rollout_memory(ModelFigures.of(QWEN25_7B), layout, batch, usable, DEFAULT_OVERHEADS)
    assert mem.weights[0] == 2 * QWEN7B_PARAMS
    assert mem.kv_per_sequence[0] == 5120 * 57_344
    assert mem.capacity[0] == 207
    # less than weights + workspace + one longest sequence (1024 + 16384 tokens) cannot run
    assert mem.minimum[0] == 2 * QWEN7B_PARAMS + GIB + 17408 * 57_344


def test_offload_moves_the_terms_frameworks_move() -> None:
    # Qwen2.5-7B on 8 GPUs, ZeRO-1, tp 1: on the GPU 2P weights + 2P gradients + 12P/8 Adam.
    fig = ModelFigures.of(QWEN25_7B)
    plain = trained_state(fig, train_layout(train_zero=1))
    assert plain.optimizer[0] == pytest.approx(1.5 * P)
    # A CPU optimizer for 60% keeps 40% of the Adam states (0.6 P) on the GPU; the host holds
    # 60% of the fp32 master, moments and gradient: 0.6 x 16 P / 8 = 1.2 P.
    cpu = train_layout(train_zero=1, offload_optimizer=0.6)
    assert trained_state(fig, cpu).optimizer[0] == pytest.approx(0.6 * P)
    assert trained_state(fig, cpu).weights[0] == plain.weights[0]
    assert host_state_bytes(fig, cpu)[0] == pytest.approx(1.2 * P)
    # Streamed parameters (ZeRO-3): nothing persists on the GPU; the host holds 18 P / 8.
    streamed = train_layout(train_zero=3, offload_params=True)
    assert trained_state(fig, streamed).total[0] == 0
    assert host_state_bytes(fig, streamed)[0] == pytest.approx(18 * P / 8)


def test_phase_offload_lowers_rollout_and_assessment_not_training() -> None:
    wl = workload(prompts_per_step=128, samples_per_prompt=8, prompt_tokens=512,
                  response_tokens=2048, max_response_tokens=8192)  # fmt: skip
    batch, fig = Batch.of(wl, Needs()), ModelFigures.of(QWEN25_7B)
    usable = 0.9 * 80 * GIB
    yes = np.array([True])

    def memory(**fields: object):  # type: ignore[no-untyped-def]
        layout = train_layout(train_zero=1, train_recompute="full", **fields)
        return training_memory(
            [(fig, yes)], [(fig, yes, 2.0)], layout, batch, usable, DEFAULT_OVERHEADS
        )

    plain, phase = memory(), memory(offload_phase=True, offload_frozen=True)
    assert phase.training[0] == pytest.approx(plain.training[0] - 2 * P)  # reference parked
    # Kept during the rollout: 2P + 2P + 1.5P trained state and the 2P reference; none parked.
    assert plain.resident[0] == pytest.approx(7.5 * P)
    assert phase.resident[0] == 0
    # Each step moves the trained state out and back and loads the reference once.
    assert phase.switch[0] == pytest.approx(2 * 5.5 * P + 2 * P)
    assert phase.assessment[0] < plain.assessment[0]


def test_lora_trains_adapters_only() -> None:
    # Rank 16 on Qwen2.5-7B: the adapters of every attention and MLP projection, per layer
    # (3584 + 3584) + 2 (3584 + 512) + (3584 + 3584) + 3 (3584 + 18944) = 90,112 widths,
    # x 28 layers x 16 = 40,370,176 parameters.
    fig = ModelFigures.of(QWEN25_7B)
    assert fig.lora_width == 28 * 90_112
    layout = train_layout(train_zero=0, train_lora_rank=16)
    state = trained_state(fig, layout)
    adapters = 16 * 28 * 90_112
    assert state.weights[0] == pytest.approx(2 * (P + adapters))
    assert state.gradients[0] == pytest.approx(2 * adapters)
    assert state.optimizer[0] == pytest.approx(12 * adapters)


def test_micro_batches_shrink_to_fit_before_a_plan_is_infeasible() -> None:
    # Qwen2.5-7B, 8 GPUs, tp 1, ZeRO-3, selective recompute, 128 x 8 sequences of 512 + 2048:
    # states 16P/8 + reference 2P/8 = 17.1 GB, one gathered layer 0.47 GB; usable 77.3 GB;
    # activations per token: 34 * 3584 * 28 layers + fp32 logits 152,064 * 4 = 4,020,224 B;
    # (77.31e9 - 17.59e9) / 4,020,224 = 14,850 tokens < the 16,384 budget: the micro-batch
    # shrinks and the plan fits, at exactly the usable memory.
    wl = workload(prompts_per_step=128, samples_per_prompt=8, prompt_tokens=512,
                  response_tokens=2048, max_response_tokens=8192)  # fmt: skip
    layout = train_layout(train_recompute="selective")
    batch = Batch.of(wl, Needs())
    fig = ModelFigures.of(QWEN25_7B)
    usable = 0.9 * 80 * GIB
    yes = np.array([True])
    mem = training_memory([(fig, yes)], [(fig, yes, 2.0)], layout, batch, usable, DEFAULT_OVERHEADS)
    states = 16 * P / 8 + 2 * P / 8
    gathered = 2 * (P - 2 * 152_064 * 3584) / 28 * 7 / 8  # one layer's bf16 weights, 7/8 remote
    per_token = 34 * 3584 * 28 + 152_064 * 4
    assert mem.resident[0] == pytest.approx(states)
    assert mem.micro_tokens[0] == pytest.approx((usable - states - gathered) / per_token)
    assert 14_800 < mem.micro_tokens[0] < 14_900
    assert mem.bytes[0] == pytest.approx(usable)
    # full recompute keeps 2 bytes per layer and token: the whole budget fits
    full = training_memory(
        [(fig, yes)], [(fig, yes, 2.0)], train_layout(), batch, usable, DEFAULT_OVERHEADS
    )
    assert full.micro_tokens[0] == 16_384 and full.bytes[0] < usable
    r = evaluate(H100, QWEN25_7B, wl, one_plan(rollout_tp=2, train_recompute="selective"))
    assert r.feasible[0]


def test_infeasible_plan_reports_overflow() -> None:
    # Llama-3.1-70B trained unsharded (ZeRO-0, tp 1) on 8 GPUs: 16 bytes x 70.6 B params
    # is ~1.05 TiB per GPU, far beyond 72 GiB usable.
    r = evaluate(H100, LLAMA31_70B, workload(), one_plan(train_zero=0))
    assert not r.feasible[0]
    assert r.overflow_gib[0] > 900
    assert r.row(0)["feasible"] is False


def _train_memory(arch, table: PlanTable) -> np.ndarray:  # type: ignore[no-untyped-def]
    return evaluate(H100, arch, workload(prompts_per_step=64), table, check=False).memory_train_gib


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    tp=st.sampled_from([1, 2, 4]),
    pp=st.sampled_from([1, 2, 4]),
    dp=st.sampled_from([2, 4, 8]),
    zero=st.integers(0, 3),
    recompute=st.sampled_from(["none", "selective", "full"]),
    moe=st.booleans(),
)
def test_memory_never_rises_when_tp_pp_or_zero_grows(
    tp: int, pp: int, dp: int, zero: int, recompute: str, moe: bool
) -> None:
    """At a fixed GPU count, doubling tp or pp (dp halves) or raising the ZeRO stage never
    raises the training memory per GPU."""
    arch = QWEN3_30B_A3B if moe else LLAMA31_70B
    gpus = tp * pp * dp

    def table(t: int, p: int, z: int) -> PlanTable:
        return PlanTable.from_arrays(
            placement="disaggregated", execution="sync", rollout_gpus=8, rollout_tp=8,
            train_gpus=gpus, train_tp=t, train_pp=p, train_zero=z, train_recompute=recompute,
        )  # fmt: skip

    base = _train_memory(arch, table(tp, pp, zero))[0]
    assert _train_memory(arch, table(2 * tp, pp, zero))[0] <= base * (1 + 1e-12)
    assert _train_memory(arch, table(tp, 2 * pp, zero))[0] <= base * (1 + 1e-12)
    if zero < 3:
        assert _train_memory(arch, table(tp, pp, zero + 1))[0] <= base * (1 + 1e-12)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(tp=st.sampled_from([1, 2, 4]), pp=st.sampled_from([1, 2, 4]), dp=st.sampled_from([1, 2, 4]))
def test_rollout_minimum_memory_never_rises_with_tp_or_pp(tp: int, pp: int, dp: int) -> None:
    batch = Batch.of(workload(), Needs())
    fig = ModelFigures.of(LLAMA31_70B)

    def minimum(t: int, p: int) -> float:
        layout = RolloutLayout.of(one_plan(rollout_gpus=t * p * dp, rollout_tp=t, rollout_pp=p,
                                           train_gpus=t * p * dp))  # fmt: skip
        return float(rollout_memory(fig, layout, batch, 1e12, DEFAULT_OVERHEADS).minimum[0])

    assert minimum(2 * tp, pp) <= minimum(tp, pp)
    assert minimum(tp, 2 * pp) <= minimum(tp, pp)


@pytest.mark.parametrize(
    ("layers", "pp", "share"),
    [(28, 4, 7 / 28), (61, 2, 31 / 61), (61, 16, 4 / 61), (61, 61, 1 / 61), (80, 3, 27 / 80)],
)
def test_fullest_pipeline_stage_share_by_hand(layers: int, pp: int, share: float) -> None:
    fig = ModelFigures.of(QWEN25_7B.model_copy(update={"layers": layers}))
    assert fig.stage_share(np.array([float(pp)]))[0] == pytest.approx(share, rel=1e-12)


def test_uneven_stages_hold_the_fullest_stages_weights() -> None:
    # Qwen2.5-7B's 28 layers over pp 3 (10 + 9 + 9): the state on a GPU is that of 10 layers'
    # share, more than a third of the model; over pp 4 (7 each) exactly a quarter.
    fig = ModelFigures.of(QWEN25_7B)
    even = trained_state(fig, train_layout(train_pp=4, train_zero=0)).total[0]
    assert even == pytest.approx(16 * P / 4, rel=1e-12)
    uneven = trained_state(
        fig, train_layout(train_pp=3, train_zero=0, rollout_gpus=6, train_gpus=6)
    ).total[0]
    assert uneven == pytest.approx(16 * P * 10 / 28, rel=1e-12)


def test_folded_experts_split_over_tensor_ranks_too() -> None:
    # Qwen3-30B-A3B on 8 GPUs, tp 2, dp 4: with etp = tp = 2 experts shard over ep x etp
    # and ep must divide dp = 4; folding (etp 1) lets ep 8 span the tensor ranks, each GPU
    # keeping 1/8 of the experts whole with no expert-data-parallel peer to shard ZeRO over.
    fig = ModelFigures.of(QWEN3_30B_A3B)
    classic = train_layout(train_tp=2, train_ep=4, train_zero=1)
    assert classic.expert_shard_group[0] == 1.0  # dp * cp * tp / (ep * etp) = 4 * 2 / 8
    folded = train_layout(train_tp=2, train_ep=8, train_etp=1, train_zero=1)
    assert folded.expert_shard_group[0] == 1.0  # 4 * 2 / (8 * 1)
    dense = fig.dense_params / 2
    expected = 16 * fig.expert_params / 8 + 4 * dense + 12 * dense / 4
    for layout in (classic, folded):
        assert trained_state(fig, layout).total[0] == pytest.approx(expected, rel=1e-12)


def test_the_plan_states_the_engine_fraction_micro_batch_and_headroom() -> None:
    # The per-plan memory contract exports build on. Qwen2.5-7B colocated on 8 H100s:
    # the engine's budget is HBM minus what the trainer keeps resident minus the reserve,
    # the micro-batch holds at least the longest sequence, and each pool's headroom is HBM
    # minus its peak.
    wl = workload(prompts_per_step=128, samples_per_prompt=8, prompt_tokens=512,
                  response_tokens=2048, max_response_tokens=8192)  # fmt: skip
    r = evaluate(H100, QWEN25_7B, wl, one_plan(rollout_tp=2, train_recompute="selective"))
    row = r.row(0)
    hbm = 80.0
    rollout = row["memory_breakdown_gib"]["rollout"]
    engine = row["rollout"]["memory_fraction"] * hbm
    assert engine >= rollout["weights"] + rollout["workspace"] + rollout["kv_cache"] - 1e-9
    headroom = row["headroom_gib_per_gpu"]
    assert headroom["rollout"] == pytest.approx(hbm - rollout["trainer_state"] - engine)
    assert headroom["train"] == pytest.approx(hbm - row["memory_gib_per_gpu"]["train"])
    assert min(headroom.values()) > 0.0
    assert row["train"]["micro_batch_tokens"] >= 512 + 8192
    # Disaggregated, nothing of the trainer stays: the engine gets the whole budget.
    apart = evaluate(H100, QWEN25_7B, wl, one_plan(placement="disaggregated", rollout_gpus=4,
                                                   train_gpus=4, rollout_tp=2))  # fmt: skip
    assert apart.row(0)["rollout"]["memory_fraction"] > row["rollout"]["memory_fraction"]
