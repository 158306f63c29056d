"""The numbers the cost core needs: an accelerator's figures and a model's architecture.

Catalog records extend these with ids and sources; a scenario may give them inline.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, computed_field, model_validator
from rlmguide.kb.schema.common import NonNegativeInt, Positive, PositiveInt, Strict

BYTES_BF16 = 2


class AcceleratorFigures(Strict):
    """Dense datasheet figures of one accelerator (sparsity-doubled figures are never used)."""

    memory_gib: Positive
    hbm_tbytes_per_s: Positive
    bf16_dense_tflops: Positive
    fp8_dense_tflops: Positive | None = None
    scale_up_gbytes_per_s: Positive | None = Field(
        None, description="aggregate bidirectional scale-up (NVLink, Infinity Fabric) per GPU"
    )
    scale_up_domain_gpus: PositiveInt | None = None
    scale_out_gbits_per_s: Positive | None = Field(
        None, description="typical network bandwidth per GPU in a reference system"
    )
    tdp_watts: Positive | None = None
    host_link_gbytes_per_s: Positive | None = Field(
        None, description="host-to-GPU copy bandwidth per GPU, one direction (PCIe, NVLink-C2C)"
    )
    host_memory_gib_per_gpu: Positive | None = Field(
        None, description="host memory of the reference system divided by its GPUs"
    )

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ridge_flop_per_byte(self) -> float:
        """Arithmetic intensity at which bf16 compute and HBM bandwidth balance."""
        return self.bf16_dense_tflops / self.hbm_tbytes_per_s


class MultiHeadLatent(Strict):
    """Multi-head latent attention (DeepSeek-V2/V3): compressed KV and decoupled RoPE keys."""

    q_lora_rank: PositiveInt | None = None
    kv_lora_rank: PositiveInt
    qk_nope_head_dim: PositiveInt
    qk_rope_head_dim: PositiveInt
    v_head_dim: PositiveInt


class MixtureOfExperts(Strict):
    """Routed experts replacing the dense FFN in all but the first `dense_layers` layers."""

    experts: PositiveInt
    experts_per_token: PositiveInt
    shared_experts: NonNegativeInt = 0
    expert_ffn: PositiveInt
    dense_layers: NonNegativeInt = 0

    @model_validator(mode="after")
    def _top_k_within_experts(self) -> MixtureOfExperts:
        if self.experts_per_token > self.experts:
            raise ValueError("experts_per_token exceeds experts")
        return self


class Architecture(Strict):
    """A decoder-only transformer as its configuration file describes it."""

    layers: PositiveInt
    hidden: PositiveInt
    heads: PositiveInt
    kv_heads: PositiveInt
    head_dim: PositiveInt | None = None
    ffn: PositiveInt
    ffn_kind: Literal["gated", "plain"] = "gated"
    vocab: PositiveInt
    max_context_tokens: PositiveInt
    tied_embeddings: bool = False
    qkv_bias: bool = False
    mla: MultiHeadLatent | None = None
    moe: MixtureOfExperts | None = None

    @model_validator(mode="after")
    def _consistent(self) -> Architecture:
        if self.heads % self.kv_heads:
            raise ValueError(
                f"heads ({self.heads}) is not a multiple of kv_heads ({self.kv_heads})"
            )
        if self.moe and self.moe.dense_layers > self.layers:
            raise ValueError("moe.dense_layers exceeds layers")
        return self

    @computed_field  # type: ignore[prop-decorator]
    @property
    def attention(self) -> str:
        if self.mla:
            return "mla"
        if self.kv_heads == self.heads:
            return "mha"
        return "mqa" if self.kv_heads == 1 else "gqa"

    @property
    def attention_head_dim(self) -> int:
        return self.head_dim or self.hidden // self.heads

    @property
    def attention_params(self) -> int:
        """Weights of one attention block (projections and biases)."""
        h, d = self.hidden, self.attention_head_dim
        if self.mla:
            m = self.mla
            qk = m.qk_nope_head_dim + m.qk_rope_head_dim
            if m.q_lora_rank:
                q = h * m.q_lora_rank + m.q_lora_rank * self.heads * qk
            else:
                q = h * self.heads * qk
            kv = h * (m.kv_lora_rank + m.qk_rope_head_dim)
            kv += m.kv_lora_rank * self.heads * (m.qk_nope_head_dim + m.v_head_dim)
            return q + kv + self.heads * m.v_head_dim * h
        width = d * (self.heads + 2 * self.kv_heads)
        bias = width if self.qkv_bias else 0
        return h * width + bias + self.heads * d * h

    def ffn_params(self, width: int) -> int:
        return (3 if self.ffn_kind == "gated" else 2) * self.hidden * width

    @property
    def dense_layer_count(self) -> int:
        return self.moe.dense_layers if self.moe else self.layers

    def _params(self, routed_experts: int | None) -> int:
        per_layer = self.attention_params + 2 * self.hidden
        total = self.layers * per_layer + self.dense_layer_count * self.ffn_params(self.ffn)
        if self.moe:
            moe = self.moe
            routed = moe.experts if routed_experts is None else routed_experts
            expert = self.ffn_params(moe.expert_ffn)
            router = self.hidden * moe.experts
            sparse_layers = self.layers - moe.dense_layers
            total += sparse_layers * ((routed + moe.shared_experts) * expert + router)
        return total + self.embedding_params + self.hidden

    @computed_field  # type: ignore[prop-decorator]
    @property
    def embedding_params(self) -> int:
        return self.vocab * self.hidden * (1 if self.tied_embeddings else 2)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def params_total(self) -> int:
        return self._params(None)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def params_active(self) -> int:
        """Parameters touched per token: routed top-k plus shared experts for MoE."""
        return self._params(self.moe.experts_per_token if self.moe else None)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def kv_bytes_per_token(self) -> int:
        """KV-cache bytes per token over all layers in bf16 (MLA caches the latent + RoPE key)."""
        if self.mla:
            per_layer = self.mla.kv_lora_rank + self.mla.qk_rope_head_dim
        else:
            per_layer = 2 * self.kv_heads * self.attention_head_dim
        return per_layer * self.layers * BYTES_BF16
