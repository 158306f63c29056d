"""Weight sync: putting the trainer's new weights into the rollout engines, once per step.

Colocated, the GPUs reshard in place: each GPU needs its rollout shard; what the training
layout spreads over more ranks (a finer tp x pp, or ZeRO-3 over the data-parallel group) it
gathers from its peers, over NVLink when they share the node. Disaggregated, the trainer's
model-parallel group (gathering first under ZeRO-3) broadcasts over the network to every
rollout replica: 2 x params bytes per receiving replica, pipelined, so the time is the larger
of a sender's and a receiver's share at the per-GPU network rate. Either way the weights then
go into the engine (an HBM copy) bucket by bucket, and each bucket has a fixed cost
(Overheads.weight_sync_bucket_seconds): the buckets are the depth, the bytes the work. The
buckets are the whole model's, as one rank streams it: a colocated framework's IPC buckets
(weight_sync_bucket_bytes), or the network broadcast's (weight_broadcast_bucket_bytes, which a
framework may set for itself: cost.overheads.OWN_FRAMEWORK_CONSTANTS). Where weights go one
tensor at a time (plan.rollout.per_tensor_sync) there are no buckets: every checkpoint tensor
is its own broadcast and its own engine load call, and the calls are the depth. A broadcast
that keeps several buckets in flight (Overheads.weight_broadcast_buffers) overlaps their fixed
costs with one another and with the bytes.
"""

from __future__ import annotations

import numpy as np
from rlmguide.cost.architecture import ModelFigures
from rlmguide.cost.arrays import BoolArray, FloatArray
from rlmguide.cost.collectives import (
    Fabric,
    gather_bytes,
    group_link,
    split_by_link,
    transfer_seconds,
)
from rlmguide.cost.efficiency import EfficiencyFactors
from rlmguide.cost.hardware import Hardware
from rlmguide.cost.layouts import RolloutLayout, TrainLayout, TrainLinks
from rlmguide.cost.memory import rollout_weight_bytes
from rlmguide.cost.overheads import Overheads
from rlmguide.cost.stage import StageCost
from rlmguide.cost.units import BF16_BYTES


def weight_sync_stage(
    fig: ModelFigures,
    rollout: RolloutLayout,
    train: TrainLayout,
    train_links: TrainLinks,
    colocated: BoolArray,
    hw: Hardware,
    fabric: Fabric,
    eff: EfficiencyFactors,
    overheads: Overheads,
) -> StageCost:
    # LoRA moves only the adapters; an fp8 engine receives bf16 and quantises as it loads.
    adapters = BF16_BYTES * fig.lora_params(train.lora_rank)
    model_bytes = np.where(train.lora, adapters, BF16_BYTES * fig.params_total)
    held = rollout_weight_bytes(fig, rollout)  # the engine's copy, in its precision
    received = held * BF16_BYTES / rollout.weight_bytes
    shard = np.where(train.lora, adapters * fig.stage_share(rollout.pp) / rollout.tp, received)
    # Read the gathered tensor, write the engine's copy.
    copy_bytes = shard + np.where(train.lora, shard, held)
    copy_time = copy_bytes / (hw.hbm_bytes_per_s * eff.decode_hbm)
    # One sender streams the whole model bucket by bucket either way; across the network it
    # packs buckets of the framework's own size (Overheads.weight_broadcast_bucket_bytes).
    bucket_bytes = np.where(
        colocated, overheads.weight_sync_bucket_bytes, overheads.weight_broadcast_bucket_bytes
    )
    buckets = np.ceil(model_bytes / bucket_bytes)
    # One tensor at a time (verl's fully-async trainer without its checkpoint engine: per
    # tensor, a broadcast from rank 0 to every trainer and rollout rank, then load_weights on
    # that tensor alone; recipe/fully_async_policy/megatron_worker.py L92-L106 at cdd7d874,
    # github-volcengine-verl): each call pays the broadcast's latency over the sync group and
    # the engine's per-call cost, which grows with the engine's own parameter tensors.
    sync_group = group_link(fabric, rollout.gpus + np.where(colocated, 0.0, train.gpus), 1.0)
    per_call = (
        sync_group.latency + fig.engine_tensors * overheads.load_call_seconds_per_engine_tensor
    )
    depth = np.where(
        rollout.per_tensor,
        fig.checkpoint_tensors * per_call,
        buckets * overheads.weight_sync_bucket_seconds,
    )

    # Colocated: gather from the ranks the training layout spreads this shard over.
    zero3 = train.zero >= 3
    spread = (
        train.tp * train.pp * np.where(zero3, train.shard_group, 1.0) / (rollout.tp * rollout.pp)
    )
    spread = np.maximum(spread, 1.0)
    peers = group_link(fabric, spread, np.where(zero3, train.tp, 1.0))
    local_sent = gather_bytes(shard, peers)
    local_time = transfer_seconds(local_sent, peers)
    local_up, local_out = split_by_link(local_time, peers)

    # Disaggregated: ZeRO-3 first regathers the trainer's model-parallel shard, then a
    # pipelined broadcast over the network to every replica.
    trainer_shard = model_bytes * fig.stage_share(train.pp) / train.tp
    regather_link = train_links.shard
    regather_sent = np.where(zero3, gather_bytes(trainer_shard, regather_link), 0.0)
    regather_time = np.where(zero3, transfer_seconds(regather_sent, regather_link), 0.0)
    rg_up, rg_out = split_by_link(regather_time, regather_link)
    broadcast_time = (
        np.maximum(trainer_shard, shard) / fabric.scale_out_bytes_per_s + fabric.scale_out_latency
    )
    remote_time = regather_time + broadcast_time
    remote_link_bytes = model_bytes * rollout.dp + train.gpus * regather_sent

    transfer = np.where(colocated, local_time, remote_time)
    work = transfer + copy_time
    # B buckets in flight (the broadcast's alternating buffers) each take max(transfer,
    # (fixed + transfer) / B): the bytes share one link, the fixed costs overlap B at a time.
    # One buffer is the sequential sum.
    in_flight = np.where(colocated, 1.0, overheads.weight_broadcast_buffers)
    return StageCost(
        seconds=np.maximum(work, (work + depth) / in_flight),
        work_seconds=work,
        depth_seconds=depth / in_flight,
        work_flop=np.zeros_like(shard),
        hbm_bytes=rollout.gpus * copy_bytes,
        link_bytes=np.where(colocated, rollout.gpus * local_sent, remote_link_bytes),
        gpus=np.where(colocated, rollout.gpus, rollout.gpus + train.gpus),
        compute_seconds=np.zeros_like(shard),
        hbm_seconds=copy_time,
        scale_up_seconds=np.where(colocated, local_up, rg_up),
        scale_out_seconds=np.where(colocated, local_out, rg_out + broadcast_time),
    )


def switch_stage(moved_bytes: FloatArray, gpus: FloatArray, hw: Hardware) -> StageCost:
    """Offload traffic between phases: phase-offloaded state parked on the host and brought
    back, frozen models loaded for the assessment, over each GPU's host link (reported as a
    memory-bandwidth bound)."""
    seconds = moved_bytes / hw.host_bytes_per_s
    zero = np.zeros_like(seconds)
    return StageCost(
        seconds=seconds,
        work_seconds=seconds,
        depth_seconds=zero,
        work_flop=zero,
        hbm_bytes=gpus * moved_bytes,
        link_bytes=zero,
        gpus=np.where(moved_bytes > 0, gpus, 0.0),
        compute_seconds=zero,
        hbm_seconds=seconds,
        scale_up_seconds=zero,
        scale_out_seconds=zero,
    )
