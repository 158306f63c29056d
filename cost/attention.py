"""What attention costs per kind of layer: the cache one sequence holds, and the FLOPs and
bytes of a decode step and of a prefill, as functions of the context length.

Full attention caches every token and attends to all of them; a sliding-window layer caches
and attends to at most `window` tokens; a sparse layer (DeepSeek Sparse Attention) caches every
token's latent and indexer key, scores all keys with its indexer and attends to `top_k` of
them; a linear layer keeps a fixed state and does the same work at any length. The formulas
take arrays of context lengths (one per plan or per decode step) and return arrays.

Conventions shared with the rest of the cost core: bf16 caches; a decode token at context c
attends to min(c, cap) keys; QK^T and AV cost 2 x heads x (d_qk + d_v) FLOPs per attended key
per layer; a causal prefill of p tokens attends to sum_{i<=p} min(i, cap) keys, taken in the
continuous form p^2 / 2 below the cap (the cost core's s^2 / 2).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from rlmguide.cost.arrays import FloatArray, floats
from rlmguide.cost.units import BF16_BYTES
from rlmguide.kb.schema.specs import Architecture

LINEAR_STATE_PASSES = {"gated-deltanet": 3, "mamba2": 2}
"""Passes over a head's key x value state per decode token, each 2 FLOPs an element: Gated
DeltaNet reads the state against the key (the delta rule's prediction), adds the rank-1
correction and reads it against the query; Mamba-2 adds the rank-1 input B x^T and reads C^T h.
The per-head decays and gates are O(state) elementwise scalings and are left out."""


def capped_prefix(length: npt.ArrayLike, cap: float) -> FloatArray:
    """sum_{i <= length} min(i, cap), continuous: the keys a causal pass attends to in all."""
    p = floats(length)
    if not np.isfinite(cap):
        return p * p / 2.0
    return np.where(p <= cap, p * p / 2.0, cap * cap / 2.0 + (p - cap) * cap)


def capped_mean(start: npt.ArrayLike, end: npt.ArrayLike, cap: float) -> FloatArray:
    """The mean of min(c, cap) for c from `start` to `end`: the keys a decode step attends to
    on average while the context grows from the prompt to prompt + response."""
    a, b = floats(start), floats(end)
    span = b - a
    # Below the cap the mean is the midpoint and above it the cap; only a span across the cap
    # needs the prefix sums (and is then long enough for their difference to be exact).
    lo, hi = np.minimum(a, cap), np.minimum(b, cap)
    across = (hi * hi - lo * lo) / 2.0 + (b - hi) * cap
    straddle = across / np.where(span > 0, span, 1.0)
    return np.where(b <= cap, (a + b) / 2.0, np.where(a >= cap, cap, straddle))


@dataclass(frozen=True, slots=True)
class AttentionCosts:
    """Per-kind layer counts and per-layer unit costs of one model (a whole replica: tensor
    and pipeline parallelism divide these as they divide the other per-layer figures)."""

    full: int
    sliding: int
    sparse: int
    linear: int
    window: float
    top_k: float
    kv_elements: int
    """Elements one attention layer caches per token (K and V, or MLA's latent + RoPE key)."""
    full_kv_elements: int
    """The same for a full layer, which may have its own head shape (Gemma 4's global layers)."""
    indexer_elements: int
    """Elements a sparse layer's indexer caches per token (its key)."""
    score_flops: float
    """FLOPs of QK^T and AV per attended key per layer."""
    full_score_flops: float
    """The same for a full layer, by its own head dimension."""
    indexer_flops: float
    """FLOPs of the indexer scoring one cached key per sparse layer: 2 x heads x head dim."""
    state_elements: int
    """Elements one linear layer keeps per sequence (recurrent state and conv window)."""
    recurrent_elements: int
    """Of those, the recurrent state's (heads x key_dim x value_dim); the rest is the conv
    window, which engines keep in bf16 whatever dtype they give the state."""
    linear_flops: float
    """FLOPs of one linear layer's recurrence per token (its projections are weights)."""

    @classmethod
    def of(cls, arch: Architecture) -> AttentionCosts:
        if arch.mla:
            qk = arch.mla.qk_nope_head_dim + arch.mla.qk_rope_head_dim
            v = arch.mla.v_head_dim
        else:
            qk = v = arch.attention_head_dim
        sparse, linear, own = arch.sparse, arch.linear, arch.full_attention
        passes = LINEAR_STATE_PASSES[linear.kind] if linear else 0
        return cls(
            full=arch.layer_count("full"),
            sliding=arch.layer_count("sliding"),
            sparse=arch.layer_count("sparse"),
            linear=arch.layer_count("linear"),
            window=float(arch.sliding_window or 0),
            top_k=float(sparse.top_k if sparse else 0),
            kv_elements=arch.kv_elements_per_layer,
            full_kv_elements=arch.full_kv_elements_per_layer,
            indexer_elements=sparse.indexer_head_dim if sparse else 0,
            score_flops=2.0 * arch.heads * (qk + v),
            full_score_flops=2.0 * arch.heads * (qk + v if own is None else 2 * own.head_dim),
            indexer_flops=2.0 * sparse.indexer_heads * sparse.indexer_head_dim if sparse else 0.0,
            state_elements=linear.state_elements if linear else 0,
            recurrent_elements=linear.heads * linear.key_dim * linear.value_dim if linear else 0,
            linear_flops=(
                2.0 * passes * linear.heads * linear.key_dim * linear.value_dim if linear else 0.0
            ),
        )

    def cache_bytes(self, context: npt.ArrayLike) -> FloatArray:
        """Bytes one sequence of `context` tokens holds: the KV it caches and the state."""
        c = floats(context)
        growing = (self.kv_elements + self.indexer_elements) * self.sparse
        growing += self.full_kv_elements * self.full
        windowed = self.kv_elements * self.sliding * np.minimum(c, self.window)
        state = self.state_elements * self.linear
        return (growing * c + windowed + state) * BF16_BYTES

    def attended(self, context: npt.ArrayLike) -> tuple[FloatArray, FloatArray]:
        """Keys a token at `context` attends to, summed over the layers: (in full layers, in
        sliding and sparse ones), as the two may differ in head shape."""
        c = floats(context)
        return self.full * c, self.sliding * np.minimum(c, self.window) + self.sparse * np.minimum(
            c, self.top_k
        )

    def decode_flops(self, context: npt.ArrayLike) -> FloatArray:
        """Mixing FLOPs of one decode token at `context` (its weights' 2 x params aside):
        attention over the attended keys, the indexer over every cached key, the recurrences."""
        c = floats(context)
        full, other = self.attended(c)
        indexer = self.indexer_flops * self.sparse * c
        scores = self.full_score_flops * full + self.score_flops * other
        return scores + indexer + self.linear_flops * self.linear

    def decode_bytes(self, context: npt.ArrayLike) -> FloatArray:
        """Cache bytes one decode token at `context` reads: the attended keys' KV, every
        indexer key, and each linear state read and written back."""
        c = floats(context)
        full, other = self.attended(c)
        kv = self.full_kv_elements * full + self.kv_elements * other
        indexer = self.indexer_elements * self.sparse * c
        state = 2.0 * self.state_elements * self.linear
        return (kv + indexer + state) * BF16_BYTES

    def prefill_flops(self, prompt: npt.ArrayLike) -> FloatArray:
        """Mixing FLOPs of a causal pass over `prompt` tokens (weights aside)."""
        p = floats(prompt)
        full = self.full * capped_prefix(p, np.inf)
        other = self.sliding * capped_prefix(p, self.window) + self.sparse * capped_prefix(
            p, self.top_k
        )
        indexer = self.indexer_flops * self.sparse * capped_prefix(p, np.inf)
        scores = self.full_score_flops * full + self.score_flops * other
        return scores + indexer + self.linear_flops * self.linear * p

    def mean_decode_flops(self, prompt: npt.ArrayLike, end: npt.ArrayLike) -> FloatArray:
        """decode_flops averaged over the steps from context `prompt` to `end`."""
        a, b = floats(prompt), floats(end)
        full = self.full * (a + b) / 2.0
        other = self.sliding * capped_mean(a, b, self.window)
        other = other + self.sparse * capped_mean(a, b, self.top_k)
        indexer = self.indexer_flops * self.sparse * (a + b) / 2.0
        scores = self.full_score_flops * full + self.score_flops * other
        return scores + indexer + self.linear_flops * self.linear

    def as_full(self) -> AttentionCosts:
        """The same model costed as if every mixing layer were full attention (what the cost
        model did before it knew the kinds): to show what that overstates."""
        layers = self.full + self.sliding + self.sparse + self.linear
        return AttentionCosts(
            full=layers,
            sliding=0,
            sparse=0,
            linear=0,
            window=0.0,
            top_k=0.0,
            kv_elements=self.kv_elements,
            full_kv_elements=self.kv_elements,
            indexer_elements=0,
            score_flops=self.score_flops,
            full_score_flops=self.score_flops,
            indexer_flops=0.0,
            state_elements=0,
            recurrent_elements=0,
            linear_flops=0.0,
        )
