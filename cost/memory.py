"""Memory per GPU: weights, gradients and optimizer states by ZeRO stage, activations by
recompute mode, the rollout's KV cache, and what a colocated plan offloads to switch.

Bytes per parameter of mixed-precision Adam are 2 (bf16 weights) + 2 (bf16 gradients) + 12
(fp32 master, momentum, variance); ZeRO-1 shards the 12 over the data-parallel group, ZeRO-2
also the gradients, ZeRO-3 also the weights (Rajbhandari et al., arXiv 1910.02054).
Activations per layer follow Korthikanti et al. (arXiv 2205.05198) for s tokens, hidden h and
tensor parallelism t with sequence parallelism: 34 s h / t with FlashAttention-style attention
(no stored score matrices, with or without selective recomputation), 2 s h / t with full
recomputation. Offload (phase, CPU optimizer, streamed parameters, parked frozen models) moves
terms to the host as the frameworks do it; LoRA keeps gradients and Adam states for the
adapters only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from rlmguide.cost.architecture import ModelFigures
from rlmguide.cost.arrays import BoolArray, FloatArray, IntArray
from rlmguide.cost.batch import Batch
from rlmguide.cost.layouts import RolloutLayout, TrainLayout
from rlmguide.cost.overheads import Overheads
from rlmguide.cost.plans import RECOMPUTE_FULL
from rlmguide.cost.units import BF16_BYTES, FP32_BYTES

WEIGHT_BYTES = BF16_BYTES
GRADIENT_BYTES = BF16_BYTES
OPTIMIZER_BYTES = 3 * FP32_BYTES  # master copy, momentum, variance

# Korthikanti et al. 2022, bytes per token and hidden unit of one layer.
ACTIVATION_BYTES_STORED = 34.0
ACTIVATION_BYTES_CHECKPOINT = 2.0  # full recompute keeps only the layer input


@dataclass(frozen=True, slots=True)
class ModelState:
    """Bytes per GPU of one trained model's persistent state, on the GPU."""

    weights: FloatArray
    gradients: FloatArray
    optimizer: FloatArray

    @property
    def total(self) -> FloatArray:
        return self.weights + self.gradients + self.optimizer


def model_parallel_params(fig: ModelFigures, layout: TrainLayout) -> tuple[FloatArray, FloatArray]:
    """Dense and expert parameters of one tensor x pipeline (x expert) shard."""
    share = fig.stage_share(layout.pp)
    dense = fig.dense_params * share / layout.tp
    expert = fig.expert_params * share / (layout.ep * layout.etp)
    return dense, expert


def trainable_params(fig: ModelFigures, layout: TrainLayout) -> tuple[FloatArray, FloatArray]:
    """Dense and expert parameters of a shard that get gradients and Adam states: all of
    them, or only the LoRA adapters (which sit on the dense layers)."""
    dense, expert = model_parallel_params(fig, layout)
    adapters = fig.lora_params(layout.lora_rank) * fig.stage_share(layout.pp) / layout.tp
    return np.where(layout.lora, adapters, dense), np.where(layout.lora, 0.0, expert)


def _sharded(
    dense: FloatArray, expert: FloatArray, layout: TrainLayout, from_stage: int
) -> FloatArray:
    """Parameters one rank keeps when ZeRO shards them from stage `from_stage` on."""
    split = layout.zero >= from_stage
    return np.where(
        split, dense / layout.shard_group + expert / layout.expert_shard_group, dense + expert
    )


def trained_state(fig: ModelFigures, layout: TrainLayout) -> ModelState:
    """Weights, gradients and Adam states of a trained model (actor, critic) on one GPU.

    ZeRO-1 shards the optimizer states, ZeRO-2 also the gradients, ZeRO-3 also the weights.
    A CPU optimizer keeps its share of the Adam states on the host; streamed parameters keep
    weights, gradients and Adam states there (only gathered layers visit the GPU)."""
    dense, expert = model_parallel_params(fig, layout)
    t_dense, t_expert = trainable_params(fig, layout)
    adapters = np.where(layout.lora, t_dense, 0.0)
    weights = WEIGHT_BYTES * (_sharded(dense, expert, layout, 3) + adapters)
    gradients = GRADIENT_BYTES * _sharded(t_dense, t_expert, layout, 2)
    optimizer = OPTIMIZER_BYTES * _sharded(t_dense, t_expert, layout, 1)
    optimizer = optimizer * (1.0 - layout.offload_optimizer)
    on_gpu = ~layout.offload_params
    return ModelState(weights * on_gpu, gradients * on_gpu, optimizer * on_gpu)


def host_state_bytes(fig: ModelFigures, layout: TrainLayout) -> FloatArray:
    """Host memory per GPU of a trained model's offloaded state: the CPU optimizer's fp32
    master weights, moments and gradients (16 bytes per parameter of its share), or all of
    it when parameters stream (plus their bf16 copy)."""
    t_dense, t_expert = trainable_params(fig, layout)
    trainable = _sharded(t_dense, t_expert, layout, 1)
    cpu_adam = (OPTIMIZER_BYTES + FP32_BYTES) * trainable
    streamed = np.where(layout.offload_params, 1.0, layout.offload_optimizer)
    weights = np.where(layout.offload_params, WEIGHT_BYTES * trainable, 0.0)
    return streamed * cpu_adam + weights


def frozen_weight_bytes(
    fig: ModelFigures, layout: TrainLayout, weight_bytes: float = WEIGHT_BYTES
) -> FloatArray:
    """Weights of a model that is only run forward (reference, reward model), bf16 unless
    quantised; sharded like the actor's weights when ZeRO-3 (FSDP) shards those."""
    dense, expert = model_parallel_params(fig, layout)
    return weight_bytes * _sharded(dense, expert, layout, 3)


def zero3_gather_bytes(fig: ModelFigures, layout: TrainLayout) -> FloatArray:
    """The one layer ZeRO-3 gathers at a time: the part of it that is not this rank's shard
    (its dense weights over the shard group, its experts over the expert shard group).
    Streamed parameters arrive whole from the host, so the full layer counts."""
    dense = (fig.dense_params - fig.embedding_params) / fig.layers / layout.tp
    expert = fig.expert_params / max(fig.sparse_layers, 1) / (layout.ep * layout.etp)
    kept_dense = np.where(layout.offload_params, 0.0, 1.0 / layout.shard_group)
    kept_expert = np.where(layout.offload_params, 0.0, 1.0 / layout.expert_shard_group)
    gathered = WEIGHT_BYTES * (dense * (1.0 - kept_dense) + expert * (1.0 - kept_expert))
    return np.where(layout.zero >= 3, gathered, 0.0)


def activation_bytes(
    fig: ModelFigures,
    layout: TrainLayout,
    micro_tokens: FloatArray,
    in_flight: FloatArray,
) -> FloatArray:
    """Activations per GPU while training: the layers of one pipeline stage for the
    micro-batches in flight (1F1B keeps min(pp, m) on the first stage), the layer being
    recomputed under full recomputation, and the fp32 logits of one micro-batch.

    `micro_tokens` are the tokens of one micro-batch; context parallelism splits them, tensor
    parallelism with sequence parallelism divides everything. Attention runs in fused
    (FlashAttention-style) kernels that never store the score matrices, as every framework
    runs it, so without recomputation a layer keeps Korthikanti's 34 s h / t bytes; selective
    recomputation of the core attention keeps the same (the scores were never stored), and
    full recomputation keeps only each layer's input, 2 s h / t, and rebuilds one layer at a
    time in the backward pass."""
    tokens = micro_tokens / layout.cp
    h, tp = float(fig.hidden), layout.tp
    stored = ACTIVATION_BYTES_STORED * h * tokens / tp
    per_layer = np.where(
        layout.recompute == RECOMPUTE_FULL, ACTIVATION_BYTES_CHECKPOINT * h * tokens / tp, stored
    )
    kept = per_layer * (fig.layers * fig.stage_share(layout.pp)) * in_flight
    working = np.where(layout.recompute == RECOMPUTE_FULL, stored, 0.0)
    logits = tokens * fig.vocab * FP32_BYTES / tp
    return kept + working + logits


def forward_activation_bytes(
    fig: ModelFigures, layout: TrainLayout, micro_tokens: FloatArray
) -> FloatArray:
    """A forward-only pass (log-probs, values, rewards) keeps one layer's activations and the
    fp32 logits of its micro-batch."""
    tokens = micro_tokens / layout.cp
    layer = ACTIVATION_BYTES_STORED * fig.hidden * tokens / layout.tp
    return layer + tokens * fig.vocab * FP32_BYTES / layout.tp


@dataclass(frozen=True, slots=True)
class TrainMemory:
    """Per GPU of a training pool: the terms of its peak phase and what each phase needs."""

    terms: dict[str, FloatArray]
    """Bytes by term (weights, gradients, optimizer, frozen_models, zero3_gather,
    activations) in the phase with the higher peak."""
    training: FloatArray
    assessment: FloatArray
    resident: FloatArray
    """State that stays on the GPU while a colocated rollout runs (not phase-offloaded)."""
    host: FloatArray
    """Host memory per GPU holding offloaded state at its peak."""
    switch: FloatArray
    """Bytes per GPU moved between host and GPU per step by phase offload and by loading
    the parked frozen models."""
    micro_tokens: FloatArray
    """Token budget of one training micro-batch (over its context-parallel group): the
    configured budget, or less when the activations of that many tokens do not fit."""
    costed_tokens: FloatArray
    """Tokens of the micro-batch the activations were costed at (over the context-parallel
    group): the budget, capped by what a rank trains per optimizer step, and at least the
    longest sequence (a micro-batch holds a sequence whole)."""

    @property
    def bytes(self) -> FloatArray:
        return np.maximum(self.training, self.assessment)

    def take(self, rows: IntArray) -> TrainMemory:
        return TrainMemory(
            {k: v[rows] for k, v in self.terms.items()},
            self.training[rows],
            self.assessment[rows],
            self.resident[rows],
            self.host[rows],
            self.switch[rows],
            self.micro_tokens[rows],
            self.costed_tokens[rows],
        )


def _largest(arrays: list[FloatArray], n: int) -> FloatArray:
    return np.max(arrays, axis=0) if arrays else np.zeros(n)


def default_micro_tokens(layout: TrainLayout, batch: Batch, overheads: Overheads) -> FloatArray:
    """The configured per-GPU budget over a context-parallel group (cp splits sequences).

    A pipeline's bubble is (pp - 1) / (m + pp - 1) for m micro-batches, so pipelined layouts
    cut micro-batches down to one sequence, as Megatron's micro_batch_size 1 does.
    """
    budget = overheads.train_microbatch_tokens * layout.cp
    return np.where(layout.pp > 1, np.minimum(budget, batch.sequence_tokens), budget)


Placed = tuple[ModelFigures, BoolArray]
"""A model and the plans whose pool holds it."""
Frozen = tuple[ModelFigures, BoolArray, float]
"""A model run forward only, the plans whose pool holds it, and its bytes per weight."""


def training_memory(
    trained: list[Placed],
    frozen: list[Frozen],
    layout: TrainLayout,
    batch: Batch,
    usable_bytes: float,
    overheads: Overheads,
) -> TrainMemory:
    """The training and assessment phases of a pool holding the `trained` models (actor,
    critic) and the `frozen` ones (reference, reward model), each where its mask holds.

    Frameworks size micro-batches by tokens; when the configured budget's activations do
    not fit next to the states, the budget shrinks to what fits (dynamic batch size), down to
    the micro-batch that holds the longest sequence: a plan is infeasible only when even that
    does not fit. Activations are linear in the micro-batch's tokens, so the largest budget
    that fits is the room left over the activation bytes per token."""
    n = layout.gpus.shape[0]
    zero = np.zeros(n)
    states = [(trained_state(f, layout), m) for f, m in trained]
    weights = sum((s.weights * m for s, m in states), zero)
    gradients = sum((s.gradients * m for s, m in states), zero)
    optimizer = sum((s.optimizer * m for s, m in states), zero)
    parked = sum((frozen_weight_bytes(f, layout, b) * m for f, m, b in frozen), zero)
    models = trained + [(f, m) for f, m, _ in frozen]
    gathered = _largest([zero3_gather_bytes(f, layout) * m for f, m in models], n)
    frozen_in_training = np.where(layout.offload_frozen, 0.0, parked)
    fixed = weights + gradients + optimizer + frozen_in_training + gathered

    budget = default_micro_tokens(layout, batch, overheads)
    per_rank = np.ceil(batch.trained_sequences / batch.minibatches / layout.dp)
    # 1F1B holds up to pp micro-batches on the first stage (never more than there are).
    in_flight = np.minimum(layout.pp, per_rank)
    one = np.ones(n)
    per_token = _largest([activation_bytes(f, layout, one, in_flight) * m for f, m in trained], n)
    room = usable_bytes - fixed
    chosen = np.where(
        per_token > 0,
        np.minimum(budget, np.maximum(room / np.maximum(per_token, 1e-30), 0.0)),
        budget,
    )
    # The micro-batch that holds the longest sequence is at least that long.
    longest = batch.longest_sequence_tokens
    tokens = np.maximum(np.minimum(chosen, per_rank * batch.sequence_tokens), longest)
    activations = per_token * tokens
    forward = _largest([forward_activation_bytes(f, layout, budget) * m for f, m in models], n)
    kept = np.where(layout.offload_phase, 0.0, gradients + optimizer)
    assessment = weights + kept + parked + gathered + forward
    training = fixed + activations
    phase_terms = {
        "weights": weights,
        "gradients": gradients,
        "optimizer": optimizer,
        "frozen_models": frozen_in_training,
        "zero3_gather": gathered,
        "activations": activations,
    }
    assess_terms = {
        "weights": weights,
        "gradients": np.where(layout.offload_phase, 0.0, gradients),
        "optimizer": np.where(layout.offload_phase, 0.0, optimizer),
        "frozen_models": parked,
        "zero3_gather": gathered,
        "activations": forward,
    }
    in_training = training >= assessment
    terms = {k: np.where(in_training, v, assess_terms[k]) for k, v in phase_terms.items()}
    on_gpu = weights + gradients + optimizer
    phase = layout.offload_phase
    resident = np.where(phase, 0.0, on_gpu) + np.where(phase | layout.offload_frozen, 0.0, parked)
    host = sum((host_state_bytes(f, layout) * m for f, m in trained), zero)
    host = (
        host + np.where(phase, on_gpu, 0.0) + np.where(phase | layout.offload_frozen, parked, 0.0)
    )
    switch = np.where(phase, 2.0 * on_gpu, 0.0) + np.where(
        phase | layout.offload_frozen, parked, 0.0
    )
    return TrainMemory(terms, training, assessment, resident, host, switch, chosen, tokens)


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
    experts are tensor-sliced, beyond it whole experts are spread over ep ranks); attention
    projections over the attention group only (DP attention replicates them); one byte per
    weight in fp8."""
    share = fig.stage_share(layout.pp)
    attention = fig.attention_params * share / layout.attention_tp
    dense = (fig.dense_params - fig.attention_params) * share / layout.tp
    expert = fig.expert_params * share / np.maximum(layout.ep, layout.tp)
    return layout.weight_bytes * (attention + dense + expert)


def rollout_kv_bytes_per_token(fig: ModelFigures, layout: RolloutLayout) -> FloatArray:
    """KV bytes per GPU for one token of one of the replica's sequences, averaged over the
    replica: DP attention keeps each sequence on one attention group of tp / attention_dp
    ranks, so a replica's KV spreads over its attention_dp groups."""
    return fig.kv_bytes_per_token(layout.attention_tp, layout.pp) / layout.attention_dp


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
    kv_token = rollout_kv_bytes_per_token(fig, layout)
    kv_sequence = kv_token * batch.sequence_tokens
    free = usable_bytes - weights - overheads.rollout_workspace_bytes - resident
    capacity = np.clip(np.floor(free / kv_sequence), 0.0, float(overheads.max_seqs_per_replica))
    # The longest sequence lives on one attention group whole.
    longest_kv = kv_token * layout.attention_dp * batch.longest_sequence_tokens
    minimum = weights + overheads.rollout_workspace_bytes + longest_kv
    return RolloutMemory(weights, kv_sequence, capacity, minimum, overheads.rollout_workspace_bytes)
