"""Weight sync: in-place resharding when colocated, a network broadcast when disaggregated."""

from __future__ import annotations

import dataclasses
import itertools
import math

import pytest
from rlmguide.cost import evaluate
from rlmguide.cost.overheads import DEFAULT_OVERHEADS
from test_cost_specs import H100, QWEN7B_PARAMS, QWEN25_7B, one_plan, workload

P = float(QWEN7B_PARAMS)
BUCKETS = math.ceil(2 * P / 2**29)  # 15,231,233,024 bytes in 512 MiB buckets: 29
COPY = 3.35e12 * 0.6  # the engine load is an HBM copy at the decode_hbm share
BUCKET_S = DEFAULT_OVERHEADS.weight_sync_bucket_seconds  # 20 ms, fitted (bench/fidelity.py)
OUT_LATENCY = DEFAULT_OVERHEADS.scale_out_latency_seconds  # 200 us, fitted alike


def test_bucket_count_by_hand() -> None:
    assert BUCKETS == 29  # 15,231,233,024 / 536,870,912 = 28.4


def test_the_figures_below_use_the_fitted_constants() -> None:
    # The hand-checked seconds in this file assume these defaults (cost.overheads).
    assert (BUCKET_S, OUT_LATENCY) == (20e-3, 200e-6)


def test_disaggregated_broadcast_by_hand() -> None:
    # Trainer tp 1 (ZeRO-1) sends its full 2P = 15.2 GB shard; each rollout GPU (tp 2) takes
    # P = 7.6 GB. Pipelined broadcast at one NIC: 400 Gbit/s * 0.8 = 40 GB/s:
    #   max(2P, P) / 40e9 + 200 us = 0.3808 + 0.0002 = 0.3810 s; load: 2 * P / 2.01e12 =
    #   7.58 ms; buckets: 29 * 20 ms = 0.58 s (the depth).
    plan = one_plan(
        placement="disaggregated", rollout_gpus=16, rollout_tp=2, train_gpus=16, train_zero=1
    )
    sync = evaluate(H100, QWEN25_7B, workload(), plan).stages["weight_sync"]
    transfer = 2 * P / 40e9 + OUT_LATENCY
    load = 2 * P / COPY
    assert sync.depth_seconds[0] == pytest.approx(BUCKETS * BUCKET_S)
    assert sync.work_seconds[0] == pytest.approx(transfer + load)
    assert sync.seconds[0] == pytest.approx(transfer + load + BUCKETS * BUCKET_S)
    # 0.3810 s + 7.58 ms + 0.58 s = 0.9686 s
    assert sync.seconds[0] == pytest.approx(0.9686, rel=1e-4)
    # bytes = 2 x params per receiving replica: 8 replicas of tp 2
    assert sync.link_bytes[0] == pytest.approx(8 * 2 * P)
    assert sync.gpus[0] == 32
    assert sync.bound[0] == 4  # depth: the 0.58 s of bucket set-up exceed the 0.39 s transfer


def test_colocated_same_layout_moves_nothing_over_links() -> None:
    # train tp 2, ZeRO-1 (weights replicated over dp) and rollout tp 2: each GPU already holds
    # its rollout shard; only the engine load (an HBM copy) and the buckets remain.
    plan = one_plan(rollout_tp=2, train_tp=2, train_zero=1)
    sync = evaluate(H100, QWEN25_7B, workload(), plan).stages["weight_sync"]
    assert sync.link_bytes[0] == 0
    # each GPU reads and writes its P-byte shard (2P / 2): 2 * P / 2.01e12 = 7.58 ms
    assert sync.seconds[0] == pytest.approx(2 * P / COPY + BUCKETS * BUCKET_S)


def test_colocated_zero3_gathers_the_rollout_shard_over_nvlink() -> None:
    # ZeRO-3 over 8 GPUs, rollout tp 1: every GPU gathers 7/8 of 2P from its node's peers:
    # 7/8 * 15,231,233,024 / 360e9 + 10 us = 37.0 ms
    sync = evaluate(H100, QWEN25_7B, workload(), one_plan(train_zero=3)).stages["weight_sync"]
    gather = 7 / 8 * 2 * P / 3.6e11 + 10e-6
    assert sync.work_seconds[0] == pytest.approx(gather + 2 * 2 * P / COPY)
    assert sync.link_bytes[0] == pytest.approx(8 * 7 / 8 * 2 * P)
    assert sync.scale_up_seconds[0] == pytest.approx(gather)


def test_the_network_broadcast_packs_its_own_buckets() -> None:
    # NeMo RL's 2%-of-memory buffers on an 80 GiB GPU: 1.6 GiB, so ceil(15.2 GB / 1.6 GiB) = 9
    # buckets where the default 512 MiB makes 29; the colocated path keeps its own buckets.
    from dataclasses import replace

    nemo = replace(DEFAULT_OVERHEADS, weight_broadcast_bucket_bytes=0.02 * 80 * 2**30)
    apart = one_plan(
        placement="disaggregated", rollout_gpus=16, rollout_tp=2, train_gpus=16, train_zero=1
    )
    sync = evaluate(H100, QWEN25_7B, workload(), apart, overheads=nemo).stages["weight_sync"]
    assert math.ceil(2 * P / (0.02 * 80 * 2**30)) == 9
    assert sync.depth_seconds[0] == pytest.approx(9 * BUCKET_S)
    together = evaluate(H100, QWEN25_7B, workload(), one_plan(), overheads=nemo)
    assert together.stages["weight_sync"].depth_seconds[0] == pytest.approx(BUCKETS * BUCKET_S)


def test_a_framework_sets_its_own_broadcast_bucket() -> None:
    from rlmguide.cost.overheads import for_framework

    gib = 2**30
    # min(2% of the GPU's memory, 5 GiB): H100 80 GiB, GB200 186 GiB, a 300 GiB GPU (capped).
    for memory, bucket in ((80.0, 1.6 * gib), (186.0, 3.72 * gib), (300.0, 5.0 * gib)):
        own = for_framework(DEFAULT_OVERHEADS, "nemo-rl", memory, "any")
        assert own.weight_broadcast_bucket_bytes == pytest.approx(bucket)
        assert own.weight_sync_bucket_bytes == DEFAULT_OVERHEADS.weight_sync_bucket_bytes
    # verl and slime set no bucket of their own beyond the 512 MiB default (verl's one own
    # constant is its FSDP backend's float32 gradient reduction, not a weight-sync figure).
    for framework in ("verl", "slime", "none"):
        own = for_framework(DEFAULT_OVERHEADS, framework, 80.0, "any")
        for name in ("weight_sync_bucket_bytes", "weight_broadcast_bucket_bytes",
                     "weight_broadcast_buffers"):  # fmt: skip
            assert getattr(own, name) == getattr(DEFAULT_OVERHEADS, name)
    assert for_framework(DEFAULT_OVERHEADS, "none", 80.0, "any") == DEFAULT_OVERHEADS
    # slime's own constants are SGLang's CUDA-graph capture limits, a decode figure, its
    # reference run in the actor's parameters, a memory and host-traffic figure, and SGLang's
    # pools for a linear-attention layer's state (float32, a pool of its own beside the KV's).
    slime = for_framework(DEFAULT_OVERHEADS, "slime", 80.0, "any")
    limits = {"graph_batch_limit": 512, "graph_batch_limit_below_tp4": 512, "reference_swap": 0.0}
    limits |= {
        name: getattr(DEFAULT_OVERHEADS, name)
        for name in ("recurrent_state_bytes", "linear_state_share", "linear_state_slots")
    }
    assert dataclasses.replace(slime, **limits) == DEFAULT_OVERHEADS


def test_checkpoint_and_engine_tensors_by_hand() -> None:
    from rlmguide.cost.architecture import ModelFigures
    from test_cost_specs import DEEPSEEK_V3, QWEN3_30B_A3B

    # Qwen2.5-7B: per layer q, k, v, o, 3 biases, 2 norms, gate, up, down = 12; x 28 + embed,
    # norm, lm_head = 339 checkpoint tensors. The engine: qkv_proj, its bias, o_proj, 2 norms,
    # gate_up_proj, down_proj = 7; x 28 + 3 = 199.
    dense = ModelFigures.of(QWEN25_7B)
    assert (dense.checkpoint_tensors, dense.engine_tensors) == (339, 199)
    # Qwen3-30B-A3B: 4 + 2 + 128 x 3 + router = 391 per layer; x 48 + 3 = 18,771. The engine:
    # qkv, o, 2 norms, router, w13, w2 = 7; x 48 + 3 = 339.
    moe = ModelFigures.of(QWEN3_30B_A3B)
    assert (moe.checkpoint_tensors, moe.engine_tensors) == (18_771, 339)
    # DeepSeek-V3: MLA q_a, q_a norm, q_b, kv_a, kv_a norm, kv_b, o + 2 norms = 9 per layer
    # (x 61); 3 dense MLPs of 3; 58 MoE layers of 256 x 3 + router + shared 3 = 772; + 3 =
    # 45,337. NeMo RL's refit guide counts 45,395 tensors loaded per vLLM rank
    # (docs-nemo-rl-checkpoint-engine-refit): these plus the 58 routing biases left out.
    v3 = ModelFigures.of(DEEPSEEK_V3)
    assert v3.checkpoint_tensors == 61 * 9 + 3 * 3 + 58 * 772 + 3 == 45_337
    # The engine fuses MLA's two down projections: 8 per layer, dense 2, MoE 3 + shared 2.
    assert v3.engine_tensors == 61 * 8 + 3 * 2 + 58 * 5 + 3 == 787


def test_per_tensor_sync_by_hand() -> None:
    # One tensor at a time, 16 + 16 GPUs (two nodes: the sync group crosses the network):
    # each of the 339 checkpoint tensors is a broadcast (200 us across nodes) and an engine
    # load call over 199 engine tensors at 1.78 us: 339 * (200e-6 + 199 * 1.78e-6) =
    # 0.0678 + 0.1201 = 0.1879 s of depth in place of the 29 buckets' 29 * 20 ms = 0.58 s;
    # the bytes are the same.
    per_tensor = DEFAULT_OVERHEADS.load_call_seconds_per_engine_tensor
    assert per_tensor == pytest.approx(0.12 / (339 * 199), rel=1e-3)
    fields = dict(
        placement="disaggregated", rollout_gpus=16, rollout_tp=2, train_gpus=16, train_zero=1
    )
    bucketed = evaluate(H100, QWEN25_7B, workload(), one_plan(**fields)).stages["weight_sync"]
    tensors = evaluate(
        H100, QWEN25_7B, workload(), one_plan(**fields, rollout_per_tensor=True)
    ).stages["weight_sync"]
    depth = 339 * (OUT_LATENCY + 199 * per_tensor)
    assert depth == pytest.approx(0.1879, rel=1e-3)
    assert tensors.depth_seconds[0] == pytest.approx(depth)
    assert tensors.work_seconds[0] == pytest.approx(bucketed.work_seconds[0])
    assert tensors.seconds[0] == pytest.approx(bucketed.work_seconds[0] + depth)


def test_per_tensor_sync_grows_with_tensors_times_engine_tensors() -> None:
    # The per-call cost scales with the engine's parameter tensors, the calls with the
    # checkpoint's: a mixture of experts pays far more per byte than a dense model.
    from test_cost_specs import QWEN3_30B_A3B

    fields = dict(
        placement="disaggregated", rollout_gpus=16, rollout_tp=2, train_gpus=16, train_zero=1,
        rollout_per_tensor=True,
    )  # fmt: skip
    sync = evaluate(H100, QWEN3_30B_A3B, workload(), one_plan(**fields)).stages["weight_sync"]
    per_call = OUT_LATENCY + 339 * DEFAULT_OVERHEADS.load_call_seconds_per_engine_tensor
    assert sync.depth_seconds[0] == pytest.approx(18_771 * per_call)
    # 18,771 * (200e-6 + 339 * 1.78e-6) = 18,771 * 803.42e-6 = 15.08 s, where 512 MiB buckets
    # take ceil(61,064,220,672 / 2**29) = 114 x 20 ms = 2.28 s
    assert sync.depth_seconds[0] == pytest.approx(15.08, rel=1e-3)


def test_buckets_in_flight_overlap_their_fixed_costs() -> None:
    # NeMo RL's refit alternates two buffers: with B in flight a bucket takes
    # max(transfer, (fixed + transfer) / B). 9 buckets of 1.6 GiB (test above): work =
    # 2P / 40e9 + 200 us + 2P / 2.01e12 = 0.3808 + 0.0002 + 0.0076 = 0.3886 s, fixed
    # 9 * 20 ms = 0.18 s; one buffer adds them (0.5686 s), two take
    # max(0.3886, 0.5686 / 2) = 0.3886 s: the set-up hides behind the bytes.
    from dataclasses import replace

    from rlmguide.cost.overheads import for_framework

    nemo = for_framework(DEFAULT_OVERHEADS, "nemo-rl", 80.0, "any")
    assert nemo.weight_broadcast_buffers == 2
    assert DEFAULT_OVERHEADS.weight_broadcast_buffers == 1
    apart = one_plan(
        placement="disaggregated", rollout_gpus=16, rollout_tp=2, train_gpus=16, train_zero=1
    )
    one = replace(nemo, weight_broadcast_buffers=1.0)
    single = evaluate(H100, QWEN25_7B, workload(), apart, overheads=one).stages["weight_sync"]
    double = evaluate(H100, QWEN25_7B, workload(), apart, overheads=nemo).stages["weight_sync"]
    work = 2 * P / 40e9 + OUT_LATENCY + 2 * P / COPY
    assert single.seconds[0] == pytest.approx(work + 9 * BUCKET_S)
    assert single.seconds[0] == pytest.approx(0.5686, rel=1e-4)
    assert double.seconds[0] == pytest.approx(max(work, (work + 9 * BUCKET_S) / 2))
    assert double.seconds[0] == pytest.approx(work)
    assert double.depth_seconds[0] == pytest.approx(9 * BUCKET_S / 2)
    # Colocated, the IPC buckets go one at a time whatever the broadcast's buffers.
    together = evaluate(H100, QWEN25_7B, workload(), one_plan(), overheads=nemo)
    assert together.stages["weight_sync"].depth_seconds[0] == pytest.approx(BUCKETS * BUCKET_S)


def test_more_buffers_never_slow_the_broadcast() -> None:
    from dataclasses import replace

    apart = one_plan(
        placement="disaggregated", rollout_gpus=16, rollout_tp=2, train_gpus=16, train_zero=1
    )
    times = [
        evaluate(
            H100, QWEN25_7B, workload(), apart,
            overheads=replace(DEFAULT_OVERHEADS, weight_broadcast_buffers=b),
        ).stages["weight_sync"]
        for b in (1.0, 2.0, 4.0)
    ]  # fmt: skip
    for slower, faster in itertools.pairwise(times):
        assert faster.seconds[0] <= slower.seconds[0]
        # Brent's bounds hold: max(W, D) <= T <= W + D.
        assert faster.lower_seconds[0] <= faster.seconds[0] <= faster.upper_seconds[0]
