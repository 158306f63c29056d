"""The survey's own idealised cost model (arXiv:2608.27046, §2.5, §3.7, Appendix B.1 and B.3):
work in FLOPs, depth in operations on the critical path, memory in elements.

This is not the calibrated model (cost.evaluate): it is the survey's scaling laws, kept so a plan
can be read in the survey's terms beside the calibrated seconds. Its conventions:

- Canonical multi-head attention and a two-projection FFN: a model enters as its layers L,
  width d, FFN width d_ff, heads h and vocabulary V, whatever its real attention (GQA, MLA) or
  FFN (gated) is. An MoE model takes the expert forms of Tables 5-8: 2 E_a d d_e work and
  2 E d d_e weights per layer in place of 2 d d_ff, d_e in place of d_ff in the depth.
- Work: an add and a multiply are two FLOPs; the survey's O(.) lower-order terms are dropped.
- Depth: levels of binary reduction trees under unbounded parallelism, so `log` is log2 (the
  survey leaves the base open); the depth of norms, softmax, sampling and collectives is left
  out, as in the survey.
- Memory: elements, no byte factors; trained state is 4 elements a parameter (parameters,
  gradients, Adam's two moments), stored activations L d a token, inference buffers d a token.

Every function is array-friendly (numpy broadcasting) and names its formula (`states`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
from rlmguide.cost.arrays import FloatArray, floats
from rlmguide.cost.survey_formula import states
from rlmguide.kb.schema.specs import Architecture

Num = npt.ArrayLike
Role = Literal["policy", "reward", "critic", "shared"]
"""The output head a model carries (Table 3): the vocabulary (policy, reference), a scalar on
the last token (reward), a scalar on every token (critic), or both (shared actor-critic)."""

_lgamma = np.vectorize(math.lgamma, otypes=[float])


def log2(x: Num) -> FloatArray:
    return np.log2(floats(x))


@dataclass(frozen=True, slots=True)
class SurveyShape:
    """A model as the survey's formulas see it. A dense model has one expert of width d_ff,
    so the expert forms of Tables 5-8 reduce to the dense ones."""

    layers: int
    hidden: int
    ffn: int
    heads: int
    vocab: int
    experts: int = 1
    active_experts: int = 1
    expert_ffn: int = 0
    """d_e; 0 for a dense model (its FFN width d_ff stands in)."""
    window_layers: int = 0
    """Layers that cache at most `window` tokens (sliding-window attention)."""
    window: int = 0
    linear_layers: int = 0
    """Layers that keep a fixed state of `linear_state` elements instead of a KV cache."""
    linear_state: int = 0

    @property
    def attending_layers(self) -> int:
        """Layers whose cache grows with every token (full and sparse attention)."""
        return self.layers - self.window_layers - self.linear_layers

    @classmethod
    def of(cls, arch: Architecture) -> SurveyShape:
        moe = arch.moe
        return cls(
            layers=arch.layers,
            hidden=arch.hidden,
            ffn=arch.ffn or (moe.expert_ffn if moe else 0),
            heads=arch.heads,
            vocab=arch.vocab,
            experts=moe.experts if moe else 1,
            active_experts=moe.experts_per_token if moe else 1,
            expert_ffn=moe.expert_ffn if moe else 0,
            window_layers=arch.layer_count("sliding"),
            window=arch.sliding_window or 0,
            linear_layers=arch.layer_count("linear"),
            linear_state=arch.linear.state_elements if arch.linear else 0,
        )

    @property
    def d_e(self) -> int:
        return self.expert_ffn or self.ffn

    @property
    def ffn_work(self) -> int:
        """FFN width a token passes through: d_ff, or E_a d_e."""
        return self.active_experts * self.d_e

    @property
    def ffn_weights(self) -> int:
        """FFN width held in weights: d_ff, or E d_e."""
        return self.experts * self.d_e


# --- Table 3 and B.1: building blocks ---------------------------------------------------------


@states(
    "Table 3",
    "Parameters of the policy and reference",
    "|π_θ|",
    "L_π(4d_π² + 2d_π d_ff) + V d_π",
    "B.1.5.1",
)
@states(
    "Table 3",
    "Parameters of the reward model, the critic, a shared actor-critic",
    "|R_φ|, |V_ψ|, |π_ac|",
    "L(4d² + 2d d_ff) + V d + d",
    "B.1.5.2-B.1.5.4",
    "The scalar head adds d; the survey counts the V d embedding for these models too.",
)
def parameters(s: SurveyShape, role: Role) -> float:
    d = s.hidden
    body = s.layers * (4 * d * d + 2 * d * s.ffn_weights) + s.vocab * d
    return float(body + (0 if role == "policy" else d))


@states(
    "Table 3",
    "Forward FLOPs per token",
    "C_f^tok(M)",
    "2L_M[4d_M² + 2d_M d_ff + (S+T) d_M] + head: 2V d_π (policy), 2d_R/(S+T) (reward, "
    "last token only), 2d_V (critic, every token)",
    "B.1.1",
    "A shared actor-critic carries both heads, 2V d + 2d.",
)
def forward_flops(s: SurveyShape, context: Num, role: Role) -> FloatArray:
    m = floats(context)
    d = s.hidden
    body = 2.0 * s.layers * (4 * d * d + 2 * d * s.ffn_work + m * d)
    vocab_head = 2.0 * s.vocab * d
    heads = {
        "policy": vocab_head,
        "reward": 2.0 * d / m,
        "critic": 2.0 * d,
        "shared": vocab_head + 2.0 * d,
    }
    return body + heads[role]


@states("Table 3", "Backward FLOPs per token", "C_b^tok(M)", "≈ 2 C_f^tok(M)", "B.1.2")
def backward_flops(s: SurveyShape, context: Num, role: Role) -> FloatArray:
    return 2.0 * forward_flops(s, context, role)


@states("Table 4", "Training FLOPs per token", "C_tr^tok(M)", "C_f + C_b ≈ 3 C_f", "B.4.1")
def train_flops(s: SurveyShape, context: Num, role: Role) -> FloatArray:
    return forward_flops(s, context, role) + backward_flops(s, context, role)


@states(
    "Table 3",
    "Prefill FLOPs of one rollout",
    "C_pf(π_θ)",
    "2L_π S(4d_π² + 2d_π d_ff + S d_π) + 2V d_π",
    "B.1.3.1",
    "The survey's lower-order L_π(O(S²) + O(S d_π)) is left out.",
)
def prefill_flops(s: SurveyShape, prompt: Num) -> FloatArray:
    p = floats(prompt)
    d = s.hidden
    return 2.0 * s.layers * p * (4 * d * d + 2 * d * s.ffn_work + p * d) + 2.0 * s.vocab * d


@states(
    "Table 3",
    "Decode FLOPs of one rollout (closed form)",
    "C_dec(π_θ)",
    "2(T-1)L_π(4d_π² + 2d_π d_ff) + 4L_π d_π((T-1)S + (T-1)T/2) + 2(T-1)V d_π",
    "B.1.3.2",
    "The closed form sums Table 3's 2L_π(4d² + 2d d_ff + 2(S+t)d) + 2Vd over t = 1..T-1; "
    "B.1.3.2's sum prints (S+t) d where its closed form has 2(S+t) d.",
)
def decode_flops(s: SurveyShape, prompt: Num, response: Num) -> FloatArray:
    p = floats(prompt)
    steps = floats(response) - 1.0
    d, n = s.hidden, s.layers
    context = steps * p + steps * (steps + 1.0) / 2.0  # sum of S + t over t = 1..T-1
    return (
        2.0 * steps * n * (4 * d * d + 2 * d * s.ffn_work)
        + 4.0 * n * d * context
        + 2.0 * steps * s.vocab * d
    )


@states("Table 3", "Generation FLOPs of one rollout", "C_gen(π_θ)", "C_pf + C_dec", "B.1.3.3")
def generation_flops(s: SurveyShape, prompt: Num, response: Num) -> FloatArray:
    return prefill_flops(s, prompt) + decode_flops(s, prompt, response)


def _layer_depth(s: SurveyShape, tp: Num) -> FloatArray:
    """One layer's reduction depth without its log(S+T): 4 log d + log d_ff - log h - 2 log P_t
    (the d⁴ d_ff / (P_t² h) of B.3.1 and B.3.4)."""
    d = s.hidden
    return 4 * log2(d) + log2(s.d_e) - log2(s.heads) - 2 * log2(tp)


@states(
    "Table 3",
    "Forward depth",
    "D_f(M)",
    "L_M(4 log d_M + log d_ff + log(S+T) - log h) + log d_M",
    "B.1.4.1, B.3.1",
    "Table 3 gives O(L_M[log d_M + log(S+T)] + log d_M); the per-layer terms are B.3.1's, the "
    "last log d_M is the output head's.",
)
@states(
    "Table 3",
    "Forward depth under tensor parallelism",
    "D_f^TP(M)",
    "L_M(log(d_M⁴ d_ff (S+T) / (P_t² h))) + log(d_M / P_t)",
    "B.1.4.2, B.3.4",
    "Table 3 gives O(L_M[log(d_M/P_t) + log(S+T)] + log(d_M/P_t)).",
)
def forward_depth(s: SurveyShape, context: Num, tp: Num = 1) -> FloatArray:
    return s.layers * (_layer_depth(s, tp) + log2(context)) + log2(s.hidden) - log2(tp)


@states(
    "Table 3",
    "Backward depth",
    "D_b(M)",
    "D_f(M) + log(B(S+T))",
    "B.1.4.3",
    "The weight-gradient reduction over B(S+T) positions branches off the activation path, "
    "so it is not multiplied by L.",
)
def backward_depth(s: SurveyShape, context: Num, sequences: Num, tp: Num = 1) -> FloatArray:
    m = floats(context)
    return forward_depth(s, m, tp) + log2(floats(sequences) * m)


@states("Table 4", "Training depth", "D_tr(M)", "D_f(M) + D_b(M)", "B.4.1")
def train_depth(s: SurveyShape, context: Num, sequences: Num, tp: Num = 1) -> FloatArray:
    return forward_depth(s, context, tp) + backward_depth(s, context, sequences, tp)


@states(
    "Table 3",
    "Generation depth",
    "D_gen(π_θ)",
    "D_f(π_θ; S) + Σ_{t=1}^{T-1} D_f(π_θ; S+t) = O(T · D_f(π_θ; S+T))",
    "B.1.4.4",
    "Summed exactly: Σ log(S+t) over the T contexts S..S+T-1 is log(Γ(S+T)/Γ(S)). With "
    "P_t > 1 this is D_gen^TP of Table 9.",
)
def generation_depth(s: SurveyShape, prompt: Num, response: Num, tp: Num = 1) -> FloatArray:
    p = floats(prompt)
    steps = floats(response)
    contexts = (_lgamma(p + steps) - _lgamma(p)) / math.log(2.0)
    per_pass = s.layers * _layer_depth(s, tp) + log2(s.hidden) - log2(tp)
    return steps * per_pass + s.layers * contexts


@states(
    "Table 3",
    "KV cache of one rollout",
    "M_KV",
    "2(S+T) L_π d_π",
    "B.1.5.5",
    "All BK rollouts at once hold BK · M_KV. By layer kind: the L_π layers that cache every "
    "token count 2(S+T) d_π each, a sliding-window layer 2 min(S+T, w) d_π, a linear layer its "
    "fixed state.",
)
def kv_cache(s: SurveyShape, prompt: Num, response: Num) -> FloatArray:
    m = floats(prompt) + floats(response)
    windowed = s.window_layers * np.minimum(m, s.window)
    return 2.0 * s.hidden * (m * s.attending_layers + windowed) + s.linear_layers * s.linear_state


@states("Table 3", "Training activations per token", "M_Act(M)", "L_M d_M", "B.1.5.7")
def activations_per_token(s: SurveyShape) -> float:
    return float(s.layers * s.hidden)


@states("Table 3", "Inference buffer per token", "M_Inf(M)", "d_M", "B.1.5.7")
def inference_buffer_per_token(s: SurveyShape) -> float:
    return float(s.hidden)


@states(
    "Table 3",
    "Trained model state",
    "4|M|",
    "4 x parameters (parameters, gradients, Adam m and v)",
    "B.1.5.6",
)
def trained_state(s: SurveyShape, role: Role) -> float:
    return 4.0 * parameters(s, role)


# --- §3.7.1: ZeRO and FSDP --------------------------------------------------------------------


@states("§3.7.1", "Plain data parallelism", "ZeRO-0", "4P", "§3.7.1")
@states(
    "§3.7.1",
    "ZeRO-1 (optimizer states sharded)",
    "ZeRO-1",
    "2P + 2P/P_z",
    "§3.7.1",
    "The paper's text of this form is damaged (it reads 'P + P_z'); parameters and gradients "
    "whole and the two Adam moments sharded is the only reading that agrees with its ZeRO-2 "
    "(P + 3P/P_z) and ZeRO-3 (4P/P_z) forms and its 4P convention.",
)
@states("§3.7.1", "ZeRO-2 (optimizer states and gradients)", "ZeRO-2", "P + 3P/P_z", "§3.7.1")
@states(
    "§3.7.1",
    "ZeRO-3 / FSDP (everything sharded)",
    "ZeRO-3",
    "4P/P_z",
    "§3.7.1",
    "Transient all-gather buffers left out, as in the survey.",
)
def zero_state(params: Num, stage: Num, group: Num) -> FloatArray:
    """Model-state elements per rank of P trained parameters under ZeRO `stage` over `group`
    ranks. Of the four elements a parameter, stage 1 shards the two moments, stage 2 also the
    gradient, stage 3 also the parameter."""
    p = floats(params)
    z = floats(group)
    k = np.asarray(stage)
    whole = np.select([k >= 3, k == 2, k == 1], [0.0, 1.0, 2.0], 4.0)
    return p * whole + p * (4.0 - whole) / z


# --- §3.7, Tables 5-8 and B.3: one training iteration under intra-model parallelism -----------


@dataclass(frozen=True, slots=True)
class Degrees:
    """Parallel degrees P_d, P_p, P_t, P_c, P_e (numbers or arrays)."""

    dp: Num = 1
    pp: Num = 1
    tp: Num = 1
    cp: Num = 1
    ep: Num = 1


@dataclass(frozen=True, slots=True)
class WDM:
    """Work (FLOPs), depth (operations) and memory (elements) of one training iteration."""

    work: FloatArray
    depth: FloatArray
    memory: FloatArray


@states(
    "Table 7",
    "No parallelism (work, depth, memory)",
    "W, D, M",
    "6BmL(4d² + 2d d_ff + md); 2L log(d⁴ d_ff m / h) + log(Bm); L(16d² + 8d d_ff) + 4Vd + BmLd",
    "B.3.1",
)
@states(
    "Table 7",
    "Data parallelism, per rank",
    "W, D, M",
    "6(B/P_d)mL(4d² + 2d d_ff + md); 2L log(d⁴ d_ff m / h) + log(Bm/P_d); "
    "L(16d² + 8d d_ff) + 4Vd + (B/P_d)mLd",
    "B.3.2",
)
@states(
    "Table 7",
    "Pipeline parallelism, per rank",
    "W, D, M",
    "6Bm(L/P_p)(4d² + 2d d_ff + md); 2(L/P_p) log(d⁴ d_ff m / h) + log(Bm); "
    "(L/P_p)(16d² + 8d d_ff) + 4Vd + Bm(L/P_p)d",
    "B.3.3",
    "4Vd: the embedding and output head sit whole on a boundary stage.",
)
@states(
    "Table 7",
    "Tensor parallelism, per rank",
    "W, D, M",
    "6BmL(4d² + 2d d_ff + md)/P_t; 2L log(d⁴ d_ff m / (P_t² h)) + log(Bm); "
    "[L(16d² + 8d d_ff) + 4Vd + BmLd]/P_t",
    "B.3.4",
)
@states(
    "Table 7",
    "Context parallelism, per rank",
    "W, D, M",
    "6B(m/P_c)L(4d² + 2d d_ff + md); 2L log(d⁴ d_ff m / h) + log(Bm/P_c); "
    "L(16d² + 8d d_ff) + 4Vd + B(m/P_c)Ld",
    "B.3.5",
    "Each query still reduces over the whole m = S+T context.",
)
@states(
    "Table 7",
    "3D (data, pipeline, tensor), per rank",
    "W, D, M",
    "6(B/P_d)m(L/P_p)(4d² + 2d d_ff + md)/P_t; 2(L/P_p) log(d⁴ d_ff m / (P_t² h)) + "
    "log(Bm/P_d); L(16d² + 8d d_ff)/(P_p P_t) + 4Vd/P_t + BmLd/(P_d P_p P_t)",
    "B.3.7",
)
@states(
    "Table 7",
    "5D (data, pipeline, tensor, context, expert), per rank",
    "W, D, M",
    "6(B/(P_d P_e))(m/P_c)(L/P_p)(4d² + 2E_a d d_e + md)/P_t; "
    "2(L/P_p) log(d⁴ d_e m / (P_t² h)) + log(Bm/(P_d P_e P_c)); "
    "16Ld²/(P_p P_t) + 8LEd d_e/(P_p P_t P_e) + 4Vd/P_t + BmLd/(P_d P_e P_c P_p P_t)",
    "B.3.8",
    "Every row above is this one with the other degrees at 1 (a dense model is "
    "one expert of width d_ff).",
)
def per_rank(s: SurveyShape, sequences: Num, context: Num, p: Degrees) -> WDM:
    b, m = floats(sequences), floats(context)
    d, n = s.hidden, s.layers
    dp, pp, tp, cp, ep = (floats(x) for x in (p.dp, p.pp, p.tp, p.cp, p.ep))
    token_split = dp * ep * cp  # ranks that own disjoint batch-token positions
    work = 6.0 * b * m / token_split * (n / pp) * (4 * d * d + 2 * d * s.ffn_work + m * d) / tp
    depth = 2.0 * (n / pp) * (_layer_depth(s, tp) + log2(m)) + log2(b * m / token_split)
    memory = (
        16.0 * n * d * d / (pp * tp)
        + 8.0 * n * d * s.ffn_weights / (pp * tp * ep)
        + 4.0 * s.vocab * d / tp
        + b * m * n * d / (token_split * pp * tp)
    )
    return WDM(work, depth, memory)


@states(
    "Table 8",
    "Every layout: global work",
    "W",
    "6BmL(4d² + 2E_a d d_e + md) (= the baseline for a dense model)",
    "B.3.2-B.3.8",
)
@states(
    "Table 8",
    "Every layout: global depth",
    "D",
    "2L log(d⁴ d_e m / (P_t² h)) + log(Bm)",
    "B.3.4, B.3.7, B.3.8",
    "Appendix B keeps the tensor-parallel 1/P_t² in the global depth (B.3.4, B.3.7, B.3.8); "
    "Table 8 prints the baseline depth for TP, 3D and 5D. The appendix form is used.",
)
@states(
    "Table 8",
    "Global memory: data, context, 3D and 5D",
    "M",
    "P_d P_c P_e(16Ld² + 4Vd) + 8 P_d P_c LE d d_e + BmLd (DP: P_d[L(16d² + 8d d_ff) + 4Vd] "
    "+ BmLd; CP: P_c[...] + BmLd; PP, TP: ≈ the baseline)",
    "B.3.2-B.3.8",
)
def global_(s: SurveyShape, sequences: Num, context: Num, p: Degrees) -> WDM:
    b, m = floats(sequences), floats(context)
    d, n = s.hidden, s.layers
    replicas = floats(p.dp) * floats(p.cp)
    work = 6.0 * b * m * n * (4 * d * d + 2 * d * s.ffn_work + m * d)
    depth = 2.0 * n * (_layer_depth(s, p.tp) + log2(m)) + log2(b * m)
    memory = (
        replicas * floats(p.ep) * (16.0 * n * d * d + 4.0 * s.vocab * d)
        + 8.0 * replicas * n * d * s.ffn_weights
        + b * m * n * d
    )
    return WDM(work * np.ones_like(replicas), depth, memory)


@states(
    "Table 7",
    "Isolated expert parallelism, per rank",
    "W, D, M",
    "6BmL(4d² + 2E_a d d_e/P_e + md); 2L log(d⁴ d_e m / h) + log(Bm); "
    "L(16d² + 8Ed d_e/P_e) + 4Vd + BmLd",
    "B.3.6",
    "Only the experts are split; the dense path runs whole on every EP rank.",
)
def isolated_ep_rank(s: SurveyShape, sequences: Num, context: Num, ep: Num) -> WDM:
    b, m, e = floats(sequences), floats(context), floats(ep)
    d, n = s.hidden, s.layers
    work = 6.0 * b * m * n * (4 * d * d + 2 * s.ffn_work * d / e + m * d)
    depth = 2.0 * n * (_layer_depth(s, 1) + log2(m)) + log2(b * m) * np.ones_like(e)
    memory = n * (16.0 * d * d + 8.0 * s.ffn_weights * d / e) + 4.0 * s.vocab * d + b * m * n * d
    return WDM(work, depth, memory)


@states(
    "Table 8",
    "Isolated expert parallelism, global",
    "W, D, M",
    "6BmL(P_e(4d² + md) + 2E_a d d_e); 2L log(d⁴ d_e m / h) + log(Bm); "
    "P_e(16Ld² + 4Vd + BmLd) + 8LEd d_e",
    "B.3.6",
    "The dense arithmetic and state are replicated on every EP rank.",
)
def isolated_ep_global(s: SurveyShape, sequences: Num, context: Num, ep: Num) -> WDM:
    b, m, e = floats(sequences), floats(context), floats(ep)
    d, n = s.hidden, s.layers
    work = 6.0 * b * m * n * (e * (4 * d * d + m * d) + 2 * s.ffn_work * d)
    depth = 2.0 * n * (_layer_depth(s, 1) + log2(m)) + log2(b * m) * np.ones_like(e)
    memory = (
        e * (16.0 * n * d * d + 4.0 * s.vocab * d + b * m * n * d) + 8.0 * n * s.ffn_weights * d
    )
    return WDM(work, depth, memory)
