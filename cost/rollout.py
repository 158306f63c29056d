"""Rollout (generation): prefill and continuous-batching decode on inference replicas.

A decode step advances every active sequence of a replica by one token. Per pipeline stage it
costs the roofline max(FLOPs / achieved FLOP/s, (weights + KV cache read) / achieved HBM rate)
plus the tensor-parallel all-reduces (two per layer), the expert all-to-alls and the pipeline
send; with pp stages the batch is cut into pp micro-batches, so the weights are read pp times
per step and a lone sequence still crosses every stage in turn. A fixed host cost per step
(scheduling, sampling) is added once; an engine without CUDA graphs (eager mode) also pays a
host launch time per layer and step, and so does a step whose micro-batch exceeds the largest
batch the engine captured a graph for (Overheads.graph_batch_limit): a full batch of 1,024
sequences decodes eagerly until the drain shrinks it under the limit. Each MoE layer adds the
fixed GPU time of its fused expert kernels (Overheads.moe_layer_decode_seconds, measured),
which stream the touched experts' weights at their own measured rate
(EfficiencyFactors.expert_decode_hbm). With expert parallelism the routed experts' FLOPs and
all-to-alls run at the pace of the most loaded expert rank (model_pass.expert_straggler, from
measured imbalance).

A replica holds n sequences and runs min(n, capacity) of them at once. While a queue is left the
batch stays full: those tokens cost the full-batch time per token. The last full batch then
drains: the batch shrinks along the response-length survival S(t) (cost.lengths) for the
decode steps of the longest response, at the per-step latency of the shrinking batch, down to
the lone longest sequence. That drain is the stage's depth; W/p is every token at the
full-batch rate. Because a step's time per token falls as the batch grows and is convex in the
context, T = prefill + (queued tokens at full rate) + drain satisfies max(W/p, D) <= T <= W/p + D.
The one exception is the graph limit: a full batch above it pays the eager launches a drain
under it does not, so the drain may run cheaper per token than the full batch; W is then capped
at the decode's own time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from rlmguide.cost.architecture import ModelFigures
from rlmguide.cost.arrays import BoolArray, FloatArray
from rlmguide.cost.batch import Batch
from rlmguide.cost.collectives import (
    Fabric,
    all_reduce_bytes,
    gather_bytes,
    group_link,
    split_by_link,
    transfer_seconds,
)
from rlmguide.cost.efficiency import EfficiencyFactors
from rlmguide.cost.hardware import Hardware
from rlmguide.cost.layouts import RolloutLayout
from rlmguide.cost.lengths import expected_longest, length_grid, mean_position
from rlmguide.cost.memory import rollout_cache_read_bytes
from rlmguide.cost.model_pass import expert_straggler, routed_active_params
from rlmguide.cost.overheads import Overheads
from rlmguide.cost.stage import StageCost
from rlmguide.cost.units import BF16_BYTES


@dataclass(frozen=True, slots=True)
class StepCost:
    """One decode step of a replica, per GPU: time, its parts, and the bytes it moves."""

    seconds: FloatArray
    compute: FloatArray
    hbm: FloatArray
    scale_up: FloatArray
    scale_out: FloatArray
    hbm_bytes: FloatArray
    link_bytes: FloatArray


def _column(x: FloatArray) -> FloatArray:
    return x[:, None]


class DecodeModel:
    """The per-plan constants of a decode step, as (plans, 1) columns so one step formula
    serves one batch per plan and a whole grid of shrinking batches per plan.

    Per pipeline stage a step costs max(compute, HBM) + communication, where compute and the
    KV reads grow linearly with the micro-batch, the weight reads are fixed (for an MoE the
    share of experts touched grows with the batch), and every collective costs its latency
    plus bytes linear in the micro-batch: so communication is `fixed + slope x micro`.
    """

    def __init__(
        self,
        fig: ModelFigures,
        layout: RolloutLayout,
        hw: Hardware,
        fabric: Fabric,
        eff: EfficiencyFactors,
        overheads: Overheads,
    ) -> None:
        self.fig = fig
        tp, pp, ep = layout.tp, layout.pp, layout.ep
        flops_rate = hw.matmul_rate(layout.fp8) * eff.decode_compute
        hbm_rate = hw.hbm_bytes_per_s * eff.decode_hbm
        self.pp = _column(pp)
        # Host-side costs run at the speed of the GPU's host CPU (Hardware.host_overhead).
        self.step_overhead = overheads.decode_step_seconds * hw.host_overhead
        share = fig.stage_share(pp)
        # Eager mode: each stage's layers launch their kernels from the host every step.
        launch = fig.layers * share * overheads.eager_layer_seconds * hw.host_overhead
        self.eager_launch = _column(launch * np.ones_like(pp))
        self.eager = layout.eager[:, None]
        # SGLang captures fewer graphs below tensor-parallel degree 4 (Overheads).
        limit = np.where(
            layout.tp < 4, overheads.graph_batch_limit_below_tp4, overheads.graph_batch_limit
        )
        self.graph_batch_limit = _column(limit.astype(float))
        # Every MoE layer's fused expert kernels also cost a fixed GPU time per step.
        moe = fig.sparse_layers * share * overheads.moe_layer_decode_seconds if fig.is_moe else 0.0
        self.moe_fixed = _column(moe * np.ones_like(pp))
        # Seconds per micro-batch token: 2 x active parameters of FLOPs, plus the mixing FLOPs
        # and cache reads of its context, each layer by its kind (fig.mixing_flops,
        # rollout_cache_read_bytes).
        self.compute_fixed = _column(2.0 * fig.params_active * share / tp / flops_rate)
        # The routed experts' share of it, which the most loaded expert rank stretches
        # (model_pass.expert_straggler) by the imbalance at the step's tokens per rank.
        self.expert_compute = _column(2.0 * routed_active_params(fig) * share / tp / flops_rate)
        self.ep, self.tp = _column(ep), _column(tp)
        self.skew_by_ep = overheads.expert_skew_by_ep
        self.single_rank = bool(np.all(ep <= 1))  # no plan has an expert rank to wait for
        self.mixing_rate = _column(share / tp / flops_rate)
        self.hbm_rate = hbm_rate
        self.layout = layout
        wb = layout.weight_bytes
        attention = fig.attention_params / layout.attention_tp
        dense = attention + (fig.dense_params - fig.attention_params) / tp
        self.dense_bytes = _column(wb * dense * share)
        self.expert_bytes = _column(wb * fig.expert_params * share / np.maximum(ep, tp))
        self.dense_read = self.dense_bytes / hbm_rate
        # The fused-MoE kernel streams them at its own measured rate, beside its fixed time.
        self.expert_read = self.expert_bytes / (hw.hbm_bytes_per_s * eff.expert_decode_hbm)
        # Replicas that share one set of experts when ep spans beyond a replica's tp ranks.
        self.expert_sharing = _column(np.maximum(1.0, ep / tp))

        # Collectives of one step on one stage: (link, calls, bytes sent per micro-batch token).
        token = fig.hidden * BF16_BYTES  # one token's activation
        tp_link = group_link(fabric, tp, 1.0)
        layers = fig.layers * share
        pp_link = group_link(fabric, np.where(pp > 1, 2.0, 1.0), tp)
        groups = [
            (tp_link, 2.0 * layers, 2.0 * layers * all_reduce_bytes(token, tp_link), False),
            (pp_link, np.ones_like(pp), np.full_like(pp, token), False),
        ]
        # Decode context parallelism: per attention layer the group gathers every rank's
        # queries and combines the partial outputs (with their log-sum-exp) of its token shards.
        cp = layout.cp
        cp_link = group_link(fabric, cp, 1.0)
        attention_layers = (fig.mixing.full + fig.mixing.sliding + fig.mixing.sparse) * share
        query = token * cp / layout.attention_tp
        cp_bytes = 2.0 * attention_layers * gather_bytes(query, cp_link)
        groups.append((cp_link, 2.0 * attention_layers, cp_bytes, False))
        if fig.is_moe:
            ep_link = group_link(fabric, ep, 1.0)
            calls = 2.0 * fig.sparse_layers * share  # dispatch and combine
            groups.append(
                (
                    ep_link,
                    calls,
                    calls * gather_bytes(token * fig.experts_per_token, ep_link),
                    True,
                )
            )
        n = tp.shape[0]
        up_fixed, up_slope, out_fixed, out_slope, sent_slope = (np.zeros(n) for _ in range(5))
        ep_up_slope, ep_out_slope = np.zeros(n), np.zeros(n)
        for link, calls, per_token, experts in groups:
            active = link.active()
            fixed = np.where(active, calls * link.latency, 0.0)
            slope = np.where(active, per_token / link.bytes_per_s, 0.0)
            up_fixed += np.where(link.scale_out, 0.0, fixed)
            up_slope += np.where(link.scale_out, 0.0, slope)
            out_fixed += np.where(link.scale_out, fixed, 0.0)
            out_slope += np.where(link.scale_out, slope, 0.0)
            sent_slope += np.where(active, per_token, 0.0)
            if experts:  # the most loaded expert rank receives the most
                ep_up_slope += np.where(link.scale_out, 0.0, slope)
                ep_out_slope += np.where(link.scale_out, slope, 0.0)
        self.ep_up_slope, self.ep_out_slope = _column(ep_up_slope), _column(ep_out_slope)
        self.up_fixed, self.up_slope = _column(up_fixed), _column(up_slope)
        self.out_fixed, self.out_slope = _column(out_fixed), _column(out_slope)
        self.comm_fixed = self.up_fixed + self.out_fixed
        self.comm_slope = self.up_slope + self.out_slope
        self.sent_slope = _column(sent_slope)
        self.tp_link = tp_link

    def _micro(self, batch: FloatArray) -> FloatArray:
        return np.maximum(batch / self.pp, 1.0)  # tokens per pipeline micro-batch

    def _launch(self, micro: FloatArray) -> FloatArray:
        """Fixed per-stage time of a step of `micro` tokens: the host's per-layer launches
        where the step runs eagerly (eager mode, or a batch above the largest captured CUDA
        graph, Overheads.graph_batch_limit), plus the MoE layers' fixed kernel time."""
        eager = self.eager | (micro > self.graph_batch_limit)
        return np.where(eager, self.eager_launch, 0.0) + self.moe_fixed

    def _straggle(self, micro: FloatArray) -> FloatArray | float:
        """The expert straggler factor less one at a micro-batch of `micro` tokens: each
        tensor rank routes its share and an expert rank receives as many copies as it sends."""
        if not self.fig.is_moe or self.single_rank:
            return 0.0
        routed = micro * self.fig.experts_per_token / self.tp
        return expert_straggler(self.ep, routed, self.skew_by_ep) - 1.0

    def _touched(self, micro: FloatArray) -> FloatArray | float:
        if not self.fig.is_moe:
            return 1.0
        return self.fig.expert_read_fraction(micro * self.expert_sharing)

    def _kv_read(self, context: FloatArray) -> FloatArray:
        """Cache bytes one micro-batch token at `context` reads on a GPU."""
        return rollout_cache_read_bytes(self.fig, self.layout, context, column=True)

    def _compute(
        self, micro: FloatArray, context: FloatArray, straggle: FloatArray | float
    ) -> FloatArray:
        mixing = self.fig.mixing_flops(context) * self.mixing_rate
        experts = self.expert_compute * straggle
        return micro * (self.compute_fixed + mixing + experts)

    def _stage_seconds(self, micro: FloatArray, context: FloatArray) -> FloatArray:
        """One stage's share of a step, from the micro-batch and its mean context."""
        straggle = self._straggle(micro)
        compute = self._compute(micro, context, straggle)
        hbm = self.dense_read + micro * self._kv_read(context) / self.hbm_rate
        if self.fig.is_moe:
            hbm = hbm + self.expert_read * self._touched(micro)
        ep_slope = (self.ep_up_slope + self.ep_out_slope) * straggle
        comm = self.comm_fixed + micro * (self.comm_slope + ep_slope)
        return np.maximum(compute, hbm) + comm + self._launch(micro)

    def step_seconds(self, batch: FloatArray, context: FloatArray) -> FloatArray:
        """Seconds of a decode step of `batch` sequences at mean context `context`."""
        micro = self._micro(batch)
        return self.pp * self._stage_seconds(micro, context) + self.step_overhead

    def step(self, batch: FloatArray, context: FloatArray) -> StepCost:
        """The same step with its parts and the bytes it moves per GPU."""
        micro = self._micro(batch)
        straggle = self._straggle(micro)
        compute = self._compute(micro, context, straggle)
        touched = self._touched(micro)
        kv = micro * self._kv_read(context)
        hbm = self.dense_read + self.expert_read * touched + kv / self.hbm_rate
        up = self.up_fixed + micro * (self.up_slope + self.ep_up_slope * straggle)
        out = self.out_fixed + micro * (self.out_slope + self.ep_out_slope * straggle)
        pp = self.pp
        read = self.dense_bytes + self.expert_bytes * touched + kv
        return StepCost(
            seconds=pp * (np.maximum(compute, hbm) + up + out + self._launch(micro))
            + self.step_overhead,
            compute=pp * compute,
            hbm=pp * hbm,
            scale_up=pp * up,
            scale_out=pp * out,
            hbm_bytes=pp * read,
            link_bytes=pp * micro * self.sent_slope,
        )

    def drain(
        self, batch: FloatArray, context: FloatArray, widths: FloatArray
    ) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Seconds, HBM bytes and link bytes per GPU of the steps of a length grid
        (plans x segments, `widths` steps per segment), summed over the grid."""
        micro = self._micro(batch)
        pp = self.pp[:, 0]
        steps = widths.sum(axis=1)
        stage = np.einsum("ij,ij->i", widths, self._stage_seconds(micro, context))
        seconds = pp * stage + self.step_overhead * steps
        kv = np.einsum("ij,ij->i", widths, micro * self._kv_read(context))
        read = self.dense_bytes[:, 0] * steps + kv
        if self.fig.is_moe:
            touched = np.einsum("ij,ij->i", widths, self._touched(micro))
            read = read + self.expert_bytes[:, 0] * touched
        sent = self.sent_slope[:, 0] * np.einsum("ij,ij->i", widths, micro)
        return seconds, pp * read, pp * sent

    def prefill_token(self, prompt_tokens: float, flops_rate: FloatArray | float) -> PrefillToken:
        """One prompt token of a large prefill on one pipeline stage: compute-bound (the
        weights are read once per chunk of thousands of tokens, which is negligible) plus the
        bandwidth term of the tensor-parallel all-reduces (their latency is amortised over
        the chunk)."""
        fig = self.fig
        flops = 2.0 * fig.params_active + fig.causal_mixing_flops(prompt_tokens) / prompt_tokens
        share = fig.stage_share(self.pp[:, 0])
        compute = flops * share / self.tp_link.size / flops_rate
        link = self.tp_link
        sent = 2.0 * fig.layers * share * all_reduce_bytes(fig.hidden * BF16_BYTES, link)
        sent = np.where(link.active(), sent, 0.0)
        comm = transfer_seconds(sent, link, 0.0)
        up, out = split_by_link(comm, link)
        return PrefillToken(compute + comm, compute, up, out, sent)


@dataclass(frozen=True, slots=True)
class PrefillToken:
    seconds: FloatArray
    compute: FloatArray
    scale_up: FloatArray
    scale_out: FloatArray
    link_bytes: FloatArray


@dataclass(frozen=True, slots=True)
class RolloutExtras:
    sequences_per_replica: FloatArray
    concurrency: FloatArray
    """Sequences a replica decodes at once (min of its share and its KV capacity)."""
    min_token_seconds: FloatArray
    """Latency of one decode step of a lone sequence at the prompt's context: the plan's
    minimum per-token latency."""
    decode_cap_tokens: FloatArray
    """Decode steps of the drain: max_response_tokens, or the partial-rollout cap."""
    stream: Stream
    """The same engine run as a stream (cost.compose's asynchronous pipeline)."""

    def take(self, rows: np.ndarray) -> RolloutExtras:
        return RolloutExtras(
            self.sequences_per_replica[rows],
            self.concurrency[rows],
            self.min_token_seconds[rows],
            self.decode_cap_tokens[rows],
            self.stream.take(rows),
        )


@dataclass(frozen=True, slots=True)
class Stream:
    """A replica that never drains: requests are admitted as others finish, up to `admitted`
    steps' worth of sequences in flight (the asynchronous frameworks' in-flight cap: NeMo RL
    num_prompts_per_step x max_trajectory_age_steps, AReaL (1 + max_head_offpolicyness) x
    the batch, slime's buffer of rollout_batch_size groups), so the batch stays at
    min(in flight, KV capacity) and no step waits for the longest response."""

    concurrency: FloatArray
    """Sequences decoded at once in the steady stream."""
    produce_seconds: FloatArray
    """Time per RL step to generate one step's sequences (their prefill and every token) at
    the steady batch: the pool's busy time per step."""
    sequence_seconds: FloatArray
    """Latency of one longest response inside that batch (its prompt, then max_response
    decode steps at the steady step time): what k steps must last where a whole trajectory
    must finish within k weight versions."""

    def take(self, rows: np.ndarray) -> Stream:
        return Stream(
            self.concurrency[rows], self.produce_seconds[rows], self.sequence_seconds[rows]
        )


def length_grids(
    batch: Batch, caps: FloatArray, segments: int
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Widths, survival and positions of the length grid per plan (plans x segments); plans
    share a grid per distinct cap, so the closed forms run once per cap."""
    unique, index = np.unique(caps, return_inverse=True)
    grids = [
        length_grid(batch.response_tokens, batch.longest_response, float(c), segments)
        for c in unique
    ]
    widths = np.stack([g.widths for g in grids])[index]
    survival = np.stack([g.survival for g in grids])[index]
    position = np.stack([g.position for g in grids])[index]
    return widths, survival, position


def rollout_stage(
    fig: ModelFigures,
    layout: RolloutLayout,
    batch: Batch,
    capacity: FloatArray,
    decode_caps: FloatArray,
    prefix_caching: BoolArray,
    hw: Hardware,
    fabric: Fabric,
    eff: EfficiencyFactors,
    overheads: Overheads,
    admitted: FloatArray | None = None,
) -> tuple[StageCost, RolloutExtras]:
    """`admitted`: steps' worth of sequences a streaming replica keeps in flight (1 where
    unset); it shapes only `RolloutExtras.stream`, not the batched stage."""
    model = DecodeModel(fig, layout, hw, fabric, eff, overheads)
    prompt, mean, longest = batch.prompt_tokens, batch.response_tokens, batch.longest_response
    n = np.ceil(batch.generated_sequences / layout.dp)
    # A replica that cannot hold one sequence is infeasible (memory reports it); time it at 1.
    full = np.minimum(n, np.maximum(capacity, 1.0))

    widths, survival, position = length_grids(batch, decode_caps, overheads.length_segments)
    drain_batch = np.maximum(full[:, None] * survival, 1.0)
    drain_seconds, drain_hbm, drain_sent = model.drain(drain_batch, prompt + position, widths)
    drain_weights = widths * survival
    tail_per_sequence = drain_weights.sum(axis=1)
    mean_context = prompt + (drain_weights * position).sum(axis=1) / tail_per_sequence
    at_full = model.step(full[:, None], mean_context[:, None])
    per_token = at_full.seconds[:, 0] / full

    decode_tokens = n * mean
    queued_tokens = np.maximum(decode_tokens - full * tail_per_sequence, 0.0)
    queued_steps = queued_tokens / full
    full_steps = decode_tokens / full  # steps if every token ran at the full batch

    # Prefill: one pass per prompt when the group shares its prompt's KV (prefix caching),
    # at least one prompt per replica; q prompts cross a pipeline of pp stages in (q + pp - 1)
    # prompt-stage times (the same bubble as training's).
    prompts = np.where(prefix_caching, np.maximum(n / batch.generated_per_prompt, 1.0), n)
    pf = model.prefill_token(prompt, hw.matmul_rate(layout.fp8) * eff.prefill_compute)
    prompt_stage = prompt * pf.seconds
    prefill_seconds = (prompts + layout.pp - 1.0) * prompt_stage
    prefill_work = prompts * prompt_stage
    prefill_depth = layout.pp * prompt_stage

    decode_seconds = queued_steps * per_token * full + drain_seconds
    seconds = prefill_seconds + decode_seconds
    # A full batch above the CUDA-graph limit pays eager launches that the drain's smaller
    # graphed steps do not, so every token at the full-batch rate can exceed the decode's own
    # time: the work is then the decode's time (W/p <= T stays true; else the min changes nothing).
    work = prefill_work + np.minimum(decode_tokens * per_token, decode_seconds)
    depth = prefill_depth + drain_seconds

    # Work in FLOPs does not depend on the layout: every generated token once, every prompt
    # once (per group with prefix caching), attention at the distribution's mean context.
    prefilled = batch.generated_sequences / batch.generated_per_prompt
    prefilled = np.where(prefix_caching, prefilled, batch.generated_sequences)
    params_flop = 2.0 * fig.params_active
    decode_context = prompt + mean_position(mean, longest)
    flop_per_token = params_flop + fig.mixing_flops(decode_context)
    decode_flop = batch.generated_sequences * mean * flop_per_token
    prefill_flop = prefilled * (prompt * params_flop + fig.causal_mixing_flops(prompt))

    gpus = layout.gpus  # = replicas x tp x pp; traffic below is per GPU
    prefill_tokens = prompts * prompt
    hbm_bytes = queued_steps * at_full.hbm_bytes[:, 0] + drain_hbm
    link_bytes = (
        queued_steps * at_full.link_bytes[:, 0] + drain_sent + prefill_tokens * pf.link_bytes
    )
    stage = StageCost(
        seconds=seconds,
        work_seconds=work,
        depth_seconds=depth,
        work_flop=decode_flop + prefill_flop,
        hbm_bytes=gpus * hbm_bytes,
        link_bytes=gpus * link_bytes,
        gpus=gpus,
        compute_seconds=prefill_tokens * pf.compute + full_steps * at_full.compute[:, 0],
        hbm_seconds=full_steps * at_full.hbm[:, 0],
        scale_up_seconds=prefill_tokens * pf.scale_up + full_steps * at_full.scale_up[:, 0],
        scale_out_seconds=prefill_tokens * pf.scale_out + full_steps * at_full.scale_out[:, 0],
    )
    lone = model.step_seconds(np.ones((len(n), 1)), np.full((len(n), 1), prompt))[:, 0]
    # The stream: the batch held at min(decoding, capacity) at the decoded tokens' mean context.
    group = float(batch.generated_per_prompt)
    in_flight = n * (np.ones_like(n) if admitted is None else admitted)
    # Where a group holds its slots until its longest response ends (Overheads.group_admission),
    # by Little's law the share of in-flight responses still decoding is a response's mean
    # length over the group's longest.
    decoding = 1.0
    if overheads.group_admission and group > 1:
        decoding = min(mean / expected_longest(mean, longest, group), 1.0)  # rounding
    steady = np.minimum(np.maximum(in_flight * decoding, 1.0), np.maximum(capacity, 1.0))
    stream_context = prompt + mean_position(mean, longest)
    steady_step = model.step_seconds(steady[:, None], np.full((len(n), 1), stream_context))[:, 0]
    stream = Stream(
        concurrency=steady,
        produce_seconds=prefill_work + decode_tokens * steady_step / steady,
        sequence_seconds=prompt_stage * layout.pp + np.minimum(decode_caps, longest) * steady_step,
    )
    extras = RolloutExtras(
        sequences_per_replica=n,
        concurrency=full,
        min_token_seconds=lone,
        decode_cap_tokens=decode_caps,
        stream=stream,
    )
    return stage, extras
