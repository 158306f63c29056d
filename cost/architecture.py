"""The figures of a model the stage formulas need, derived once from its `Architecture`.

Parameter counts come from the schema (so the cost core and the knowledge base agree); this
module only splits them the way parallelism splits them: dense weights shard over tensor (and
pipeline) parallelism, routed-expert weights over expert parallelism.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from rlmguide.cost.arrays import FloatArray, floats
from rlmguide.cost.attention import AttentionCosts
from rlmguide.cost.units import BF16_BYTES
from rlmguide.kb.schema.specs import Architecture


@dataclass(frozen=True, slots=True)
class ModelFigures:
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    full_kv_heads: int
    """KV heads of a full-attention layer (its own where the model gives full layers their own
    head shape, as Gemma 4's global layers)."""
    full_head_dim: int
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
    mixing: AttentionCosts
    """What each kind of layer (full, sliding window, sparse, linear) caches and costs."""
    ffn: int
    """Intermediate width of the dense layers' MLP."""
    gated: bool
    """The MLP is gated (SwiGLU: gate and up projections), not plain (GeLU, squared ReLU)."""
    expert_ffn: int
    """Intermediate width of one routed expert (0 without experts)."""
    shared_ffn: int
    """Intermediate width of the shared experts together, and of a dense MLP beside the
    experts (0 without): what every token of an expert layer passes through."""
    expert_width: int
    """Width of the tokens routed experts read and write: the hidden size, or a latent MoE's
    narrower projection."""
    dense_layers: int
    """Layers with a dense MLP (all of them without experts)."""
    q_lora_rank: int
    """MLA's query compression width (0: queries projected directly, or not MLA)."""
    kv_lora_rank: int
    """MLA's key-value compression width (0 if not MLA)."""
    checkpoint_tensors: int = 0
    """Tensors of the model's checkpoint (Hugging Face layout), as a trainer exports them for
    the rollout engine: every projection, norm and routed expert matrix on its own."""
    engine_tensors: int = 0
    """Parameter tensors of the inference engine's model, which fuses q/k/v, gate/up and each
    layer's routed experts (vLLM's qkv_proj, gate_up_proj and FusedMoE w13/w2)."""
    qk_norm_layers: int = 0
    """Layers that normalise each query and key head before attention (QK-norm): the
    attention layers of a model with `qk_norm`, 0 where it has none or it is unknown."""
    value_head: bool = False
    """The model ends in a scalar head (critic, reward model), not the vocabulary logits."""

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
        own = arch.full_attention
        if own:
            # a full layer with its own head shape: q, k (and v unless shared) and o of its own
            kv_projections = 1 if own.shared_kv else 2
            full_io = 2 * (h + arch.heads * own.head_dim) + kv_projections * (
                h + own.kv_heads * own.head_dim
            )
            attention_io += (full_io - attention_io) * arch.layer_count("full") / arch.layers
        mlp_io = 3.0 * (h + (arch.ffn or 0))
        shared_io = (
            3.0 * (h + (moe.shared_expert_ffn or moe.expert_ffn)) * moe.shared_experts
            if moe
            else 0.0
        )
        if moe and moe.dense_beside:
            shared_io += mlp_io
        dense_layers = arch.dense_layer_count
        lora_width = arch.layers * attention_io + dense_layers * mlp_io + sparse * shared_io
        checkpoint_tensors, engine_tensors = _tensor_counts(arch)
        return cls(
            layers=arch.layers,
            hidden=arch.hidden,
            heads=arch.heads,
            kv_heads=arch.kv_heads,
            head_dim=arch.attention_head_dim,
            full_kv_heads=arch.full_kv_heads,
            full_head_dim=arch.full_head_dim,
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
            attention_params=float(arch.mixer_params_total),
            lora_width=float(lora_width),
            mixing=AttentionCosts.of(arch),
            ffn=arch.ffn or 0,
            gated=arch.ffn_kind == "gated",
            expert_ffn=moe.expert_ffn if moe else 0,
            shared_ffn=_shared_ffn(arch),
            expert_width=(moe.latent or arch.hidden) if moe else arch.hidden,
            dense_layers=dense_layers,
            q_lora_rank=(arch.mla.q_lora_rank or 0) if arch.mla else 0,
            kv_lora_rank=arch.mla.kv_lora_rank if arch.mla else 0,
            checkpoint_tensors=checkpoint_tensors,
            engine_tensors=engine_tensors,
            qk_norm_layers=arch.attention_layer_count if arch.qk_norm else 0,
        )

    def scoring(self) -> ModelFigures:
        """The same network ending in a scalar head (a critic's values, a reward model's
        score): it computes no vocabulary logits, and an untied output projection gives way
        to the head's one row (verl's critic is a token-classification model with one label;
        OpenRLHF's a value head on the base model). A tied embedding stays: it is the input."""
        dropped = self.embedding_params - self.vocab * self.hidden - self.hidden
        return replace(
            self,
            value_head=True,
            embedding_params=self.embedding_params - dropped,
            params_total=self.params_total - dropped,
            params_active=self.params_active - dropped,
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
        """Forward attention FLOPs of one token per token of context were every layer full
        attention: 2 x heads x (d_qk + d_v) x layers (the kinds: `mixing_flops`)."""
        return 2.0 * self.layers * self.heads * (self.attention_qk_dim + self.attention_v_dim)

    def mixing_flops(self, context: FloatArray) -> FloatArray:
        """Forward sequence-mixing FLOPs of one token at `context`, all layers, each by its
        kind: QK^T and AV cost 2 x heads x (d_qk + d_v) FLOPs per attended key and layer (every
        earlier token under full attention, at most the window or the selected top-k
        otherwise), a sparse layer's indexer scores every key, a linear layer's recurrence
        costs the same at any length."""
        return self.mixing.decode_flops(context)

    def causal_mixing_flops(self, tokens: FloatArray) -> FloatArray:
        """Forward sequence-mixing FLOPs of a causal pass over `tokens` tokens, all layers
        (full attention: 2 x heads x (d_qk + d_v) x layers x tokens^2 / 2)."""
        return self.mixing.prefill_flops(tokens)

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

    def stage_layers(
        self, pp: FloatArray, first: FloatArray, last: FloatArray
    ) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Decoder layers of the first, the fullest middle and the last of pp pipeline
        stages. A given end count (`first`, `last`; 0 = not given) holds; the stages without
        one share the other layers, the fullest ceil(rest / stages) (Megatron's
        get_num_layers_to_build; its checks want them even). Even stages are all costed at
        ceil(layers / pp), as `stage_share`; one stage holds every layer."""
        pp, first, last = floats(pp), floats(first), floats(last)
        stages = pp - (first > 0) - (last > 0)
        middle = np.ceil((self.layers - first - last) / np.maximum(stages, 1.0))
        return np.where(first > 0, first, middle), middle, np.where(last > 0, last, middle)

    def fullest_stage_share(
        self, pp: FloatArray, first: FloatArray, last: FloatArray
    ) -> FloatArray:
        """Share of the layers on the fullest stage of a split (`stage_layers`); equals
        `stage_share` for even stages."""
        stages = self.stage_layers(pp, first, last)
        return np.maximum(np.maximum(stages[0], stages[1]), stages[2]) / self.layers

    def _kv_per_layer(self, tp: FloatArray, full: bool = False) -> FloatArray:
        """KV elements of one token and attention layer on one tensor rank: MHA/GQA split KV
        heads over tensor parallelism (beyond kv_heads ranks each keeps a replica of one head);
        MLA's latent (+ RoPE key) is kept whole by every rank. `full`: of a full-attention
        layer, by its own head shape."""
        if self.mla_latent:
            return np.full_like(floats(tp), float(self.mla_latent))
        if full:
            return 2.0 * np.ceil(self.full_kv_heads / floats(tp)) * self.full_head_dim
        return 2.0 * np.ceil(self.kv_heads / floats(tp)) * self.head_dim

    def _per_rank_state(self, tp: FloatArray, recurrent_bytes: float = BF16_BYTES) -> FloatArray:
        """Linear layers' state of one sequence on one tensor rank (heads split), in bf16
        elements: the recurrent state's held at `recurrent_bytes` an element count
        recurrent_bytes / 2 each."""
        m = self.mixing
        wider = m.recurrent_elements * (recurrent_bytes / BF16_BYTES - 1.0)
        return (m.state_elements + wider) * m.linear / floats(tp)

    def state_bytes(self, tp: FloatArray, pp: FloatArray, recurrent_bytes: float) -> FloatArray:
        """Bytes of the linear layers' fixed state one sequence holds on one GPU of a tp x pp
        replica, its recurrent state at `recurrent_bytes` an element (the part of cache_bytes
        that does not grow with the sequence's tokens, windows aside)."""
        return self._per_rank_state(tp, recurrent_bytes) * BF16_BYTES * self.stage_share(pp)

    def kv_bytes_per_token(self, tp: FloatArray, pp: FloatArray) -> FloatArray:
        """KV-cache bytes one more token adds on one GPU of a tensor x pipeline parallel
        replica, past the windows: the layers that cache every token (full and sparse, with the
        indexer's key, which every rank keeps whole). Pipeline parallelism splits the layers;
        the fullest stage counts."""
        m = self.mixing
        per_token = self._kv_per_layer(tp, full=True) * m.full + self._kv_per_layer(tp) * m.sparse
        per_token = per_token + m.indexer_elements * m.sparse
        return per_token * BF16_BYTES * self.stage_share(pp)

    def cache_bytes(
        self,
        tokens: FloatArray,
        tp: FloatArray,
        pp: FloatArray,
        recurrent_bytes: float = BF16_BYTES,
    ) -> FloatArray:
        """Bytes one sequence of `tokens` tokens holds on one GPU of a tp x pp replica: the
        KV of every token in full and sparse layers, of at most the window in sliding ones,
        and the linear layers' fixed state (its recurrent part at `recurrent_bytes`)."""
        m = self.mixing
        windowed = self._kv_per_layer(tp) * m.sliding * np.minimum(floats(tokens), m.window)
        state = self._per_rank_state(tp, recurrent_bytes)
        fixed = (windowed + state) * BF16_BYTES * self.stage_share(pp)
        return self.kv_bytes_per_token(tp, pp) * tokens + fixed

    def cache_read_bytes(self, context: FloatArray, tp: FloatArray, pp: FloatArray) -> FloatArray:
        """Cache bytes one decode token at `context` reads on one GPU: the KV of the keys each
        layer attends to, every indexer key, each linear state read and written back."""
        m = self.mixing
        c = floats(context)
        full, other = m.attended(c)
        kv = self._kv_per_layer(tp, full=True) * full + self._kv_per_layer(tp) * other
        kv = kv + m.indexer_elements * m.sparse * c
        state = 2.0 * self._per_rank_state(tp)
        return (kv + state) * BF16_BYTES * self.stage_share(pp)

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


def _shared_ffn(arch: Architecture) -> int:
    """Intermediate width every token of an expert layer passes through besides its routed
    experts: the shared experts together and a dense MLP beside them (0 without experts)."""
    moe = arch.moe
    if moe is None:
        return 0
    shared = (moe.shared_expert_ffn or moe.expert_ffn) * moe.shared_experts
    return shared + ((arch.ffn or 0) if moe.dense_beside else 0)


def _tensor_counts(arch: Architecture) -> tuple[int, int]:
    """(checkpoint tensors, engine parameter tensors) of the whole model. Per mixer layer:
    q, k, v and o (MLA: the query projection, or its down and up projections and their norm,
    then the key-value down and up projections and their norm, and o), the q/k/v biases where
    the model has them, and the two layer norms; per feed-forward layer: the MLP's matrices,
    or each routed expert's, the router and a shared expert's. The engine (vLLM's
    stacked_params_mapping and FusedMoE) holds q/k/v as one qkv_proj (with one bias), gate
    and up as one gate_up_proj, MLA's two down projections as one, and a layer's routed
    experts as w13 and w2. Then the embedding, the final norm and an untied output
    projection. Per-head q/k norms and routing biases are not in the architecture records
    and are left out."""
    mixers = arch.layers - (arch.ffn_layer_count if arch.separate_ffn else 0)
    if arch.mla:
        query = 3 if arch.mla.q_lora_rank else 1
        attention = query + 4
        fused_attention = attention - (1 if arch.mla.q_lora_rank else 0)
    else:
        attention = 4 + (3 if arch.qkv_bias else 0)
        fused_attention = 2 + (1 if arch.qkv_bias else 0)
    matrices = 3 if arch.ffn_kind == "gated" else 2
    moe = arch.moe
    # a dense MLP beside the experts is one more such block in every expert layer
    shared = (1 if moe and moe.shared_experts else 0) + (1 if moe and moe.dense_beside else 0)
    # full layers that share K with V have no value projection (the engine's qkv_proj stays)
    own = arch.full_attention
    no_value = arch.layer_count("full") if own and own.shared_kv else 0
    routed = moe.experts * matrices + 1 if moe else 0
    ends = 2 + (0 if arch.tied_embeddings else 1)
    checkpoint = (
        mixers * (attention + 2)
        - no_value
        + arch.dense_layer_count * matrices
        + arch.moe_layer_count * (routed + shared * matrices)
        + ends
    )
    engine = (
        mixers * (fused_attention + 2)
        + arch.dense_layer_count * 2
        + arch.moe_layer_count * (3 + shared * 2)
        + ends
    )
    return checkpoint, engine
