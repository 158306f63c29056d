"""Training: the actor (and the critic when the algorithm has one), minibatch by minibatch.

Each RL step runs minibatches x epochs optimizer steps in a chain. One optimizer step pushes m
micro-batches per data-parallel rank through a 1F1B pipeline of pp stages, (m + pp - 1)
micro-batch times (the bubble is (pp - 1) / (m + pp - 1); interleaved over v chunks per rank,
(pp - 1) / v of them), then reduces gradients over the data-parallel group in the gradient
buffer's dtype (all-reduce, or reduce-scatter + all-gather of the weights under ZeRO-1/2;
ZeRO-3 already reduce-scattered per micro-batch, in the backend's reduce dtype) and applies
Adam. Work W/p is the busy part, m micro-batches plus
the gradient sync and the update; depth is the pipeline's fill and drain, 1 + (pp - 1) / v
micro-batch times per optimizer step, chained over the optimizer steps.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from rlmguide.cost.architecture import ModelFigures
from rlmguide.cost.arrays import BoolArray, FloatArray
from rlmguide.cost.batch import Batch
from rlmguide.cost.collectives import (
    Link,
    all_reduce_bytes,
    gather_bytes,
    split_by_link,
    transfer_seconds,
)
from rlmguide.cost.efficiency import EfficiencyFactors
from rlmguide.cost.hardware import Hardware
from rlmguide.cost.layouts import TrainLayout, TrainLinks
from rlmguide.cost.memory import OPTIMIZER_BYTES, trainable_params
from rlmguide.cost.model_pass import (
    PassCounts,
    micro_pass,
    training_counts,
    work_per_token,
)
from rlmguide.cost.overheads import Overheads
from rlmguide.cost.stage import StageCost, choose
from rlmguide.cost.units import BF16_BYTES

# Adam reads fp32 master, moments and the bf16 gradient and writes them back with the bf16
# weight: 2 x (12 + 2) bytes per parameter of the optimizer's shard.
ADAM_UPDATE_BYTES = 2 * (OPTIMIZER_BYTES + BF16_BYTES)
# CPU Adam reads fp32 master, moments and gradient and writes master and moments: 16 + 12.
CPU_ADAM_BYTES = 28


@dataclass(frozen=True, slots=True)
class MicroBatches:
    """How a data-parallel rank cuts its sequences into micro-batches."""

    count: FloatArray
    tokens: FloatArray
    """Mean tokens of one micro-batch (over the whole context-parallel group)."""


def micro_batches(
    sequences: float, layout: TrainLayout, batch: Batch, budget_tokens: FloatArray
) -> MicroBatches:
    """Pack `sequences` (split over the dp ranks' data shards) into micro-batches of
    `budget_tokens` tokens (packing by tokens, so the mean count of sequences per micro-batch
    may be fractional); a sequence longer than the budget is a micro-batch of its own."""
    per_rank = np.ceil(sequences / layout.data_shards)
    per_micro = np.maximum(budget_tokens / batch.sequence_tokens, 1.0)
    count = np.ceil(per_rank / per_micro)
    return MicroBatches(count, per_rank * batch.sequence_tokens / count)


def pipeline_stage(
    fig: ModelFigures,
    layout: TrainLayout,
    links: TrainLinks,
    flops_rate: FloatArray | float,
    counts: PassCounts,
    micro: MicroBatches,
    batch: Batch,
    rounds: float,
    per_round_seconds: FloatArray,
    per_round_up: FloatArray,
    per_round_out: FloatArray,
    per_round_hbm_seconds: FloatArray,
    per_round_hbm_bytes: FloatArray,
    per_round_link_bytes: FloatArray,
    work_flop: FloatArray,
    expert_loop_seconds: float = 0.0,
    expert_compute: float = 1.0,
    gradient_reduce_bytes: float = BF16_BYTES,
) -> StageCost:
    """`rounds` pipeline flushes of `micro.count` micro-batches each, every round followed by
    a fixed part (gradient sync and update, or nothing for forward passes)."""
    mp = micro_pass(
        fig,
        layout,
        links,
        flops_rate,
        counts,
        micro.tokens,
        batch.sequence_tokens,
        expert_loop_seconds,
        expert_compute,
        gradient_reduce_bytes,
    )
    m, pp = micro.count, layout.pp
    # Interleaving v chunks per rank fills and drains the pipeline in chunk times, 1/v of a
    # stage's micro-batch time: the bubble is (pp - 1) / v micro-batch times (Narayanan et
    # al., arXiv 2104.04473 §2.2.2); micro_pass charges the v-fold point-to-point traffic.
    fill = (pp - 1.0) / layout.virtual_stages
    seconds = rounds * ((m + fill) * mp.seconds + per_round_seconds)
    work = rounds * (m * mp.seconds + per_round_seconds)
    depth = rounds * (1.0 + fill) * mp.seconds
    gpus = layout.gpus
    return StageCost(
        seconds=seconds,
        work_seconds=work,
        depth_seconds=depth,
        work_flop=work_flop,
        hbm_bytes=gpus * rounds * (m * mp.hbm_bytes + per_round_hbm_bytes),
        link_bytes=gpus * rounds * (m * mp.link_bytes + per_round_link_bytes),
        gpus=gpus,
        compute_seconds=rounds * m * mp.compute,
        hbm_seconds=rounds * per_round_hbm_seconds,
        scale_up_seconds=rounds * (m * mp.scale_up + per_round_up),
        scale_out_seconds=rounds * (m * mp.scale_out + per_round_out),
    )


def gradient_sync_bytes(params: FloatArray, layout: TrainLayout, link: Link) -> FloatArray:
    """Bytes one GPU sends per optimizer step to sync the gradients of `params` parameters
    outside ZeRO-3. Megatron-Core's DDP runs the collective on its gradient buffer, float32
    under grad_reduce_in_fp32 (`layout.fp32_gradients`, the buffer memory counts) and the
    weights' bf16 otherwise (grad_dtype, megatron/core/distributed/distributed_data_parallel.py
    L168 at core_v0.15.0): an all-reduce of it without a sharded optimizer; with one (ZeRO-1/2,
    the distributed optimizer) a reduce-scatter of it and, after the step, an all-gather of
    the updated bf16 weights (start_grad_sync L385-L405, start_param_sync L236-L253 of
    megatron/core/distributed/param_and_grad_buffer.py; github-nvidia-megatron-lm). In bf16
    both forms send 4 (n - 1) / n bytes per parameter."""
    gradient = layout.gradient_bytes
    sharded = gather_bytes((gradient + BF16_BYTES) * params, link)
    return np.where(layout.zero >= 1, sharded, all_reduce_bytes(gradient * params, link))


def train_model_stage(
    fig: ModelFigures,
    layout: TrainLayout,
    links: TrainLinks,
    batch: Batch,
    micro_tokens: FloatArray,
    hw: Hardware,
    eff: EfficiencyFactors,
    overheads: Overheads,
) -> StageCost:
    """Training one model (actor or critic) for one RL step, in micro-batches of
    `micro_tokens` tokens (see memory.training_memory)."""
    counts = training_counts(layout)
    micro = micro_batches(batch.trained_sequences / batch.minibatches, layout, batch, micro_tokens)
    dense, expert = trainable_params(fig, layout)

    # Gradient sync per optimizer step (ZeRO-3 did it per micro-batch).
    shard_link, expert_link = links.shard, links.expert_shard
    not_zero3 = layout.zero < 3
    dense_sent = np.where(not_zero3, gradient_sync_bytes(dense, layout, shard_link), 0.0)
    expert_sent = np.where(not_zero3, gradient_sync_bytes(expert, layout, expert_link), 0.0)
    dense_time = np.where(not_zero3, transfer_seconds(dense_sent, shard_link), 0.0)
    expert_time = np.where(not_zero3 & fig.is_moe, transfer_seconds(expert_sent, expert_link), 0.0)
    d_up, d_out = split_by_link(dense_time, shard_link)
    e_up, e_out = split_by_link(expert_time, expert_link)
    # Hybrid sharding: the reduced gradient shard is then all-reduced across the replicas
    # (ZeRO-3's runs per micro-batch, in model_pass); a single replica sends nothing.
    replica_link = links.replica
    shard = dense / layout.shard_group + expert / layout.expert_shard_group
    replica_sent = np.where(
        not_zero3, all_reduce_bytes(layout.gradient_bytes * shard, replica_link), 0.0
    )
    replica_time = np.where(not_zero3, transfer_seconds(replica_sent, replica_link), 0.0)
    r_up, r_out = split_by_link(replica_time, replica_link)

    optimizer_params = np.where(layout.zero >= 1, shard, dense + expert)
    on_cpu = np.where(layout.offload_params, 1.0, layout.offload_optimizer)
    update_bytes = ADAM_UPDATE_BYTES * optimizer_params * (1.0 - on_cpu)
    # Adam is a streaming kernel: it reaches about the HBM share decode reaches.
    update_time = update_bytes / (hw.hbm_bytes_per_s * eff.decode_hbm)
    # A CPU optimizer's share: gradients down, the step in host memory (the node's CPUs serve
    # all its GPUs), updated bf16 weights back up. Not overlapped with the GPU work.
    cpu_params = on_cpu * optimizer_params
    host_copy = 2.0 * BF16_BYTES * cpu_params / hw.host_bytes_per_s
    cpu_step = CPU_ADAM_BYTES * cpu_params * hw.node_gpus / overheads.cpu_adam_bytes_per_s_per_node
    # Streamed parameters: every pass over a micro-batch uploads the rank's weight shard.
    shard_weights = BF16_BYTES * optimizer_params
    streamed = np.where(
        layout.offload_params,
        micro.count * counts.weight_reads * shard_weights / hw.host_bytes_per_s,
        0.0,
    )
    offload_time = host_copy + cpu_step + streamed

    # The loss's elementwise passes over the vocabulary logits (Overheads.loss_bytes_per_logit)
    # on the ranks holding the output layer: the vocabulary is split over the tensor group and
    # the tokens over the context group. Every micro-batch of an optimizer step pays it, which
    # a pipeline's last stage adds to its steady pace. A streaming kernel, like Adam.
    logit_elements = micro.count * micro.tokens / layout.cp * fig.vocab / layout.tp
    loss_bytes = 0.0 if fig.value_head else overheads.loss_bytes_per_logit * logit_elements
    loss_time = loss_bytes / (hw.hbm_bytes_per_s * eff.decode_hbm)
    # The output layer's matmuls the loss runs in float32 (Overheads.head_fp32_matmuls), on the
    # response tokens of the same ranks, at the training matmuls' achieved share of the CUDA
    # cores' peak; left out where the accelerator has no float32 figure.
    head_time: FloatArray | float = 0.0
    if overheads.head_fp32_matmuls > 0 and hw.fp32_flops > 0 and not fig.value_head:
        response_share = batch.response_tokens / batch.sequence_tokens
        head_flops = (
            overheads.head_fp32_matmuls * 2.0 * fig.hidden * fig.vocab / layout.tp
            * micro.count * micro.tokens / layout.cp * response_share
        )  # fmt: skip
        head_time = head_flops / (hw.fp32_flops * eff.train_compute)
    syncs = dense_time + expert_time + replica_time
    per_round = syncs + update_time + offload_time + loss_time + head_time

    tokens = batch.trained_tokens * batch.epochs
    return pipeline_stage(
        fig,
        layout,
        links,
        hw.matmul_rate(layout.fp8) * eff.train_compute,
        counts,
        micro,
        batch,
        rounds=float(batch.optimizer_steps),
        per_round_seconds=per_round,
        per_round_up=d_up + e_up + r_up,
        per_round_out=d_out + e_out + r_out,
        # Host traffic and the CPU step are memory-bound work of the host.
        per_round_hbm_seconds=update_time + offload_time + loss_time,
        per_round_hbm_bytes=update_bytes + loss_bytes,
        per_round_link_bytes=dense_sent + expert_sent + replica_sent,
        work_flop=tokens * work_per_token(fig, counts, batch.sequence_tokens, layout),
        expert_loop_seconds=overheads.expert_loop_seconds,
        expert_compute=eff.expert_compute,
        gradient_reduce_bytes=overheads.zero3_gradient_bytes_per_param,
    )


def value_head_stage(
    fig: ModelFigures,
    tokens: float,
    layout: TrainLayout,
    hw: Hardware,
    rate: float,
    passes: float,
) -> StageCost:
    """A shared actor-critic's value head (hidden -> 1) over `tokens` tokens: 2 x hidden FLOPs
    a token per pass (forward 1 pass, training 3: forward and the two backward products),
    spread over the pool's GPUs at `rate` of peak. It is what remains of the critic once the
    value is a head on the policy (survey §4.1, Table 9); its hidden + 1 parameters (with
    their Adam states, well under a megabyte) are left out of memory."""
    flop = passes * 2.0 * fig.hidden * tokens
    gpus = layout.gpus
    seconds = flop / (gpus * hw.flops * rate)
    zero = np.zeros_like(seconds)
    return StageCost(
        seconds=seconds,
        work_seconds=seconds,
        depth_seconds=zero,
        work_flop=np.full_like(seconds, flop),
        hbm_bytes=zero,
        link_bytes=zero,
        gpus=gpus,
        compute_seconds=seconds,
        hbm_seconds=zero,
        scale_up_seconds=zero,
        scale_out_seconds=zero,
    )


def training_stage(
    actor: ModelFigures,
    critic: ModelFigures | None,
    layout: TrainLayout,
    links: TrainLinks,
    batch: Batch,
    micro_tokens: FloatArray,
    hw: Hardware,
    eff: EfficiencyFactors,
    overheads: Overheads,
    critic_pool: tuple[TrainLayout, TrainLinks, FloatArray] | None = None,
    critic_apart: BoolArray | None = None,
    critic_shared: BoolArray | None = None,
    intra_fused: BoolArray | None = None,
    objectives: int = 1,
) -> StageCost:
    """Actor, then critic on the same GPUs (verl and OpenRLHF train them in turn); a critic
    on its own pool (`critic_apart`) trains beside the actor, and the slower one sets the
    stage's time. Where `intra_fused`, the two updates on the same GPUs are pipelined
    (`StageCost.pipelined`); where `critic_shared`, the critic is a value head on the actor
    and only the head's FLOPs remain (its loss is back-propagated with the actor's). Each of
    `objectives` trains a value model (or head) of its own, one after the other."""
    stage = train_model_stage(actor, layout, links, batch, micro_tokens, hw, eff, overheads)
    if critic is None:
        return stage
    shared = train_model_stage(
        critic, layout, links, batch, micro_tokens, hw, eff, overheads
    ).repeated(objectives)
    n = layout.gpus.shape[0]
    fused = np.zeros(n, dtype=bool) if intra_fused is None else intra_fused
    in_turn = choose(fused, stage.pipelined(shared), stage + shared)
    if critic_pool is not None and critic_apart is not None:
        own_layout, own_links, own_tokens = critic_pool
        apart = train_model_stage(
            critic, own_layout, own_links, batch, own_tokens, hw, eff, overheads
        ).repeated(objectives)
        in_turn = choose(critic_apart, stage.beside(apart), in_turn)
    if critic_shared is None or not critic_shared.any():
        return in_turn
    head = value_head_stage(
        actor, batch.trained_tokens, layout, hw, eff.train_compute, passes=3.0 * objectives
    )
    return choose(critic_shared, stage + head, in_turn)
