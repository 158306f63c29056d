"""Weight sync: in-place resharding when colocated, a network broadcast when disaggregated."""

from __future__ import annotations

import math

import pytest
from rlmguide.cost import evaluate
from rlmguide.cost.overheads import DEFAULT_OVERHEADS
from test_cost_specs import H100, QWEN7B_PARAMS, QWEN25_7B, one_plan, workload

P = float(QWEN7B_PARAMS)
BUCKETS = math.ceil(2 * P / 2**29)  # 15,231,233,024 bytes in 512 MiB buckets: 29
COPY = 3.35e12 * 0.6  # the engine load is an HBM copy at the decode_hbm share
BUCKET_S = DEFAULT_OVERHEADS.weight_sync_bucket_seconds  # 40 ms, fitted (bench/fidelity.py)
OUT_LATENCY = DEFAULT_OVERHEADS.scale_out_latency_seconds  # 100 us


def test_bucket_count_by_hand() -> None:
    assert BUCKETS == 29  # 15,231,233,024 / 536,870,912 = 28.4


def test_disaggregated_broadcast_by_hand() -> None:
    # Trainer tp 1 (ZeRO-1) sends its full 2P = 15.2 GB shard; each rollout GPU (tp 2) takes
    # P = 7.6 GB. Pipelined broadcast at one NIC: 400 Gbit/s * 0.8 = 40 GB/s:
    #   max(2P, P) / 40e9 + 100 us = 0.3809 s; load: 2 * P / 2.01e12 = 7.58 ms;
    #   buckets: 29 * 40 ms = 1.16 s (the depth).
    plan = one_plan(
        placement="disaggregated", rollout_gpus=16, rollout_tp=2, train_gpus=16, train_zero=1
    )
    sync = evaluate(H100, QWEN25_7B, workload(), plan).stages["weight_sync"]
    transfer = 2 * P / 40e9 + OUT_LATENCY
    load = 2 * P / COPY
    assert sync.depth_seconds[0] == pytest.approx(BUCKETS * BUCKET_S)
    assert sync.work_seconds[0] == pytest.approx(transfer + load)
    assert sync.seconds[0] == pytest.approx(transfer + load + BUCKETS * BUCKET_S)
    # bytes = 2 x params per receiving replica: 8 replicas of tp 2
    assert sync.link_bytes[0] == pytest.approx(8 * 2 * P)
    assert sync.gpus[0] == 32
    assert sync.bound[0] == 4  # depth: the 1.16 s of bucket set-up exceed the 0.38 s transfer


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
    # verl and slime set none of their own beyond the 512 MiB default.
    for framework in ("verl", "slime", "none"):
        assert for_framework(DEFAULT_OVERHEADS, framework, 80.0, "any") == DEFAULT_OVERHEADS
