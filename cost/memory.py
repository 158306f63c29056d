"""Memory per GPU: weights, gradients and optimizer states by ZeRO stage, activations by
recompute mode, the rollout's KV cache, and what a colocated plan offloads to switch.

Bytes per parameter of mixed-precision Adam are 2 (bf16 weights) + 2 (bf16 gradients) + 12
(fp32 master, momentum, variance); ZeRO-1 shards the 12 over the data-parallel group, ZeRO-2
also the gradients, ZeRO-3 also the weights (Rajbhandari et al., arXiv 1910.02054).
Activations per layer follow Korthikanti et al. (arXiv 2205.05198) for s tokens, hidden h,
a heads and tensor parallelism t with sequence parallelism: s h (34 + 5 a s / h) / t without
recomputation, 34 s h / t with selective recomputation, 2 s h / t with full recomputation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cost.architecture import ModelFigures
from cost.arrays import FloatArray, IntArray
from cost.batch import Batch
from cost.layouts import RolloutLayout, TrainLayout
from cost.overheads import Overheads
from cost.plans import RECOMPUTE_FULL, RECOMPUTE_NONE, RECOMPUTE_SELECTIVE
from cost.units import BF16_BYTES, FP32_BYTES

WEIGHT_BYTES = BF16_BYTES
GRADIENT_BYTES = BF16_BYTES
OPTIMIZER_BYTES = 3 * FP32_BYTES  # master copy, momentum, variance

# Korthikanti et al. 2022, bytes per token and hidden unit of one layer.
ACTIVATION_BYTES_STORED = 34.0
ACTIVATION_BYTES_SCORES = 5.0  # times heads x sequence / hidden: the attention score matrices
ACTIVATION_BYTES_CHECKPOINT = 2.0  # full recompute keeps only the layer input


def zero_state_bytes(params: FloatArray, group: FloatArray, zero: IntArray) -> FloatArray:
    """Bytes per GPU of weights + gradients + Adam states of `params` parameters held by each
    rank of a group of `group` ranks, at ZeRO stage `zero` (0-3)."""
    weights = np.where(zero >= 3, WEIGHT_BYTES / group, WEIGHT_BYTES)
    grads = np.where(zero >= 2, GRADIENT_BYTES / group, GRADIENT_BYTES)
    optimizer = np.where(zero >= 1, OPTIMIZER_BYTES / group, OPTIMIZER_BYTES)
    return params * (weights + grads + optimizer)


def model_parallel_params(fig: ModelFigures, layout: TrainLayout) -> tuple[FloatArray, FloatArray]:
    """Dense and expert parameters of one tensor x pipeline (x expert) shard."""
    share = fig.stage_share(layout.pp)
    dense = fig.dense_params * share / layout.tp
    expert = fig.expert_params * share / (layout.ep * layout.etp)
    return dense, expert


def trained_state_bytes(fig: ModelFigures, layout: TrainLayout) -> FloatArray:
    """Weights, gradients and optimizer states of a trained model (actor, critic) per GPU."""
    dense, expert = model_parallel_params(fig, layout)
    return zero_state_bytes(dense, layout.shard_group, layout.zero) + zero_state_bytes(
        expert, layout.expert_shard_group, layout.zero
    )


def frozen_weight_bytes(fig: ModelFigures, layout: TrainLayout) -> FloatArray:
    """bf16 weights of a model that is only run forward (reference, reward model); sharded
    like the actor's weights when ZeRO-3 (FSDP) shards those."""
    dense, expert = model_parallel_params(fig, layout)
    zero3 = layout.zero >= 3
    return WEIGHT_BYTES * (
        dense / np.where(zero3, layout.shard_group, 1.0)
        + expert / np.where(zero3, layout.expert_shard_group, 1.0)
    )


def zero3_gather_bytes(fig: ModelFigures, layout: TrainLayout) -> FloatArray:
    """The one layer ZeRO-3 gathers at a time: the part of it that is not this rank's shard
    (its dense weights over the shard group, its experts over the expert shard group)."""
    dense = (fig.dense_params - fig.embedding_params) / fig.layers / layout.tp
    expert = fig.expert_params / max(fig.sparse_layers, 1) / (layout.ep * layout.etp)
    gathered = WEIGHT_BYTES * (
        dense * (1.0 - 1.0 / layout.shard_group) + expert * (1.0 - 1.0 / layout.expert_shard_group)
    )
    return np.where(layout.zero >= 3, gathered, 0.0)


def activation_bytes(
    fig: ModelFigures,
    layout: TrainLayout,
    micro_tokens: FloatArray,
    sequence_tokens: FloatArray | float,
    in_flight: FloatArray,
) -> FloatArray:
    """Activations per GPU while training: the layers of one pipeline stage for the
    micro-batches in flight (1F1B keeps min(pp, m) on the first stage), the layer being
    recomputed under full recomputation, and the fp32 logits of one micro-batch.

    `micro_tokens` are the tokens of one micro-batch, `sequence_tokens` the length of its
    longest sequence (the attention-score term is quadratic in it); context parallelism
    splits both, tensor parallelism with sequence parallelism divides everything. The
    5 a s / h score term is Korthikanti's for attention that stores its score matrices;
    selective recomputation is what removes it (as fused attention kernels do)."""
    tokens = micro_tokens / layout.cp
    sequence = sequence_tokens / layout.cp
    h, tp = float(fig.hidden), layout.tp
    full_layer = (
        tokens * (ACTIVATION_BYTES_STORED * h + ACTIVATION_BYTES_SCORES * fig.heads * sequence) / tp
    )
    per_layer = np.select(
        [layout.recompute == RECOMPUTE_NONE, layout.recompute == RECOMPUTE_SELECTIVE],
        [full_layer, ACTIVATION_BYTES_STORED * h * tokens / tp],
        ACTIVATION_BYTES_CHECKPOINT * h * tokens / tp,
    )
    stored = per_layer * (fig.layers * fig.stage_share(layout.pp)) * in_flight
    # Full recomputation rebuilds one layer at a time in the backward pass, with fused
    # (FlashAttention-style) attention that never stores the score matrices: 34 s h / t.
    working = np.where(
        layout.recompute == RECOMPUTE_FULL, ACTIVATION_BYTES_STORED * h * tokens / tp, 0.0
    )
    logits = tokens * fig.vocab * FP32_BYTES / tp
    return stored + working + logits


@dataclass(frozen=True, slots=True)
class TrainMemory:
    """Per GPU of the training phase."""

    bytes: FloatArray
    resident: FloatArray
    """Model states that persist between steps (what a colocated plan may offload)."""
    micro_tokens: FloatArray
    """Token budget of one training micro-batch (over its context-parallel group): the
    configured budget, or less when the activations of that many tokens do not fit."""


def default_micro_tokens(layout: TrainLayout, batch: Batch, overheads: Overheads) -> FloatArray:
    """The configured per-GPU budget over a context-parallel group (cp splits sequences).

    A pipeline's bubble is (pp - 1) / (m + pp - 1) for m micro-batches, so pipelined layouts
    cut micro-batches down to one sequence, as Megatron's micro_batch_size 1 does.
    """
    budget = overheads.train_microbatch_tokens * layout.cp
    return np.where(layout.pp > 1, np.minimum(budget, batch.sequence_tokens), budget)


def training_memory(
    trained: list[ModelFigures],
    frozen: list[ModelFigures],
    layout: TrainLayout,
    batch: Batch,
    usable_bytes: float,
    overheads: Overheads,
) -> TrainMemory:
    """Model states of the trained and frozen models, one ZeRO-3 gathered layer, and the
    activations of whichever trained model is running.

    Frameworks size micro-batches by tokens; when the configured budget's activations do
    not fit next to the states, the budget shrinks to what fits (dynamic batch size), down to
    the micro-batch that holds the longest sequence: a plan is infeasible only when even that
    does not fit. Activations are linear in the micro-batch's tokens, so the largest budget
    that fits is the room left over the activation bytes per token."""
    n = layout.gpus.shape[0]
    states = sum((trained_state_bytes(f, layout) for f in trained), np.zeros(n))
    states = states + sum((frozen_weight_bytes(f, layout) for f in frozen), np.zeros(n))
    gathered = np.max([zero3_gather_bytes(f, layout) for f in trained + frozen], axis=0)
    per_rank = np.ceil(batch.trained_sequences / batch.minibatches / layout.dp)
    # 1F1B holds up to pp micro-batches on the first stage (never more than there are).
    in_flight = np.minimum(layout.pp, per_rank)
    one = np.ones(n)
    longest = batch.longest_sequence_tokens
    per_token = np.max(
        [activation_bytes(f, layout, one, longest, in_flight) for f in trained], axis=0
    )
    room = usable_bytes - states - gathered
    budget = default_micro_tokens(layout, batch, overheads)
    chosen = np.minimum(budget, np.maximum(room / per_token, 0.0))
    # The micro-batch that holds the longest sequence is at least that long.
    tokens = np.maximum(np.minimum(chosen, per_rank * batch.sequence_tokens), longest)
    return TrainMemory(states + gathered + per_token * tokens, states, chosen)


@dataclass(frozen=True, slots=True)
class RolloutMemory:
    """Per GPU of a rollout replica."""

    weights: FloatArray
    kv_per_sequence: FloatArray
    """KV bytes reserved per concurrent sequence: its mean final length (prompt + response)."""
    capacity: FloatArray
    """Concurrent sequences per replica the free memory admits (continuous batching), capped
    by the engine's max_num_seqs."""
    minimum: FloatArray
    """Weights + workspace + the KV of one longest sequence: less than this cannot run."""
    workspace: float


def rollout_weight_bytes(fig: ModelFigures, layout: RolloutLayout) -> FloatArray:
    """Dense weights split over tp x pp; experts over pp x max(ep, tp) (with ep <= tp the
    experts are tensor-sliced, beyond it whole experts are spread over ep ranks)."""
    share = fig.stage_share(layout.pp)
    dense = fig.dense_params * share / layout.tp
    expert = fig.expert_params * share / np.maximum(layout.ep, layout.tp)
    return WEIGHT_BYTES * (dense + expert)


def rollout_memory(
    fig: ModelFigures,
    layout: RolloutLayout,
    batch: Batch,
    usable_bytes: float,
    overheads: Overheads,
    resident: FloatArray | float = 0.0,
) -> RolloutMemory:
    """KV capacity left next to the weights and whatever else stays `resident` (a colocated
    trainer's state that was not offloaded)."""
    weights = rollout_weight_bytes(fig, layout)
    kv_token = fig.kv_bytes_per_token(layout.tp, layout.pp)
    kv_sequence = kv_token * batch.sequence_tokens
    free = usable_bytes - weights - overheads.rollout_workspace_bytes - resident
    capacity = np.clip(np.floor(free / kv_sequence), 0.0, float(overheads.max_seqs_per_replica))
    minimum = weights + overheads.rollout_workspace_bytes + kv_token * batch.longest_sequence_tokens
    return RolloutMemory(weights, kv_sequence, capacity, minimum, overheads.rollout_workspace_bytes)


def colocated_offload(
    resident: FloatArray,
    rollout_weights: FloatArray,
    workspace: float,
    wanted_kv: FloatArray,
    usable_bytes: float,
) -> FloatArray:
    """Bytes of trainer state a colocated plan moves to host memory while it generates: just
    enough for the rollout's useful batch (`wanted_kv`), never more than there is."""
    excess = resident + rollout_weights + workspace + wanted_kv - usable_bytes
    return np.clip(excess, 0.0, resident)
