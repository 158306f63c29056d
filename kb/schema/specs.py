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
    fp32_dense_tflops: Positive | None = Field(
        None,
        description=(
            "float32 FLOP/s of the CUDA cores (IEEE, no tensor cores): the rate of float32 "
            "matmuls while TF32 is off, PyTorch's default for matmuls"
        ),
    )
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
    host_overhead: Positive | None = Field(
        None,
        description=(
            "host CPU time per GPU operation (kernel launch, scheduling) relative to the x86 "
            "host of a DGX H100, whose runs fit the host-side constants; unset: 1"
        ),
    )
    visible_memory_mib: PositiveInt | None = Field(
        None,
        description=(
            "total memory of one GPU as its driver reports it, in MiB as nvidia-smi or rocm-smi "
            "prints it (81559 on an H100 SXM 80GB); unset where no such output was found"
        ),
    )

    @model_validator(mode="after")
    def _visible_within_datasheet(self) -> AcceleratorFigures:
        if self.visible_memory_mib is not None and self.visible_memory_mib > self.memory_gib * 1024:
            raise ValueError(
                f"visible_memory_mib {self.visible_memory_mib} is above memory_gib "
                f"{self.memory_gib:g} GiB: the driver never reports more than the card has"
            )
        return self

    @property
    def capacity_gib(self) -> float:
        """Memory of one GPU a launch can use at most, in GiB: the total its driver reports where
        recorded, else the datasheet's `memory_gib`. PyTorch's allocator never holds more than
        the device total CUDA reports (torch.cuda.mem_get_info), and vLLM requests
        `gpu_memory_utilization` times that total (github-vllm-project-vllm: MemorySnapshot in
        vllm/utils/mem_utils.py reads it, the v1 GPU worker's init_device multiplies it); it is
        the driver's total, which nvidia-smi prints, less what the driver keeps, so never more
        than this figure. The datasheet is above it (an H100's 80 GiB shows as 81559 MiB, 79.65
        GiB): costing with it would let a plan fill memory no allocator is given, the dangerous
        direction for "does it fit"."""
        if self.visible_memory_mib is None:
            return self.memory_gib
        return self.visible_memory_mib / 1024

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
    shared_expert_ffn: PositiveInt | None = None
    """Width of each shared expert where it differs from a routed expert's."""
    latent: PositiveInt | None = None
    """Width routed experts read and write where it is not the hidden size (Nemotron 3
    Super's latent MoE: one projection down before the experts, one up after them)."""
    dense_beside: bool = False
    """Each expert layer also runs the dense feed-forward network of width `ffn` on every
    token, beside its experts, and adds the two outputs (Gemma 4 26B-A4B: enable_moe_block
    adds the router and experts to a layer that keeps its MLP)."""
    dense_layers: NonNegativeInt = 0

    @model_validator(mode="after")
    def _top_k_within_experts(self) -> MixtureOfExperts:
        if self.experts_per_token > self.experts:
            raise ValueError("experts_per_token exceeds experts")
        return self


LayerKind = Literal["full", "sliding", "linear", "sparse", "ffn"]
"""What a layer mixes the sequence with: attention over every earlier token (`full`), over the
last `sliding_window` tokens (`sliding`), a recurrent state of fixed size (`linear`: Gated
DeltaNet, Mamba-2), attention over the `sparse.top_k` keys an indexer selects (`sparse`:
DeepSeek Sparse Attention); `ffn` is a block with a feed-forward network and no sequence mixer
(hybrid stacks such as Nemotron-H, whose mixer blocks then carry no feed-forward network)."""


class LinearAttention(Strict):
    """A recurrent sequence mixer: a fixed state per sequence instead of a KV cache that grows.

    Gated DeltaNet (Qwen3-Next, Qwen3.5): `heads` value heads of `value_dim`, `key_heads` query
    and key heads of `key_dim`, a state of heads x key_dim x value_dim. Mamba-2 (Nemotron-H):
    `heads` heads of `value_dim` channels (mamba_head_dim), `key_heads` groups sharing B and C
    of `key_dim` (ssm_state_size), the same state size. Both keep the last conv_kernel - 1
    inputs of the short convolution (over q, k, v or x, B, C) per sequence too."""

    kind: Literal["gated-deltanet", "mamba2"]
    heads: PositiveInt
    key_heads: PositiveInt
    key_dim: PositiveInt
    value_dim: PositiveInt
    conv_kernel: PositiveInt = 4

    @property
    def conv_channels(self) -> int:
        return 2 * self.key_heads * self.key_dim + self.heads * self.value_dim

    @property
    def state_elements(self) -> int:
        """Elements one sequence keeps per layer: the recurrent state and the conv window."""
        return self.heads * self.key_dim * self.value_dim + (self.conv_kernel - 1) * (
            self.conv_channels
        )

    def params(self, hidden: int) -> int:
        """Weights of one layer: input projection (q, k, v, the output gate and the per-head
        decay and step inputs), the short convolution, per-head decay, the gated norm and the
        output projection."""
        inner = self.heads * self.value_dim
        conv = self.conv_channels * self.conv_kernel
        if self.kind == "gated-deltanet":
            # in_proj_qkvz, in_proj_ba (beta, alpha per value head); A_log and dt_bias
            projection = hidden * (self.conv_channels + inner + 2 * self.heads)
            per_head = 2 * self.heads
            norm = self.value_dim
        else:
            # in_proj: z, x, B, C and dt; a conv bias; A_log, D and dt_bias
            projection = hidden * (self.conv_channels + inner + self.heads)
            conv += self.conv_channels
            per_head = 3 * self.heads
            norm = inner
        return projection + conv + per_head + norm + inner * hidden


class FullAttentionShape(Strict):
    """The head shape of the full-attention layers where it is not the other layers' (Gemma 4's
    global layers: global_head_dim and num_global_key_value_heads); the query heads are the
    model's `heads`."""

    head_dim: PositiveInt
    kv_heads: PositiveInt
    shared_kv: bool = False
    """One projection gives the keys and the values (attention_k_eq_v): the layer has no value
    projection. Its cache still holds both, as they differ after it: the keys are normalised
    and rotated, the values only normalised (transformers' modeling_gemma4.py)."""


class SparseAttention(Strict):
    """DeepSeek Sparse Attention (DeepSeek-V3.2, GLM-5): a lightning indexer scores every cached
    key of a query with `indexer_heads` heads of `indexer_head_dim`, and attention reads only
    the `top_k` best. The indexer caches one key of indexer_head_dim per token and layer."""

    top_k: PositiveInt
    indexer_heads: PositiveInt
    indexer_head_dim: PositiveInt


class VisionTower(Strict):
    """The vision encoder of a vision-language model, from its vision_config. The planner costs
    the language tower; the encoder is stated by its weights."""

    layers: PositiveInt
    hidden: PositiveInt
    ffn: PositiveInt
    ffn_kind: Literal["gated", "plain"] = "plain"

    @property
    def params(self) -> int:
        """Weights of the encoder's blocks (attention projections and MLPs); the patch
        embedding, norms and the merger into the language tower are left out."""
        mlp = (3 if self.ffn_kind == "gated" else 2) * self.hidden * self.ffn
        return self.layers * (4 * self.hidden * self.hidden + mlp)


class Architecture(Strict):
    """A decoder-only transformer as its configuration file describes it.

    Every layer is full attention unless `layer_pattern` says otherwise: the pattern repeats
    over the layers from the first (layer i has kind pattern[i mod len]), as configurations
    write it (`layer_types`, `full_attention_interval`, `hybrid_override_pattern`)."""

    layers: PositiveInt
    hidden: PositiveInt
    heads: PositiveInt
    kv_heads: PositiveInt
    head_dim: PositiveInt | None = None
    ffn: PositiveInt | None = None
    """Width of a dense feed-forward network; null for a model whose every feed-forward
    network is a mixture of experts (its configuration gives no dense width)."""
    ffn_kind: Literal["gated", "plain"] = "gated"
    vocab: PositiveInt
    max_context_tokens: PositiveInt
    tied_embeddings: bool = False
    qkv_bias: bool = False
    mla: MultiHeadLatent | None = None
    moe: MixtureOfExperts | None = None
    layer_pattern: list[LayerKind] | None = None
    sliding_window: PositiveInt | None = None
    """Tokens a `sliding` layer attends to (itself included)."""
    linear: LinearAttention | None = None
    sparse: SparseAttention | None = None
    full_attention: FullAttentionShape | None = None
    """The head shape of the `full` layers where it is not the one `kv_heads` and `head_dim`
    give the other attention layers."""
    attention_output_gate: bool = False
    """A sigmoid gate on the attention output, its weights a second query-sized projection
    (Qwen3-Next, Qwen3.5: `attn_output_gate`)."""
    qk_norm: bool | None = None
    """An RMSNorm over each query and key head before the rotary embedding (Qwen3, Gemma 3,
    OLMo 2: `q_norm`/`k_norm` in the modeling code, `--qk-layernorm` in Megatron); its
    inputs are kept for the backward pass. Null where the modeling code was not read: costed
    as without it."""
    mtp_layers: NonNegativeInt = 0
    """Multi-token prediction layers beside the model (used for speculative decoding); their
    weights are not counted in params_total."""

    @model_validator(mode="after")
    def _consistent(self) -> Architecture:
        if self.heads % self.kv_heads:
            raise ValueError(
                f"heads ({self.heads}) is not a multiple of kv_heads ({self.kv_heads})"
            )
        if self.moe and self.moe.dense_layers > self.ffn_layer_count:
            raise ValueError("moe.dense_layers exceeds the layers with a feed-forward network")
        if self.ffn is None and (self.dense_layer_count or (self.moe and self.moe.dense_beside)):
            raise ValueError("ffn is required: some layers have a dense feed-forward network")
        if self.full_attention is not None:
            if "full" not in self.layer_kinds:
                raise ValueError("full_attention is given but no layer is full attention")
            if self.heads % self.full_attention.kv_heads:
                raise ValueError(
                    f"heads ({self.heads}) is not a multiple of full_attention.kv_heads "
                    f"({self.full_attention.kv_heads})"
                )
        pattern = self.layer_pattern or []
        if len(pattern) > self.layers:
            raise ValueError(f"layer_pattern is longer than the {self.layers} layers")
        for kind, given in (
            ("sliding", self.sliding_window),
            ("linear", self.linear),
            ("sparse", self.sparse),
        ):
            field = "sliding_window" if kind == "sliding" else kind
            if (kind in pattern) != (given is not None):
                raise ValueError(
                    f"layer_pattern has {kind} layers but no {field}"
                    if given is None
                    else f"{field} is given but layer_pattern has no {kind} layer"
                )
        if pattern and all(k == "ffn" for k in pattern):
            raise ValueError("layer_pattern has no sequence-mixing layer")
        return self

    @property
    def layer_kinds(self) -> list[str]:
        """The kind of every layer, first to last."""
        pattern = self.layer_pattern or ["full"]
        return [pattern[i % len(pattern)] for i in range(self.layers)]

    def layer_count(self, kind: str) -> int:
        return self.layer_kinds.count(kind)

    @property
    def separate_ffn(self) -> bool:
        """Whether mixers and feed-forward networks are separate blocks (Nemotron-H)."""
        return "ffn" in (self.layer_pattern or ())

    @property
    def ffn_layer_count(self) -> int:
        return self.layer_count("ffn") if self.separate_ffn else self.layers

    @property
    def attention_layer_count(self) -> int:
        """Layers that attend over cached keys (full, sliding and sparse)."""
        return sum(self.layer_count(k) for k in ("full", "sliding", "sparse"))

    @computed_field  # type: ignore[prop-decorator]
    @property
    def layer_mix(self) -> str:
        """How many layers of each kind (`36 linear + 12 full`)."""
        kinds = self.layer_kinds
        order = ("full", "sliding", "sparse", "linear", "ffn")
        return " + ".join(f"{kinds.count(k)} {k}" for k in order if k in kinds)

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
    def full_head_dim(self) -> int:
        """Head dimension of the full-attention layers."""
        return self.full_attention.head_dim if self.full_attention else self.attention_head_dim

    @property
    def full_kv_heads(self) -> int:
        """KV heads of the full-attention layers."""
        return self.full_attention.kv_heads if self.full_attention else self.kv_heads

    def attention_params(self, kind: str) -> int:
        """Weights of one attention block of a kind (projections and biases): a `full` layer
        has its own head shape where `full_attention` gives one, and no value projection where
        it shares K with V."""
        h = self.hidden
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
        own = self.full_attention if kind == "full" else None
        d = own.head_dim if own else self.attention_head_dim
        kv_heads = own.kv_heads if own else self.kv_heads
        width = d * (self.heads + (1 if own and own.shared_kv else 2) * kv_heads)
        bias = width if self.qkv_bias else 0
        gate = h * self.heads * d if self.attention_output_gate else 0
        return h * width + bias + self.heads * d * h + gate

    @property
    def indexer_params(self) -> int:
        """Weights of one sparse layer's indexer: its query projection (from the query latent
        under MLA), key projection and norm, and per-head weights."""
        if self.sparse is None:
            return 0
        s, h = self.sparse, self.hidden
        query_in = self.mla.q_lora_rank if self.mla and self.mla.q_lora_rank else h
        return (
            query_in * s.indexer_heads * s.indexer_head_dim
            + h * s.indexer_head_dim
            + (2 * s.indexer_head_dim + h * s.indexer_heads)
        )

    def mixer_params(self, kind: str) -> int:
        """Weights of one layer's sequence mixer."""
        if kind == "linear":
            assert self.linear is not None
            return self.linear.params(self.hidden)
        if kind == "ffn":
            return 0
        return self.attention_params(kind) + (self.indexer_params if kind == "sparse" else 0)

    def ffn_params(self, width: int, model_width: int | None = None) -> int:
        return (3 if self.ffn_kind == "gated" else 2) * (model_width or self.hidden) * width

    @property
    def routed_expert_params(self) -> int:
        """Weights of one routed expert (0 without experts)."""
        if self.moe is None:
            return 0
        return self.ffn_params(self.moe.expert_ffn, self.moe.latent)

    @property
    def moe_dense_params(self) -> int:
        """Weights every token of an expert layer passes through besides its routed experts:
        the shared experts and a dense MLP beside them (0 without experts)."""
        if self.moe is None:
            return 0
        moe = self.moe
        shared = moe.shared_experts * self.ffn_params(moe.shared_expert_ffn or moe.expert_ffn)
        return shared + (self.ffn_params(self.ffn) if moe.dense_beside and self.ffn else 0)

    @property
    def dense_layer_count(self) -> int:
        """Layers whose feed-forward network is dense."""
        return self.moe.dense_layers if self.moe else self.ffn_layer_count

    @property
    def moe_layer_count(self) -> int:
        return self.ffn_layer_count - self.moe.dense_layers if self.moe else 0

    @property
    def mixer_params_total(self) -> int:
        """Sequence-mixer weights of all layers."""
        return sum(self.mixer_params(k) * self.layer_count(k) for k in set(self.layer_kinds))

    def _params(self, routed_experts: int | None) -> int:
        # One norm before each mixer and each feed-forward network.
        norms = self.hidden * (self.layers if self.separate_ffn else 2 * self.layers)
        total = self.mixer_params_total + norms
        if self.ffn is not None:
            total += self.dense_layer_count * self.ffn_params(self.ffn)
        if self.moe:
            moe = self.moe
            routed = moe.experts if routed_experts is None else routed_experts
            router = self.hidden * moe.experts
            latent = 2 * self.hidden * moe.latent if moe.latent else 0
            per_layer = routed * self.routed_expert_params + self.moe_dense_params + router
            per_layer += latent
            total += self.moe_layer_count * per_layer
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

    @property
    def kv_elements_per_layer(self) -> int:
        """Elements an attention layer caches per token (MLA: the latent and the RoPE key);
        a full layer with its own head shape: `full_kv_elements_per_layer`."""
        if self.mla:
            return self.mla.kv_lora_rank + self.mla.qk_rope_head_dim
        return 2 * self.kv_heads * self.attention_head_dim

    @property
    def full_kv_elements_per_layer(self) -> int:
        """Elements a full-attention layer caches per token: keys and values of its own head
        shape where it has one (shared K=V included: both are cached)."""
        if self.full_attention is None:
            return self.kv_elements_per_layer
        return 2 * self.full_attention.kv_heads * self.full_attention.head_dim

    @computed_field  # type: ignore[prop-decorator]
    @property
    def kv_bytes_per_token(self) -> int:
        """KV-cache bytes per token in bf16 of the layers that cache every token: full and
        sparse attention (with the indexer's key); MLA caches the latent + RoPE key."""
        indexer = self.sparse.indexer_head_dim if self.sparse else 0
        full, sparse = self.layer_count("full"), self.layer_count("sparse")
        per_token = self.full_kv_elements_per_layer * full + self.kv_elements_per_layer * sparse
        per_token += indexer * sparse
        return per_token * BYTES_BF16

    @computed_field  # type: ignore[prop-decorator]
    @property
    def window_kv_bytes_per_token(self) -> int:
        """KV-cache bytes per token in bf16 of the sliding-window layers, which keep at most
        `sliding_window` tokens."""
        return self.kv_elements_per_layer * self.layer_count("sliding") * BYTES_BF16

    @computed_field  # type: ignore[prop-decorator]
    @property
    def state_bytes_per_sequence(self) -> int:
        """Bytes in bf16 the linear layers keep per sequence whatever its length (recurrent
        state and conv window)."""
        if self.linear is None:
            return 0
        return self.linear.state_elements * self.layer_count("linear") * BYTES_BF16

    @computed_field  # type: ignore[prop-decorator]
    @property
    def costing_gap(self) -> str | None:
        """Why the cost model cannot cost this architecture yet (None when it can). It costs
        every mixing kind (full, sliding-window, sparse, linear) in layers that pair a mixer
        with a feed-forward network; a stack of separate mixer and feed-forward blocks
        (Nemotron-H) would have its per-layer weights, activations and passes miscounted."""
        if not self.separate_ffn:
            return None
        return (
            "has feed-forward-only layers (mixers and feed-forward networks as separate "
            "blocks), which the cost model does not cost yet"
        )
