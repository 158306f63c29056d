"""Memory per GPU: weights, gradients and optimizer states by ZeRO stage, activations by
recompute mode, the rollout's KV cache, and what a colocated plan offloads to switch.

Bytes per parameter of mixed-precision Adam are 2 (bf16 weights) + 2 (bf16 gradients) + 12
(fp32 master, momentum, variance); ZeRO-1 shards the 12 over the data-parallel group, ZeRO-2
also the gradients, ZeRO-3 also the weights (Rajbhandari et al., arXiv 1910.02054).
Activations follow the architecture's own dimensions (q/kv widths, FFN width and gating, MoE
routing, dispatch copies and experts, the vocabulary) as the two training code paths keep
them: Megatron-Core with sequence parallelism (the model-parallel family) and the Hugging
Face model code under FSDP or DeepSpeed (`LayerTerms`, `end_bytes`). Korthikanti et al.'s
34 s h / t (arXiv 2205.05198) is the special case of a 4h GeLU MLP with dropout. A training
pool keeps a fragmentation reserve on its activations (Overheads.train_fragmentation_fraction).
Offload (phase, CPU optimizer, streamed parameters, parked frozen models) moves terms to the
host as the frameworks do it; LoRA keeps gradients and Adam states for the adapters only.
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


@dataclass(frozen=True, slots=True)
class ModelState:
    """Bytes per GPU of one trained model's persistent state, on the GPU."""

    weights: FloatArray
    gradients: FloatArray
    optimizer: FloatArray

    @property
    def total(self) -> FloatArray:
        return self.weights + self.gradients + self.optimizer


FIRST, MIDDLE, LAST = 0, 1, 2
"""Pipeline stages as ModelFigures.stage_layers orders them (one stage without a pipeline;
with two, the middle holds no more than an end and stands for no rank)."""
STAGES = (FIRST, MIDDLE, LAST)
Stage = int | None
"""One of STAGES, or None: the upper bound of every stage (the fullest stage's layers with
a vocabulary matrix), where a figure is not taken stage by stage."""


def model_parallel_params(
    fig: ModelFigures, layout: TrainLayout, stage: Stage = None
) -> tuple[FloatArray, FloatArray]:
    """Dense and expert parameters of one tensor x pipeline (x expert) shard: the stage's
    share of the layers and, on a pipeline's first and last stages, one whole vocabulary
    matrix, since Megatron's GPTModel builds the embedding on the first stage and the output
    layer (a copy of the embedding when tied) on the last (megatron/core/models/gpt/
    gpt_model.py, pre_process and post_process); without a pipeline the shard holds both."""
    share = _stage_share(fig, layout, stage)
    one = min(fig.embedding_params, float(fig.vocab * fig.hidden))
    on_stage = 0.0 if stage == MIDDLE else one
    vocabulary = np.where(layout.pp > 1, on_stage, fig.embedding_params)
    dense = ((fig.dense_params - fig.embedding_params) * share + vocabulary) / layout.tp
    expert = fig.expert_params * share / (layout.ep * layout.etp)
    return dense, expert


def _stage_share(fig: ModelFigures, layout: TrainLayout, stage: Stage) -> FloatArray:
    """The stage's share of the decoder layers (`stage` None: the fullest stage's)."""
    if stage is None:
        return fig.fullest_stage_share(layout.pp, layout.first_layers, layout.last_layers)
    counts = fig.stage_layers(layout.pp, layout.first_layers, layout.last_layers)
    return counts[stage] / fig.layers


def trainable_params(
    fig: ModelFigures, layout: TrainLayout, stage: Stage = None
) -> tuple[FloatArray, FloatArray]:
    """Dense and expert parameters of a shard that get gradients and Adam states: all of
    them, or only the LoRA adapters (which sit on the dense layers)."""
    dense, expert = model_parallel_params(fig, layout, stage)
    adapters = fig.lora_params(layout.lora_rank) * _stage_share(fig, layout, stage) / layout.tp
    return np.where(layout.lora, adapters, dense), np.where(layout.lora, 0.0, expert)


def _sharded(
    dense: FloatArray, expert: FloatArray, layout: TrainLayout, from_stage: int
) -> FloatArray:
    """Parameters one rank keeps when ZeRO shards them from stage `from_stage` on."""
    split = layout.zero >= from_stage
    return np.where(
        split, dense / layout.shard_group + expert / layout.expert_shard_group, dense + expert
    )


def trained_state(fig: ModelFigures, layout: TrainLayout, stage: Stage = None) -> ModelState:
    """Weights, gradients and Adam states of a trained model (actor, critic) on one GPU.

    ZeRO-1 shards the optimizer states, ZeRO-2 also the gradients, ZeRO-3 also the weights.
    Gradients are bf16 unless the layout keeps them in fp32 (Megatron's main grads). A CPU
    optimizer keeps its share of the Adam states on the host; streamed parameters keep
    weights, gradients and Adam states there (only gathered layers visit the GPU)."""
    dense, expert = model_parallel_params(fig, layout, stage)
    t_dense, t_expert = trainable_params(fig, layout, stage)
    adapters = np.where(layout.lora, t_dense, 0.0)
    weights = WEIGHT_BYTES * (_sharded(dense, expert, layout, 3) + adapters)
    # fp32 buffers beside bf16 weights; ZeRO-3's 16 bytes already hold an fp32 gradient shard
    gradients = layout.gradient_bytes * _sharded(t_dense, t_expert, layout, 2)
    optimizer = OPTIMIZER_BYTES * _sharded(t_dense, t_expert, layout, 1)
    optimizer = optimizer * (1.0 - layout.offload_optimizer)
    on_gpu = ~layout.offload_params
    return ModelState(weights * on_gpu, gradients * on_gpu, optimizer * on_gpu)


def host_state_bytes(fig: ModelFigures, layout: TrainLayout, stage: Stage = None) -> FloatArray:
    """Host memory per GPU of a trained model's offloaded state: the CPU optimizer's fp32
    master weights, moments and gradients (16 bytes per parameter of its share), or all of
    it when parameters stream (plus their bf16 copy)."""
    t_dense, t_expert = trainable_params(fig, layout, stage)
    trainable = _sharded(t_dense, t_expert, layout, 1)
    cpu_adam = (OPTIMIZER_BYTES + FP32_BYTES) * trainable
    streamed = np.where(layout.offload_params, 1.0, layout.offload_optimizer)
    weights = np.where(layout.offload_params, WEIGHT_BYTES * trainable, 0.0)
    return streamed * cpu_adam + weights


def frozen_weight_bytes(
    fig: ModelFigures, layout: TrainLayout, weight_bytes: float = WEIGHT_BYTES, stage: Stage = None
) -> FloatArray:
    """Weights of a model that is only run forward (reference, reward model), bf16 unless
    quantised; sharded like the actor's weights when ZeRO-3 (FSDP) shards those, over the
    frozen models' own group where the plan gives them one (TrainLayout.frozen_sharding)."""
    dense, expert = model_parallel_params(fig, layout, stage)
    return weight_bytes * _sharded(dense, expert, layout.frozen_sharding(), 3)


ZERO3_LIVE_LAYERS = 2
"""Layers whose weights ZeRO-3 holds gathered at once: the one computing and the next, whose
all-gather is prefetched under that compute (the overlap model_pass assumes when it hides the
gathers under the compute, as FSDP's forward and backward prefetch run it)."""


def zero3_gather_bytes(fig: ModelFigures, layout: TrainLayout, backward: bool) -> FloatArray:
    """What ZeRO-3 holds unsharded beside the shards: `ZERO3_LIVE_LAYERS` gathered layers, less
    this rank's own shard of each (dense weights over the shard group, experts over the expert
    shard group), and in the backward pass the computing layer's whole gradient, which exists
    unsharded until its reduce-scatter (a mixture's every local expert, routed to or not).
    Streamed parameters arrive whole from the host, so the full layers count."""
    dense = (fig.dense_params - fig.embedding_params) / fig.layers / layout.tp
    expert = fig.expert_params / max(fig.sparse_layers, 1) / (layout.ep * layout.etp)
    kept_dense = np.where(layout.offload_params, 0.0, 1.0 / layout.shard_group)
    kept_expert = np.where(layout.offload_params, 0.0, 1.0 / layout.expert_shard_group)
    gathered = WEIGHT_BYTES * (dense * (1.0 - kept_dense) + expert * (1.0 - kept_expert))
    # LoRA's adapter gradients are a rounding error beside a layer's weights.
    whole = GRADIENT_BYTES * (dense + expert)
    gradient = np.where(layout.lora, 0.0, whole) if backward else np.zeros_like(whole)
    return np.where(layout.zero >= 3, ZERO3_LIVE_LAYERS * gathered + gradient, 0.0)


@dataclass(frozen=True, slots=True)
class LayerTerms:
    """Bytes per token that one transformer layer keeps for its backward pass, averaged over
    the model's dense and expert layers, in one training code path. Elements are bf16 (2
    bytes) unless said; every term is divided by tensor parallelism under sequence
    parallelism (`per_layer`), which a plan with tp > 1 assumes (exports turn it on).

    - norms: each of the two norms' input and output (the output is what the next
      projection keeps). Megatron-Core's Transformer Engine LayerNormLinear keeps both, 4h
      bytes a norm; the Hugging Face RMSNorm keeps its fp32 upcast, the normalised bf16 copy
      and the output, 8h bytes a norm.
    - attention: q, k, v as FlashAttention keeps them (heads x qk, kv_heads x qk, kv_heads x
      v; MLA materialises k and v per head), its output (the out-projection's input) and
      the fp32 log-sum-exp per head; MLA adds its two compressed latents' norm inputs and
      outputs. No score matrix: every framework runs fused attention.
    - mlp: the MLP's intermediates at its own width. Gated (SwiGLU), Megatron keeps the
      fused fc1 output (gate and up) and the product, 3 widths; the Hugging Face MLP keeps
      gate, its activation, up and the product, 4 widths. Plain (GeLU, squared ReLU): the
      activation's input and the second projection's input, 2 widths. Expert layers count
      top-k experts' intermediates per token, and the shared experts as a dense MLP.
    - router: the fp32 routing probabilities over all experts, kept for the top-k weights'
      gradient and for the load-balancing loss (2 x 4 bytes an expert).
    - dispatch: the top-k permuted copies of the token that the expert projections keep
      (2h bytes each). Megatron all-gathers them over the expert tensor group (etp), so a
      GPU keeps etp x their share: `per_layer` multiplies this term by etp.
    - combine: the top-k expert outputs the Hugging Face MoE block keeps to weight them by
      the routing probabilities; Megatron-Core applies the probabilities inside the expert
      (its weighted SwiGLU in TEGroupedMLP) and its unpermute keeps nothing.
    - dropout: 1-byte masks after attention and after the MLP, only where the run uses
      dropout (the RL frameworks load models with dropout 0; Megatron's default 0.1 is set to
      0 by verl's config converter, verl/models/mcore/config_converter.py).
    - qk_norm: QK-norm's inputs, averaged over the layers (only attention layers have it;
      MLA's latent norms are in `attention`). Megatron-Core normalises q and k per head
      after the QKV projection (megatron/core/transformer/attention.py at 55ac7082,
      get_query_key_value_tensors, q_layernorm and k_layernorm); Transformer Engine's
      RMSNorm keeps a contiguous bf16 copy of its input and the fp32 reciprocal RMS of each
      row (transformer_engine/pytorch/ops/basic/rmsnorm.py at 02dc7709, op_forward): 2 bytes
      an element and 4 a head. The Hugging Face RMSNorm keeps its fp32 upcast and the
      normalised bf16 copy, 6 bytes an element, and the fp32 reciprocal RMS of each head
      (transformers' Qwen3RMSNorm, modeling_qwen3.py at 000c33fd). Their outputs are not
      kept: the rotary embedding keeps only cos and sin, attention keeps the rotated q and k.
    """

    norms: float
    attention: float
    mlp: float
    router: float
    dispatch: float
    combine: float
    dropout: float = 0.0
    qk_norm: float = 0.0

    @property
    def total(self) -> float:
        return (
            self.norms
            + self.attention
            + self.mlp
            + self.router
            + self.dispatch
            + self.combine
            + self.qk_norm
        )

    @classmethod
    def of(cls, fig: ModelFigures, megatron: bool, dropout: bool = False) -> LayerTerms:
        h = float(fig.hidden)
        norm = (2.0 + 2.0) * h if megatron else (FP32_BYTES + 2.0 + 2.0) * h
        if fig.mla_latent:
            qk_heads, latents = fig.heads, fig.q_lora_rank + fig.kv_lora_rank
        else:
            qk_heads, latents = fig.kv_heads, 0
        qk, v = fig.attention_qk_dim, fig.attention_v_dim
        elements = fig.heads * qk + qk_heads * (qk + v) + fig.heads * v + 2.0 * latents
        normed_heads = 0.0 if fig.mla_latent else float(fig.heads + fig.kv_heads)
        per_element = BF16_BYTES if megatron else FP32_BYTES + BF16_BYTES
        qk_norm = normed_heads * (per_element * fig.head_dim + FP32_BYTES)
        if not fig.mla_latent:
            # Full layers with their own head shape (Gemma 4's global layers) keep q, k, v and
            # the output at it (K=V included: the values are a tensor of their own); averaged
            # over the layers like the other per-kind terms.
            share = fig.mixing.full / fig.layers
            d, kv = fig.full_head_dim, fig.full_kv_heads
            full = fig.heads * d + kv * 2 * d + fig.heads * d
            elements += share * (full - elements)
            full_norm = (fig.heads + kv) * (per_element * d + FP32_BYTES)
            qk_norm += share * (full_norm - qk_norm)
        attention = BF16_BYTES * elements + FP32_BYTES * fig.heads
        k = float(fig.experts_per_token) if fig.sparse_layers else 0.0
        expert_mlp = k * _mlp_bytes(fig.expert_ffn, fig.gated, megatron)
        expert_mlp += _mlp_bytes(fig.shared_ffn, fig.gated, megatron)
        # Per layer on average: dense MLPs on some layers, routed experts on the others.
        dense, share = fig.dense_layers / fig.layers, fig.sparse_layers / fig.layers
        copies = share * k * BF16_BYTES * fig.expert_width
        return cls(
            norms=2.0 * norm,
            attention=attention,
            mlp=dense * _mlp_bytes(fig.ffn, fig.gated, megatron) + share * expert_mlp,
            router=share * 2.0 * FP32_BYTES * fig.experts if fig.sparse_layers else 0.0,
            dispatch=copies,
            combine=0.0 if megatron else copies,
            dropout=2.0 * h if dropout else 0.0,
            qk_norm=qk_norm * fig.qk_norm_layers / fig.layers,
        )

    def per_layer(
        self, tp: FloatArray, etp: FloatArray, sequence_parallel: BoolArray | bool = True
    ) -> FloatArray:
        """Bytes per token on one GPU of a tp group. Without sequence parallelism the norms
        and dropout masks sit outside the tensor-parallel region, whole on every rank."""
        split = self.total + self.dispatch * (etp - 1.0)
        whole = self.norms + self.dropout + (split - self.norms) / tp
        return np.where(sequence_parallel, (split + self.dropout) / tp, whole)


def _mlp_bytes(width: int, gated: bool, megatron: bool) -> float:
    """Intermediates an MLP of `width` keeps per token (see LayerTerms.mlp)."""
    if not gated:
        return 2.0 * BF16_BYTES * width
    return (3.0 if megatron else 4.0) * BF16_BYTES * width


LOSS_BYTES_MEGATRON = BF16_BYTES + FP32_BYTES
"""Bytes per vocabulary entry and token at the loss in Megatron: its vocab-parallel
cross-entropy (megatron/core/tensor_parallel/cross_entropy.py) upcasts the bf16 logits to
fp32 next to them, keeps the fp32 softmax for the backward and turns it into the gradient
in place, which is cast back to bf16: 2 + 4 bytes at both peaks, over tp. verl's Megatron
actor takes its log-probs through it (megatron_actor.py, vocab_parallel_log_probs_from_logits;
entropy is off by default: actor.yaml entropy_coeff 0)."""
LOSS_BYTES_HF = 2.0 * FP32_BYTES
"""Bytes per vocabulary entry and token at the loss on the Hugging Face path: the logits
upcast to fp32 and kept for the backward, and their fp32 gradient beside them (OpenRLHF's
actor.py replaces the model's bf16 logits by `.to(torch.float32)` and takes log-probs with
flash-attn's cross-entropy, which allocates a new gradient; the bf16 logits and the fp32
copy coexist only during the cast, 6 bytes). verl's FSDP actor, with flash-attn's in-place
cross-entropy on the bf16 logits, keeps 2 bytes: plans costed here are conservative for it."""


def end_bytes(
    fig: ModelFigures,
    megatron: BoolArray,
    tp: FloatArray,
    sequence_parallel: BoolArray | bool = True,
) -> FloatArray:
    """Bytes per token of what follows the last layer on the last pipeline stage: the final
    norm (whole on every rank without sequence parallelism) and the logits with the loss
    (LOSS_BYTES_*, vocabulary-parallel over tp), or a scalar head's fp32 output."""
    h, v = float(fig.hidden), 0.0 if fig.value_head else float(fig.vocab)
    head = np.where(megatron, LOSS_BYTES_MEGATRON, LOSS_BYTES_HF) * v
    norm = np.where(megatron, 4.0, 8.0) * h
    return np.where(sequence_parallel, norm / tp, norm) + (head + FP32_BYTES) / tp


def head_gather_bytes(fig: ModelFigures, layout: TrainLayout) -> FloatArray:
    """Bytes per token of the buffer Megatron's output layer all-gathers its sequence-parallel
    input into: GPTModel's output layer is Megatron's own ColumnParallelLinear
    (megatron/core/models/gpt/gpt_model.py L241 at 55ac7082), which under sequence
    parallelism gathers the tp ranks' shares of the final norm's output into a [tokens,
    hidden] bf16 tensor of the global memory buffer (tensor_parallel/layers.py L478-L484,
    again for the weight gradient at L515-L528). That buffer is kept and reused, grown to
    the largest request (GlobalMemoryBuffer.get_tensor, megatron/core/utils.py L609-L634),
    so it stays beside the activations on the last stage: 2 h bytes for every token of the
    micro-batch, whole on each tensor rank. Assumed: the phase's own micro-batch sets its
    size (a larger one of another phase would leave it larger). The Hugging Face path and
    runs without sequence parallelism gather nothing."""
    gathers = layout.model_parallel & layout.sequence_parallel & (layout.tp > 1)
    return np.where(gathers, BF16_BYTES * float(fig.hidden), 0.0)


def layer_bytes(fig: ModelFigures, layout: TrainLayout) -> FloatArray:
    """Bytes per token one layer keeps on one GPU, by the plan's training code path."""
    sp = layout.sequence_parallel
    megatron = LayerTerms.of(fig, megatron=True).per_layer(layout.tp, layout.etp, sp)
    hf = LayerTerms.of(fig, megatron=False).per_layer(layout.tp, layout.etp, sp)
    return np.where(layout.model_parallel, megatron, hf)


def activation_bytes(
    fig: ModelFigures,
    layout: TrainLayout,
    micro_tokens: FloatArray,
    in_flight: FloatArray,
    second_in_flight: FloatArray | None = None,
) -> FloatArray:
    """Activations per GPU at the peak of training: the fullest of `stage_activation_bytes`."""
    stages = stage_activation_bytes(fig, layout, micro_tokens, in_flight, second_in_flight)
    return np.maximum(np.maximum(stages[FIRST], stages[MIDDLE]), stages[LAST])


def stage_activation_bytes(
    fig: ModelFigures,
    layout: TrainLayout,
    micro_tokens: FloatArray,
    in_flight: FloatArray,
    second_in_flight: FloatArray | None = None,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Activations per GPU at the peak of training on the first, the fullest middle and the
    last pipeline stage (STAGES): a pipeline stage's layers for its
    micro-batches in flight, and what the backward adds on top of them.

    `micro_tokens` are the tokens of one micro-batch; context parallelism (Megatron CP, or
    Ulysses under FSDP) splits them. Without recomputation, and with selective recomputation
    as Megatron defines it (the core attention, whose fused kernel keeps only q, k, v and
    its output either way), a layer keeps `layer_bytes`; full recomputation keeps each
    layer's input (2h bytes, over tp with sequence parallelism) and rebuilds one layer at a
    time in the backward.
    The first stage of a 1F1B pipeline holds min(pp, m) micro-batches of its layers
    (`in_flight`), the second one fewer (`second_in_flight`, unset: as many); the last
    holds one, plus the logits and loss (`end_bytes`) whose backward runs first, before any
    layer is rebuilt, so the two do not add up: the cross-entropy keeps only its fp32 softmax
    (tensor_parallel/cross_entropy.py L187 at 55ac7082), turns it into the gradient in place
    (L117), and that and the logits' bf16 gradient are freed once the output layer's backward
    has used them, before the last layer's checkpoint is replayed. The output layer's kept
    all-gather buffer (`head_gather_bytes`) stays beside either. Each stage holds its own
    layers (`ModelFigures.stage_layers`: even,
    or the plan's first and last stage counts with the middle stages sharing the rest); a
    middle stage is costed as the second (the fullest middle stage's layers with the most
    micro-batches a middle stage holds)."""
    tokens = micro_tokens / layout.cp
    layer = layer_bytes(fig, layout)
    full = layout.recompute == RECOMPUTE_FULL
    # a layer's input is split over the tensor ranks only by sequence parallelism
    split = np.where(layout.sequence_parallel, layout.tp, 1.0)
    kept = np.where(full, BF16_BYTES * fig.hidden / split, layer)
    rebuilt = np.where(full, layer, 0.0)
    firsts, middles, lasts = fig.stage_layers(layout.pp, layout.first_layers, layout.last_layers)
    second_in_flight = in_flight if second_in_flight is None else second_in_flight
    first = in_flight * kept * firsts + rebuilt
    second = second_in_flight * kept * middles + rebuilt
    last = (
        kept * lasts
        + head_gather_bytes(fig, layout)
        + np.maximum(
            rebuilt, end_bytes(fig, layout.model_parallel, layout.tp, layout.sequence_parallel)
        )
    )
    return tokens * first, tokens * second, tokens * last


def forward_activation_bytes(
    fig: ModelFigures,
    layout: TrainLayout,
    micro_tokens: FloatArray,
    stage: Stage = None,
    logit_copy_bytes: float = 0.0,
) -> FloatArray:
    """A forward-only pass (reference and old log-probs, values, rewards) keeps nothing for
    a backward: one layer's tensors live at a time (bounded by what training keeps of it),
    then the logits and their log-probs (`end_bytes`) on the last stage, beside the output
    layer's kept all-gather buffer (`head_gather_bytes`); a pipeline's other stages end at
    their last layer (`stage` None: the last stage's, every stage's upper bound). A trained
    policy's pass on Megatron's path adds `logit_copy_bytes` a logit where its framework
    copies the logits for the entropy (Overheads.entropy_copy_bytes_per_logit; verl skips the
    entropy under LoRA); a value head has no logits."""
    tokens = micro_tokens / layout.cp
    layer = layer_bytes(fig, layout)
    ends = end_bytes(fig, layout.model_parallel, layout.tp, layout.sequence_parallel)
    logits = 0.0 if fig.value_head else float(fig.vocab)
    copied = layout.model_parallel & ~layout.lora
    ends = ends + np.where(copied, logit_copy_bytes * logits / layout.tp, 0.0)
    ends = ends + head_gather_bytes(fig, layout)
    if stage in (FIRST, MIDDLE):
        ends = np.where(layout.pp > 1, 0.0, ends)
    return tokens * (layer + ends)


@dataclass(frozen=True, slots=True)
class TrainMemory:
    """Per GPU of a training pool: the terms of its peak phase and what each phase needs."""

    terms: dict[str, FloatArray]
    """Bytes by term (weights, gradients, optimizer, frozen_models, zero3_gather,
    activations) in the phase with the higher peak, and the fragmentation_reserve kept free
    beside them: the terms sum to `required`."""
    training: FloatArray
    assessment: FloatArray
    reserve: FloatArray
    """The allocator's fragmentation reserve at the peak phase (Overheads.
    train_fragmentation_fraction of its activations): `bytes + reserve` must fit."""
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
    streamed: FloatArray
    """What the assessment phase holds when it streams behind a rollout on the same GPUs
    (inter-stage fusion): its bytes with one streamed chunk's activations, and their share of
    the fragmentation reserve; the rollout engine runs beside it (survey Table 9's
    M_G/A^fused). Where nothing streams, the assessment phase as costed."""

    @property
    def bytes(self) -> FloatArray:
        """The allocator's peak: what the tensors of the fuller phase take."""
        return np.maximum(self.training, self.assessment)

    @property
    def required(self) -> FloatArray:
        """The peak with its fragmentation reserve: what the usable memory must hold."""
        return self.bytes + self.reserve

    def take(self, rows: IntArray) -> TrainMemory:
        return TrainMemory(
            {k: v[rows] for k, v in self.terms.items()},
            self.training[rows],
            self.assessment[rows],
            self.reserve[rows],
            self.resident[rows],
            self.host[rows],
            self.switch[rows],
            self.micro_tokens[rows],
            self.costed_tokens[rows],
            self.streamed[rows],
        )


def _largest(arrays: list[FloatArray], n: int) -> FloatArray:
    return np.max(arrays, axis=0) if arrays else np.zeros(n)


def _smallest(arrays: list[FloatArray]) -> FloatArray:
    return np.min(arrays, axis=0)


def first_stage_in_flight(
    layout: TrainLayout, micro_batches: FloatArray, rank: float = 0.0
) -> FloatArray:
    """Micro-batches of a whole stage's layers the first pipeline stage (or the one of
    `rank`) holds at its peak. Plain 1F1B holds min(pp - rank, m). Interleaved over v chunks
    (each 1/v of the stage), Megatron warms up 2 (pp - rank - 1) + (v - 1) pp chunk passes
    and holds one more in the steady state (megatron/core/pipeline_parallel/schedules.py,
    forward_backward_pipelining_with_interleaving), at most all m v of them: on the first
    stage pp (1 + (pp - 1) / (pp v)) with many micro-batches."""
    pp, v = layout.pp, layout.virtual_stages
    stages = np.maximum(pp - rank, 1.0)
    chunks = np.minimum(2.0 * (stages - 1.0) + (v - 1.0) * pp + 1.0, micro_batches * v)
    return np.where(v > 1, chunks / v, np.minimum(stages, micro_batches))


def forward_micro_tokens(layout: TrainLayout, batch: Batch, overheads: Overheads) -> FloatArray:
    """The micro-batch of a forward-only pass: the launch's own where it sizes these passes
    apart from training's (ROLL's infer_batch_size), else as `default_micro_tokens`."""
    budget = default_micro_tokens(layout, batch, overheads)
    return np.where(layout.forward_micro_tokens > 0, layout.forward_micro_tokens, budget)


def default_micro_tokens(layout: TrainLayout, batch: Batch, overheads: Overheads) -> FloatArray:
    """The configured per-GPU budget over a context-parallel group (cp splits sequences), or
    the launch's own where it sets one.

    A pipeline's bubble is (pp - 1) / (m + pp - 1) for m micro-batches, so pipelined layouts
    cut micro-batches down to the smallest token budget a launch can set: the longest sequence,
    below which dynamic batch size refuses to pack (and which export writes), so that the plan
    is costed as the launch packs it.
    """
    budget = overheads.train_microbatch_tokens * layout.cp
    budget = np.where(layout.pp > 1, np.minimum(budget, batch.longest_sequence_tokens), budget)
    return np.where(layout.micro_tokens > 0, layout.micro_tokens, budget)


Placed = tuple[ModelFigures, BoolArray]
"""A model and the plans whose pool holds it."""
Frozen = tuple[ModelFigures, BoolArray, float]
"""A model run forward only, the plans whose pool holds it, and its bytes per weight."""


def reshard_bytes(frozen: list[Frozen], layout: TrainLayout, assessed: TrainLayout) -> FloatArray:
    """M_reshard (survey Table 9, hybrid row; B.4.5 leaves it unsized): where the frozen
    models run in their own layout (`assessed`, plan.assessment) on the training pool and
    it holds their weights in other shards than the training layout does, the buffer that
    receives their weights re-laid out.

    Assumed: between assessments a frozen model stays in the training layout's shard (so the
    training phase is as without the field, and train.offload.frozen still parks it), and
    each assessment gathers it into the assessment layout while that source shard lives, so
    the buffer is every frozen model's parameter bytes per rank in the assessment layout,
    its tp x pp shard (no ZeRO), held for the whole assessment phase. A re-layout in place
    (verl's 3D-HybridEngine does so for the actor) would hold less."""
    n = layout.gpus.shape[0]
    if assessed is layout:
        return np.zeros(n)
    held = sum((frozen_weight_bytes(f, assessed, b) * m for f, m, b in frozen), np.zeros(n))
    return np.where(layout.relaid(assessed), held, 0.0)


def training_memory(
    trained: list[Placed],
    frozen: list[Frozen],
    layout: TrainLayout,
    batch: Batch,
    usable_bytes: float,
    overheads: Overheads,
    assessed: TrainLayout | None = None,
    chunk: FloatArray | None = None,
    pipelined: BoolArray | None = None,
    swapped: list[Frozen] | None = None,
) -> TrainMemory:
    """The training and assessment phases of a pool holding the `trained` models (actor,
    critic) and the `frozen` ones (reference, reward model), each where its mask holds.
    The frozen models' passes run in `assessed` (plan.assessment; unset, `layout`), with
    M_reshard (`reshard_bytes`) where that re-lays their weights. `swapped` frozen models
    run in the actor's own parameters (Overheads.reference_swap): none of their bytes are on
    the GPU, they and the actor's copy wait on the host, and three times their bytes cross
    the host link a step (the actor's out, theirs in, the actor's back).

    Stage fusion (survey §4.3): where `chunk` is positive the assessment streams chunks of
    that many samples behind the rollout (inter-stage fusion), a micro-batch of a rank's
    share of one chunk at a time (at most the budget), which `streamed` holds; where
    `pipelined` the trained models' updates interleave (intra-stage fusion), so their
    activations and ZeRO-3 gathered layers are live at once and add up instead of taking
    turns.

    Frameworks size micro-batches by tokens; when the configured budget's activations do
    not fit next to the states, the budget shrinks to what fits (dynamic batch size), down to
    the micro-batch that holds the longest sequence: a plan is infeasible only when even that
    does not fit. A budget the launch sets (`layout.micro_tokens`) is taken as it is.
    Activations are linear in the micro-batch's tokens, so the largest budget
    that fits is the room left over the activation bytes per token, each with its share of
    the allocator's fragmentation reserve (Overheads.train_fragmentation_fraction)."""
    n = layout.gpus.shape[0]
    zero = np.zeros(n)
    assessed = layout if assessed is None else assessed
    both = np.zeros(n, dtype=bool) if pipelined is None else pipelined

    def held(parts: list[FloatArray]) -> FloatArray:
        # the trained models' transient buffers: in turn, or at once where pipelined
        return np.where(both, sum(parts, zero), _largest(parts, n))

    gathered = held([zero3_gather_bytes(f, layout, True) * m for f, m in trained])
    # each model's forward in its own layout: the trained ones in the training layout
    passes = [(f, m, layout) for f, m in trained] + [(f, m, assessed) for f, m, _ in frozen]
    # the trained models' passes (old log-probs, values) may copy their logits for the entropy
    copies = [overheads.entropy_copy_bytes_per_logit] * len(trained) + [0.0] * len(frozen)
    # the frozen models gather their layers from their own shards (frozen_sharding)
    gathered_forward = _largest(
        [zero3_gather_bytes(f, layout, False) * m for f, m in trained]
        + [zero3_gather_bytes(f, assessed.frozen_sharding(), False) * m for f, m, _ in frozen],
        n,
    )
    phase = layout.offload_phase
    away = phase | layout.offload_frozen

    # Each pipeline stage holds its own layers, vocabulary matrix and activations: the peak
    # is the fullest stage's sum, which an uneven split (slime's 34 | 30 layers of
    # Qwen3.5-27B, the last stage lighter for its logits) can put on either end.
    budget = default_micro_tokens(layout, batch, overheads)
    per_rank = np.ceil(batch.trained_sequences / batch.minibatches / layout.data_shards)
    in_flight = first_stage_in_flight(layout, per_rank)
    second = first_stage_in_flight(layout, per_rank, rank=1.0)
    one = np.ones(n)
    flights = [stage_activation_bytes(f, layout, one, in_flight, second) for f, _ in trained]
    staged = []
    for stage in STAGES:
        states = [(trained_state(f, layout, stage), m) for f, m in trained]
        weights = sum((s.weights * m for s, m in states), zero)
        gradients = sum((s.gradients * m for s, m in states), zero)
        optimizer = sum((s.optimizer * m for s, m in states), zero)
        parked = sum((frozen_weight_bytes(f, layout, b, stage) * m for f, m, b in frozen), zero)
        frozen_in_training = np.where(layout.offload_frozen, 0.0, parked)
        fixed = weights + gradients + optimizer + frozen_in_training + gathered
        per_token = held([a[stage] * m for a, (_, m) in zip(flights, trained, strict=True)])
        staged.append((weights, gradients, optimizer, parked, frozen_in_training, fixed, per_token))

    spread = 1.0 + overheads.train_fragmentation_fraction
    fits = _smallest(
        [
            np.floor(np.maximum((usable_bytes - s[5]) / np.maximum(s[6] * spread, 1e-30), 0.0))
            for s in staged
        ]
    )
    # A launch's own budget is what its frameworks pack, whether or not it fits.
    searched = (_largest([s[6] for s in staged], n) > 0) & (layout.micro_tokens <= 0)
    chosen = np.where(searched, np.minimum(budget, fits), budget)
    # The micro-batch that holds the longest sequence is at least that long.
    longest = batch.longest_sequence_tokens
    # Under the length prior the step's memory is sized as if every response ran to the cap
    # (Batch.sized_at_cap); the budget chosen above stays the mean's, as the step time uses it.
    sized = batch.for_memory()
    tokens = np.maximum(np.minimum(chosen, per_rank * sized.sequence_tokens), longest)

    def forward_budget(lay: TrainLayout) -> FloatArray:
        # a forward-only micro-batch too holds at least the longest sequence
        return np.maximum(forward_micro_tokens(lay, sized, overheads), longest)

    own_budget = forward_budget(layout)
    assessed_budget = own_budget if assessed is layout else forward_budget(assessed)

    def forward_of(stage: int, own: FloatArray, other: FloatArray) -> FloatArray:
        # a stage of the training layout is no one stage of another layout: its upper bound
        return _largest(
            [
                forward_activation_bytes(f, lay, own, stage, copy) * m
                if lay is layout
                else forward_activation_bytes(f, lay, other) * m
                for (f, m, lay), copy in zip(passes, copies, strict=True)
            ],
            n,
        )

    streaming = np.zeros(n, dtype=bool) if chunk is None else chunk > 0
    if streaming.any():
        assert chunk is not None
        samples = np.maximum(chunk, 1.0)

        # one chunk's share per rank, a micro-batch of it at a time, each layout its own ranks
        def tokens_of(lay: TrainLayout, budget: FloatArray) -> FloatArray:
            share = np.ceil(samples / lay.data_shards) * sized.sequence_tokens
            return np.where(streaming, np.minimum(budget, np.maximum(share, longest)), budget)

        own_tokens = tokens_of(layout, own_budget)
        frozen_tokens = own_tokens if assessed is layout else tokens_of(assessed, assessed_budget)
    reshard = reshard_bytes(frozen, layout, assessed)
    fragments = overheads.train_fragmentation_fraction
    phases = []
    for stage, (weights, gradients, optimizer, parked, frozen_in_training, fixed, per_token) in zip(
        STAGES, staged, strict=True
    ):
        activations = per_token * tokens
        forward = forward_of(stage, own_budget, assessed_budget)
        kept = np.where(phase, 0.0, gradients + optimizer)
        held_forward = weights + kept + parked + gathered_forward + reshard
        assessment = held_forward + forward
        streamed = assessment + fragments * forward
        if streaming.any():
            chunked = forward_of(stage, own_tokens, frozen_tokens)
            streamed = np.where(streaming, held_forward + (1.0 + fragments) * chunked, streamed)
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
            "gradients": np.where(phase, 0.0, gradients),
            "optimizer": np.where(phase, 0.0, optimizer),
            "frozen_models": parked,
            "zero3_gather": gathered_forward,
            "activations": forward,
        }
        if reshard.any():
            # only a plan that re-lays its frozen models shows the term
            phase_terms["reshard"], assess_terms["reshard"] = zero, reshard
        in_training = training >= assessment
        terms = {k: np.where(in_training, v, assess_terms[k]) for k, v in phase_terms.items()}
        required = np.maximum(training + fragments * activations, assessment + fragments * forward)
        on_gpu = weights + gradients + optimizer
        resident = np.where(phase, 0.0, on_gpu) + np.where(away, 0.0, parked)
        host = sum((host_state_bytes(f, layout, stage) * m for f, m in trained), zero)
        host = host + np.where(phase, on_gpu, 0.0) + np.where(away, parked, 0.0)
        switch = np.where(phase, 2.0 * on_gpu, 0.0) + np.where(away, parked, 0.0)
        phases.append((terms, training, assessment, required, resident, host, switch, streamed))

    # the stage whose phases need the most; the bytes that wait or move off the GPU are
    # each stage's most, as every stage's rank must hold or move its own
    peak = np.argmax([p[3] for p in phases], axis=0)

    def at_peak(values: list[FloatArray]) -> FloatArray:
        return np.choose(peak, values)

    terms = {k: at_peak([p[0][k] for p in phases]) for k in phases[0][0]}
    training, assessment = at_peak([p[1] for p in phases]), at_peak([p[2] for p in phases])
    required = at_peak([p[3] for p in phases])
    reserve = required - np.maximum(training, assessment)
    terms["fragmentation_reserve"] = reserve
    resident, host, switch, streamed = (_largest([p[i] for p in phases], n) for i in (4, 5, 6, 7))
    swapped_bytes = sum((frozen_weight_bytes(f, layout, b) * m for f, m, b in swapped or []), zero)
    return TrainMemory(
        terms,
        training,
        assessment,
        reserve,
        resident,
        host + 2.0 * swapped_bytes,
        switch + 3.0 * swapped_bytes,
        chosen,
        tokens,
        streamed,
    )


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


def rollout_cache_bytes(
    fig: ModelFigures,
    layout: RolloutLayout,
    tokens: FloatArray,
    recurrent_bytes: float = BF16_BYTES,
) -> FloatArray:
    """Cache bytes per GPU of one of the replica's sequences of `tokens` tokens (KV by layer
    kind, linear state with its recurrent part at `recurrent_bytes` an element), averaged over
    the replica: DP attention keeps each sequence on one attention group of tp / attention_dp
    ranks, so a replica's cache spreads over its attention_dp groups; decode context
    parallelism splits a group's heads over tp / (attention_dp x cp) ranks and each head's
    tokens over cp."""
    held = fig.cache_bytes(tokens, layout.head_tp, layout.pp, recurrent_bytes)
    return held / (layout.attention_dp * layout.cp)


def rollout_cache_read_bytes(
    fig: ModelFigures, layout: RolloutLayout, context: FloatArray, column: bool = False
) -> FloatArray:
    """Cache bytes per GPU one decode token of the replica at `context` reads, averaged over
    the replica as rollout_cache_bytes; `column` lays the plans down the first axis of a
    (plans, steps) context."""
    tp, pp, dp = layout.head_tp, layout.pp, layout.attention_dp * layout.cp
    if column:
        tp, pp, dp = tp[:, None], pp[:, None], dp[:, None]
    return fig.cache_read_bytes(context, tp, pp) / dp


def rollout_memory(
    fig: ModelFigures,
    layout: RolloutLayout,
    batch: Batch,
    usable_bytes: float,
    overheads: Overheads,
    resident: FloatArray | float = 0.0,
    total_bytes: float = 0.0,
) -> RolloutMemory:
    """KV capacity left next to the weights and whatever else stays `resident` (a colocated
    trainer's state that was not offloaded); where the launch gives the engine its share of
    the GPU's `total_bytes` (`layout.memory_fraction`), what that share leaves after the
    weights and workspace, as vLLM sizes its KV cache. The launch's cap on sequences, where it
    sets one, replaces the cost model's."""
    weights = rollout_weight_bytes(fig, layout)
    state_bytes = overheads.recurrent_state_bytes
    kv_sequence = rollout_cache_bytes(fig, layout, batch.sequence_tokens, state_bytes)
    free = np.where(
        layout.memory_fraction > 0,
        layout.memory_fraction * total_bytes,
        usable_bytes - resident,
    )
    free = free - weights - overheads.rollout_workspace_bytes
    cap = layout.seq_cap(overheads.max_seqs_per_replica)
    fits = np.floor(free / kv_sequence)
    share = overheads.linear_state_share
    if share > 0.0 and fig.mixing.linear:
        # States and KV in pools of their own (Overheads.linear_state_share): the engine runs
        # what the fuller pool admits, each running sequence holding linear_state_slots states.
        state = fig.state_bytes(layout.head_tp, layout.pp, state_bytes) / (
            layout.attention_dp * layout.cp
        )
        slots = np.floor(free * share / (state * overheads.linear_state_slots))
        fits = np.minimum(slots, np.floor(free * (1.0 - share) / (kv_sequence - state)))
    capacity = np.clip(fits, 0.0, cap)
    # The longest sequence lives on one attention group whole.
    longest = np.asarray(batch.longest_sequence_tokens, dtype=float)
    longest_kv = rollout_cache_bytes(fig, layout, longest, state_bytes) * layout.attention_dp
    minimum = weights + overheads.rollout_workspace_bytes + longest_kv
    return RolloutMemory(weights, kv_sequence, capacity, minimum, overheads.rollout_workspace_bytes)
