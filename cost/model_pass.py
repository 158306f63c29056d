"""One micro-batch through one pipeline stage of a training layout: forward only (log-probs,
values, rewards) or forward and backward (training), with the traffic each issues.

Per micro-batch and stage GPU: compute = FLOPs / (tp x cp) times the fullest stage's share
of the layers (1 / pp when pp divides them), at the achieved rate;
Megatron tensor parallelism issues all-reduce-sized collectives per layer (2 forward,
2 backward, 2 more when full recomputation repeats the forward), over the tensor group;
context parallelism passes each rank's K/V chunk around the ring (cp - 1 hops per exchange;
1 exchange forward, 2 backward); expert parallelism dispatches and combines top-k copies of
each token (2 all-to-alls forward, 2 backward); pipeline stages send activations forward and
gradients back. ZeRO-3 gathers each layer's weights before use (and reduce-scatters its
gradients every micro-batch: verl's FSDP workers and NeMo-RL's DTensor workers accumulate
without no_sync or set_requires_gradient_sync, at b178a3cd and 7ea279abf), which FSDP prefetches
under the compute: that traffic overlaps, the rest adds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from rlmguide.cost.architecture import ModelFigures
from rlmguide.cost.arrays import FloatArray
from rlmguide.cost.collectives import (
    all_reduce_bytes,
    gather_bytes,
    split_by_link,
    transfer_seconds,
)
from rlmguide.cost.efficiency import EXPERT_REFERENCE_FFN
from rlmguide.cost.layouts import TrainLayout, TrainLinks
from rlmguide.cost.memory import model_parallel_params
from rlmguide.cost.plans import RECOMPUTE_FULL, RECOMPUTE_SELECTIVE
from rlmguide.cost.units import BF16_BYTES


@dataclass(frozen=True, slots=True)
class PassCounts:
    """What one pass does per token and per layer, per plan (recompute changes it)."""

    param_flops: FloatArray
    """FLOPs per parameter per token: 2 forward, 6 for training, 8 with full recompute."""
    attention: FloatArray
    """Multiples of the forward attention FLOPs: 1 forward, 3 training (+1 recomputed under
    selective or full recomputation)."""
    tp_collectives: FloatArray
    cp_exchanges: FloatArray
    ep_all_to_alls: FloatArray
    pp_sends: float
    zero3_gathers: float
    """All-gathers of a layer's weights per pass (forward, and again for the backward)."""
    zero3_reduces: float
    """Reduce-scatters of a layer's gradients per pass (one in training, none forward)."""
    weight_reads: FloatArray
    """Passes over the weights in HBM (forward, backward data, backward weights, recompute)."""


def forward_counts(plans: int) -> PassCounts:
    one = np.ones(plans)
    return PassCounts(
        param_flops=2.0 * one,
        attention=one,
        tp_collectives=2.0 * one,
        cp_exchanges=one,
        ep_all_to_alls=2.0 * one,
        pp_sends=1.0,
        zero3_gathers=1.0,
        zero3_reduces=0.0,
        weight_reads=one,
    )


def training_counts(layout: TrainLayout) -> PassCounts:
    """LoRA skips the weight-gradient GEMMs of the frozen base: 2 FLOPs per parameter and
    token fewer, and one pass over the weights fewer."""
    full = layout.recompute == RECOMPUTE_FULL
    recomputed_attention = full | (layout.recompute == RECOMPUTE_SELECTIVE)
    lora = np.where(layout.lora, 1.0, 0.0)
    return PassCounts(
        param_flops=np.where(full, 8.0, 6.0) - 2.0 * lora,
        attention=np.where(recomputed_attention, 4.0, 3.0),
        tp_collectives=np.where(full, 6.0, 4.0),
        cp_exchanges=np.where(full, 4.0, 3.0),
        ep_all_to_alls=np.where(full, 6.0, 4.0),
        pp_sends=2.0,
        zero3_gathers=2.0,
        zero3_reduces=1.0,
        weight_reads=np.where(full, 4.0, 3.0) - lora,
    )


def flops_per_token(fig: ModelFigures, counts: PassCounts, sequence_tokens: float) -> FloatArray:
    """Parameter FLOPs plus the causal sequence mixing of a sequence, per token (full
    attention: at mean context sequence / 2)."""
    attention = fig.causal_mixing_flops(sequence_tokens) / sequence_tokens
    return counts.param_flops * fig.params_active + counts.attention * attention


def work_per_token(
    fig: ModelFigures, counts: PassCounts, sequence_tokens: float, layout: TrainLayout
) -> FloatArray:
    """The whole layout's FLOPs per token of the batch: `flops_per_token`, plus, where an
    isolated EP group replicates the dense path (survey Table 8), its dense FLOPs ep - 1 times
    more."""
    whole = flops_per_token(fig, counts, sequence_tokens)
    dense = whole - counts.param_flops * routed_active_params(fig)
    return whole + np.where(layout.ep_isolated, (layout.ep - 1.0) * dense, 0.0)


def routed_active_params(fig: ModelFigures) -> float:
    """Routed-expert parameters one token passes through (top-k of the experts)."""
    return fig.expert_params * fig.experts_per_token / max(fig.experts, 1)


def expert_slowdown(fig: ModelFigures, expert_compute: float) -> float:
    """Extra time of the routed experts as a share of their GEMMs' time at the dense rate:
    w0 / w for an expert FFN of width w, where a routed token's fixed cost (routing,
    permutation, dispatch, combine) is worth w0 columns of GEMM and `expert_compute` is the
    experts' share of the dense rate w / (w + w0) at EXPERT_REFERENCE_FFN."""
    if fig.expert_ffn <= 0:
        return 0.0
    w0 = EXPERT_REFERENCE_FFN * (1.0 / expert_compute - 1.0)
    return w0 / fig.expert_ffn


def expert_straggler(
    ep: FloatArray | float,
    routed_per_rank: FloatArray | float,
    skew_by_ep: tuple[tuple[float, float], ...],
) -> FloatArray:
    """Time of an MoE layer's expert part on its most loaded expert rank over the time at a
    balanced load: every rank waits for that one at the combine.

    Two causes, the larger binds. Expert popularity: the measured max/mean of a rank's tokens
    at each EP degree (Overheads.expert_skew_by_ep, from blog-lmsys-large-scale-ep: DeepSeek-V3
    without EPLB), interpolated in log2(EP) from 1.0 at EP 1 and held beyond the last
    measurement. Sampling: with `routed_per_rank` routed token copies per rank and step (tokens
    per expert x experts per rank), the fullest of `ep` Poisson loads exceeds the mean by about
    sqrt(2 ln(ep) / routed_per_rank), the blog's "larger batches reduce random fluctuations";
    it vanishes at the large batches the measurement ran. Never above `ep`: one rank holds at
    most every token."""
    ep = np.asarray(ep, dtype=float)
    if not skew_by_ep:
        return np.ones(np.broadcast(ep, np.asarray(routed_per_rank)).shape)
    degrees = np.log2([1.0, *(d for d, _ in skew_by_ep)])
    values = np.array([1.0, *(v for _, v in skew_by_ep)])
    popularity = np.interp(np.log2(np.maximum(ep, 1.0)), degrees, values)
    routed = np.maximum(np.asarray(routed_per_rank, dtype=float), 1.0)
    sampling = 1.0 + np.sqrt(2.0 * np.log(np.maximum(ep, 1.0)) / routed)
    return np.minimum(np.maximum(popularity, sampling), np.maximum(ep, 1.0))


@dataclass(frozen=True, slots=True)
class MicroPass:
    """One micro-batch on one stage GPU."""

    seconds: FloatArray
    compute: FloatArray
    scale_up: FloatArray
    scale_out: FloatArray
    hbm_bytes: FloatArray
    link_bytes: FloatArray


def micro_pass(
    fig: ModelFigures,
    layout: TrainLayout,
    links: TrainLinks,
    flops_rate: FloatArray | float,
    counts: PassCounts,
    micro_tokens: FloatArray,
    sequence_tokens: float,
    expert_loop_seconds: float = 0.0,
    expert_compute: float = 1.0,
    gradient_reduce_bytes: float = BF16_BYTES,
) -> MicroPass:
    """`expert_compute`: the share of the pass's matmul rate that the routed experts reach at
    the reference expert width (EfficiencyFactors.expert_compute; expert_slowdown).
    `gradient_reduce_bytes`: bytes per parameter of ZeRO-3's gradient reduce-scatter
    (Overheads.zero3_gradient_bytes_per_param)."""
    tp, cp, pp = layout.tp, layout.cp, layout.pp
    tokens = micro_tokens / cp  # tokens on this GPU's context shard
    # the fullest stage sets the pipeline's pace
    share = fig.fullest_stage_share(pp, layout.first_layers, layout.last_layers)
    layers = fig.layers * share
    # Routed-expert FLOPs take (1 + w0 / w) as long as dense FLOPs do.
    routed = counts.param_flops * routed_active_params(fig)
    slowdown = expert_slowdown(fig, expert_compute)
    flops = flops_per_token(fig, counts, sequence_tokens) + routed * slowdown
    # Isolated EP: every rank of the group runs the group's tokens through the dense path
    # (micro_batches gives it ep times the tokens) but its routed experts see only their
    # 1/ep of them, so per token of this rank the routed work is 1/ep (survey B.3.6).
    unrouted = routed * (1.0 + slowdown) * (1.0 - 1.0 / layout.ep)
    flops = flops - np.where(layout.ep_isolated, unrouted, 0.0)
    compute = tokens * flops * share / tp / flops_rate

    activation = tokens * fig.hidden * BF16_BYTES
    tp_link = links.tp
    tp_calls = counts.tp_collectives * layers
    tp_sent = tp_calls * all_reduce_bytes(activation, tp_link)
    parts = [(transfer_seconds(tp_sent, tp_link, tp_calls), tp_link)]
    sent = np.where(tp_link.active(), tp_sent, 0.0)

    cp_link = links.cp
    cp_calls = counts.cp_exchanges * layers * (cp - 1.0)
    cp_sent = cp_calls * tokens * fig.kv_width * BF16_BYTES / tp
    parts.append((transfer_seconds(cp_sent, cp_link, cp_calls), cp_link))
    sent = sent + cp_sent

    if fig.is_moe:
        ep_link = links.ep
        ep_calls = counts.ep_all_to_alls * fig.sparse_layers * share
        # With sequence parallelism each tensor rank routes its 1/tp of the tokens.
        ep_sent = ep_calls * gather_bytes(activation / tp * fig.experts_per_token, ep_link)
        # Isolated, the tokens are already on every rank of the group: no dispatch; the
        # partial expert outputs are summed over the group, one all-reduce where folding
        # runs a dispatch and a combine all-to-all.
        summed = ep_calls / 2.0 * all_reduce_bytes(activation / tp, ep_link)
        ep_sent = np.where(layout.ep_isolated, summed, ep_sent)
        ep_calls = np.where(layout.ep_isolated, ep_calls / 2.0, ep_calls)
        parts.append((transfer_seconds(ep_sent, ep_link, ep_calls), ep_link))
        sent = sent + np.where(ep_link.active(), ep_sent, 0.0)

    pp_link = links.pp
    # Interleaved over v chunks, a micro-batch crosses v times as many stage boundaries.
    pp_calls = counts.pp_sends * layout.virtual_stages
    pp_sent = pp_calls * activation / tp
    pp_time = transfer_seconds(pp_sent, pp_link, pp_calls)
    sent = sent + np.where(pp_link.active(), pp_sent, 0.0)

    dense, expert = model_parallel_params(fig, layout)
    zero3 = layout.zero >= 3
    # Without expert parallelism, an FSDP/ZeRO-3 backend runs the model's own expert loop.
    passes = counts.ep_all_to_alls / 2.0
    loop = np.where(
        zero3 & (layout.ep == 1) & fig.is_moe,
        passes * fig.sparse_layers * share * fig.experts * expert_loop_seconds,
        0.0,
    )
    shard_link, expert_link = links.shard, links.expert_shard
    z_calls = (counts.zero3_gathers + counts.zero3_reduces) * layers
    # Weights are gathered in bf16; gradients are reduced in the backend's reduce dtype.
    z_bytes = counts.zero3_gathers * BF16_BYTES + counts.zero3_reduces * gradient_reduce_bytes
    z_dense = gather_bytes(z_bytes * dense, shard_link)
    z_expert = gather_bytes(z_bytes * expert, expert_link)
    z_time = np.where(
        zero3,
        transfer_seconds(z_dense, shard_link, z_calls)
        + transfer_seconds(z_expert, expert_link, z_calls),
        0.0,
    )
    # Hybrid sharding: each layer's reduced gradient shard is then all-reduced across the
    # replicas (FSDP's HYBRID_SHARD, FSDP2 on a ddp x fsdp mesh), every micro-batch as the
    # reduce-scatter; a single replica sends nothing.
    replica_link = links.replica
    r_calls = counts.zero3_reduces * layers
    r_sent = all_reduce_bytes(
        counts.zero3_reduces
        * gradient_reduce_bytes
        * (dense / layout.shard_group + expert / layout.expert_shard_group),
        replica_link,
    )
    r_time = np.where(zero3, transfer_seconds(r_sent, replica_link, r_calls), 0.0)
    sent = sent + np.where(zero3, z_dense + z_expert + r_sent, 0.0)

    up = np.zeros_like(compute)
    out = np.zeros_like(compute)
    for seconds, link in parts:
        u, o = split_by_link(seconds, link)
        up, out = up + u, out + o
    # The ZeRO-3 traffic hides under the compute; what sticks out is charged to its link.
    exposed = np.maximum(z_time - compute, 0.0)
    z_up, z_out = split_by_link(exposed, shard_link)
    # the replicas' all-reduce hides in what compute the group's traffic leaves
    r_exposed = np.maximum(r_time - np.maximum(compute - z_time, 0.0), 0.0)
    r_up, r_out = split_by_link(r_exposed, replica_link)
    up, out = up + z_up + r_up, out + z_out + r_out
    # Interleaved, Megatron overlaps the stage sends with the other chunks' forward and
    # backward (overlap_p2p_comm, on unless --no-overlap-p2p-communication, and only with
    # virtual stages; Llama 3's asynchronous point-to-point alike): only what outlasts the
    # compute ZeRO-3 leaves free is exposed. The plain schedule waits for each send.
    room = np.maximum(compute - np.where(zero3, z_time + r_time, 0.0), 0.0)
    pp_exposed = np.where(layout.virtual_stages > 1, np.maximum(pp_time - room, 0.0), pp_time)
    p_up, p_out = split_by_link(pp_exposed, pp_link)
    up, out = up + p_up, out + p_out
    return MicroPass(
        seconds=compute + loop + up + out,
        compute=compute + loop,
        scale_up=up,
        scale_out=out,
        hbm_bytes=counts.weight_reads * BF16_BYTES * (dense + expert),
        link_bytes=sent,
    )
