"""The figures of a model the stage formulas need, derived once from its `Architecture`.

Parameter counts come from the schema (so the cost core and the knowledge base agree); this
module only splits them the way parallelism splits them: dense weights shard over tensor (and
pipeline) parallelism, routed-expert weights over expert parallelism.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from rlmguide.cost.arrays import FloatArray
from rlmguide.cost.units import BF16_BYTES
from rlmguide.kb.schema.specs import Architecture


@dataclass(frozen=True, slots=True)
class ModelFigures:
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    embedding_params: float
    params_total: float
    params_active: float
    expert_params: float
    """Routed-expert weights of all sparse layers (shared experts count as dense)."""
    experts: int
    experts_per_token: int
    sparse_layers: int
    mla_latent: int
    """Elements cached per token and layer by multi-head latent attention (0 if not MLA)."""
    attention_qk_dim: int
    attention_v_dim: int
    attention_params: float
    """Attention projections of all layers (what DP attention replicates)."""
    lora_width: float
    """Sum of input and output widths of the linear layers LoRA adapts (attention projections,
    dense and shared-expert MLPs; routed experts are left alone), over all layers: a rank-r
    adapter set has r x lora_width parameters."""

    @classmethod
    def of(cls, arch: Architecture) -> ModelFigures:
        moe = arch.moe
        sparse = arch.moe_layer_count
        expert = float(sparse * moe.experts * arch.routed_expert_params) if moe else 0.0
        if arch.mla:
            qk = arch.mla.qk_nope_head_dim + arch.mla.qk_rope_head_dim
            v = arch.mla.v_head_dim
            latent = arch.mla.kv_lora_rank + arch.mla.qk_rope_head_dim
        else:
            qk = v = arch.attention_head_dim
            latent = 0
        h, d = arch.hidden, arch.attention_head_dim
        attention_io = (h + arch.heads * qk) + 2 * (h + arch.kv_heads * d) + (arch.heads * v + h)
        mlp_io = 3.0 * (h + (arch.ffn or 0))
        shared_io = 3.0 * (h + moe.expert_ffn) * moe.shared_experts if moe else 0.0
        dense_layers = arch.dense_layer_count
        lora_width = arch.layers * attention_io + dense_layers * mlp_io + sparse * shared_io
        return cls(
            layers=arch.layers,
            hidden=arch.hidden,
            heads=arch.heads,
            kv_heads=arch.kv_heads,
            head_dim=arch.attention_head_dim,
            vocab=arch.vocab,
            embedding_params=float(arch.embedding_params),
            params_total=float(arch.params_total),
            params_active=float(arch.params_active),
            expert_params=expert,
            experts=moe.experts if moe else 1,
            experts_per_token=moe.experts_per_token if moe else 1,
            sparse_layers=sparse,
            mla_latent=latent,
            attention_qk_dim=qk,
            attention_v_dim=v,
            attention_params=float(arch.layers * arch.attention_params),
            lora_width=float(lora_width),
        )

    @property
    def is_moe(self) -> bool:
        return self.expert_params > 0

    def lora_params(self, rank: FloatArray) -> FloatArray:
        """Adapter parameters of rank `rank` (0 where the plan trains every weight)."""
        return rank * self.lora_width

    @property
    def dense_params(self) -> float:
        """Weights every tensor-parallel group holds a slice of: all but the routed experts."""
        return self.params_total - self.expert_params

    @property
    def attention_flops_per_context(self) -> float:
        """Forward attention FLOPs of one token per token of context, all layers.

        QK^T and AV cost 2 x heads x (d_qk + d_v) FLOPs per context token per layer; a token at
        context c costs this times c, and a causal sequence of s tokens this times s^2 / 2.
        """
        return 2.0 * self.layers * self.heads * (self.attention_qk_dim + self.attention_v_dim)

    @property
    def kv_width(self) -> int:
        """Key and value elements per token and layer as training attention materialises them
        (context parallelism passes these around the ring)."""
        if self.mla_latent:
            return self.heads * (self.attention_qk_dim + self.attention_v_dim)
        return 2 * self.kv_heads * self.head_dim

    def stage_share(self, pp: FloatArray) -> FloatArray:
        """Share of the layers on the fullest of pp pipeline stages: ceil(layers / pp) / layers.

        Stages need not be even (Megatron's first/last-stage layer counts, vLLM's partition),
        but the fullest stage sets the pace and the memory peak, so 61 layers over 16 stages
        cost like 4 layers per stage, not 3.8. Equals 1 / pp when pp divides the layers.
        """
        return np.ceil(self.layers / pp) / self.layers

    def kv_bytes_per_token(self, tp: FloatArray, pp: FloatArray) -> FloatArray:
        """KV-cache bytes of one token on one GPU of a tensor x pipeline parallel replica.

        MHA/GQA split KV heads over tensor parallelism; beyond kv_heads ranks each rank keeps a
        replica of one head. MLA caches one latent (+ RoPE key) per token that every tensor
        rank keeps whole. Pipeline parallelism splits the layers; the fullest stage counts.
        """
        if self.mla_latent:
            per_layer = np.full_like(tp, float(self.mla_latent))
        else:
            per_layer = 2.0 * np.ceil(self.kv_heads / tp) * self.head_dim
        return per_layer * BF16_BYTES * self.layers * self.stage_share(pp)

    def expert_read_fraction(self, tokens: FloatArray) -> FloatArray:
        """Expected share of a GPU's routed experts that `tokens` routed tokens touch.

        Each token picks top-k of E experts; an expert stays unread with probability
        (1 - k/E)^tokens. Small decode batches of an MoE read only part of the expert weights.
        """
        if not self.is_moe:
            return np.ones_like(tokens)
        if self.experts_per_token >= self.experts:
            return np.ones_like(tokens)
        return -np.expm1(tokens * np.log1p(-self.experts_per_token / self.experts))
