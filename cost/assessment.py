"""Assessment: the passes between generation and training, on the training GPUs.

Reference log-probs (for the KL term), old log-probs of the behaviour policy, critic values
and reward scores, each a forward pass over prompt + response tokens, compute-bound, in
micro-batches through the training layout's pipeline: (m + pp - 1) micro-batch times for m
micro-batches per data-parallel rank. A rule-based verifier runs on CPUs and costs no GPU time.

How a reward is scored on GPUs (`Scoring`):
- a reward model (outcome): one forward pass per response;
- a process reward model: one forward pass per response when the step scores are read at the
  step-separator tokens of that one pass (Math-Shepherd, PRIME's implicit PRM), the same cost
  as a reward model; scored prefix by prefix, S steps cost S passes over prompt + the first
  k/S of the response (k = 1..S): S x prompt + response x (S + 1) / 2 tokens per response;
  when each step's verification waits for the previous verdict (survey Table 2: a process
  reward is sequential where its verification is), the same passes run one after another;
- an LLM judge (d-RLAIF): per response and call, a prefill of prompt + response + rubric and
  a decode of the verdict's tokens (`verdict_decode`).
The reference may be another model than the policy, and fp8 (its matmuls at the fp8 rate).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
from rlmguide.cost.architecture import ModelFigures
from rlmguide.cost.arrays import BoolArray, FloatArray
from rlmguide.cost.batch import Batch
from rlmguide.cost.collectives import all_reduce_bytes, split_by_link, transfer_seconds
from rlmguide.cost.efficiency import EfficiencyFactors
from rlmguide.cost.hardware import Hardware
from rlmguide.cost.layouts import TrainLayout, TrainLinks
from rlmguide.cost.memory import (
    WEIGHT_BYTES,
    Frozen,
    forward_micro_tokens,
    frozen_weight_bytes,
    model_parallel_params,
    reshard_bytes,
)
from rlmguide.cost.model_pass import forward_counts, work_per_token
from rlmguide.cost.overheads import Overheads
from rlmguide.cost.stage import StageCost, chain, choose, idle_stage
from rlmguide.cost.training import micro_batches, pipeline_stage, value_head_stage
from rlmguide.cost.units import BF16_BYTES

RewardKind = Literal["reward-model", "process-reward-model", "llm-judge"]


@dataclass(frozen=True, slots=True)
class Scoring:
    """How the reward model scores one response (a verifier needs none of this)."""

    kind: RewardKind = "reward-model"
    calls_per_response: int = 1
    """LLM judge: verdicts asked per response (several samples or several rubrics), each
    with its own prefill: no prefix is shared between the calls, an upper bound where the
    judge's engine caches the shared prompt and response."""
    rubric_tokens: int = 0
    """LLM judge: tokens of the rubric and instructions added to prompt + response."""
    verdict_tokens: int = 0
    """LLM judge: tokens the judge generates per verdict."""
    steps_per_response: int = 1
    """Process reward model: reasoning steps scored per response."""
    per_prefix: bool = False
    """Process reward model: one pass per step prefix instead of one pass per response."""
    chained: bool = False
    """Process reward model scoring per prefix: each step's pass waits for the previous
    step's verdict (a verification that stops or branches on it), so the S passes run one
    after another, each over every response's prefix, instead of as one batch."""

    def forward(self, batch: Batch, responses: float) -> tuple[float, Batch]:
        """The forward passes of the scoring: how many sequences, of which lengths."""
        if self.kind == "llm-judge":
            # The judge reads prompt, response and rubric before it writes its verdict.
            prompt = batch.prompt_tokens + self.rubric_tokens
            return responses * self.calls_per_response, replace(batch, prompt_tokens=prompt)
        if self.kind == "process-reward-model" and self.per_prefix:
            steps = self.steps_per_response
            mean = batch.response_tokens * (steps + 1) / (2.0 * steps)
            return responses * steps, replace(batch, response_tokens=mean)
        return responses, batch


ONE_PASS = Scoring()
"""A reward model's scoring: one forward pass per response."""


def forward_stage(
    fig: ModelFigures,
    sequences: float,
    layout: TrainLayout,
    links: TrainLinks,
    batch: Batch,
    hw: Hardware,
    eff: EfficiencyFactors,
    overheads: Overheads,
    fp8: bool = False,
) -> StageCost:
    """One model's forward pass over `sequences` sequences, all in one pipeline flush; `fp8`
    runs its matmuls at the fp8 rate (a quantised reference model)."""
    n = layout.gpus.shape[0]
    counts = forward_counts(n)
    # Forward passes keep no activations: they run at the configured budget.
    micro = micro_batches(sequences, layout, batch, forward_micro_tokens(layout, batch, overheads))
    tokens = batch.sequence_tokens
    zero = np.zeros(n)
    return pipeline_stage(
        fig,
        layout,
        links,
        (hw.fp8_flops if fp8 else hw.flops) * eff.forward_compute,
        counts,
        micro,
        batch,
        rounds=1.0,
        per_round_seconds=zero,
        per_round_up=zero,
        per_round_out=zero,
        per_round_hbm_seconds=zero,
        per_round_hbm_bytes=zero,
        per_round_link_bytes=zero,
        work_flop=sequences * tokens * work_per_token(fig, counts, tokens, layout),
        expert_loop_seconds=overheads.expert_loop_seconds,
        expert_compute=eff.expert_compute,
    )


def verdict_decode(
    fig: ModelFigures,
    sequences: float,
    context_tokens: float,
    verdict_tokens: int,
    layout: TrainLayout,
    links: TrainLinks,
    hw: Hardware,
    eff: EfficiencyFactors,
    overheads: Overheads,
) -> StageCost:
    """An LLM judge writing `verdict_tokens` tokens for each of `sequences` verdicts, after
    a prefill of `context_tokens` each, on a pool laid out like the training one: every
    tp x pp group is a replica decoding its share of the verdicts as one batch b.

    A decode step on the fullest stage GPU costs the roofline max(compute, HBM) plus two
    tensor all-reduces per layer and the engine's fixed host time: compute is b x (2 x active
    parameters + attention at the mean context) / tp of the stage's layers; HBM reads the
    weights once per pipeline micro-batch (pp times, as in the rollout) and the KV cache of
    the b sequences once. b is capped by the KV cache that fits beside the judge's weights
    and the engine's workspace (and by the engine's sequence limit): the verdicts then run in
    waves. The room is the pool's whole usable memory, which holds where the judge has its
    own pool and is optimistic where it shares the training GPUs. All verdicts have the same
    length, so the steps chain: a wave is verdict_tokens steps, and the depth those steps
    for a lone sequence."""
    share = fig.stage_share(layout.pp)
    replicas = layout.dp * layout.cp
    batch = np.ceil(sequences / replicas)
    context = context_tokens + verdict_tokens / 2.0
    flops_token = 2.0 * fig.params_active + fig.mixing_flops(context)
    flops_rate = hw.flops * eff.decode_compute
    hbm_rate = hw.hbm_bytes_per_s * eff.decode_hbm
    dense, expert = model_parallel_params(fig, layout)
    weights = WEIGHT_BYTES * (dense + expert)
    kv_read = fig.cache_read_bytes(context, layout.tp, layout.pp)  # per sequence and step
    kv_held = fig.cache_bytes(context, layout.tp, layout.pp)
    token_bytes = fig.hidden * BF16_BYTES
    calls = 2.0 * fig.layers * share

    def step(b: np.ndarray) -> tuple[np.ndarray, ...]:
        compute = b * flops_token * share / layout.tp / flops_rate
        hbm_bytes = layout.pp * weights + b * kv_read
        sent = calls * all_reduce_bytes(b * token_bytes, links.tp)
        comm = np.where(
            links.tp.active(), calls * links.tp.latency + sent / links.tp.bytes_per_s, 0.0
        )
        host = overheads.decode_step_seconds * hw.host_overhead
        seconds = np.maximum(compute, hbm_bytes / hbm_rate) + comm + host
        return seconds, compute, hbm_bytes, sent, comm

    room = hw.memory_bytes * overheads.usable_memory_fraction
    room = room - weights - overheads.rollout_workspace_bytes
    fits = np.clip(np.floor(room / kv_held), 1.0, float(overheads.max_seqs_per_replica))
    waves = np.ceil(batch / fits)
    seconds, compute, hbm_bytes, sent, comm = step(np.ceil(batch / waves))
    lone = step(np.ones_like(batch))[0]
    steps = waves * verdict_tokens
    up, out = split_by_link(steps * comm, links.tp)
    gpus = layout.gpus
    return StageCost(
        seconds=steps * seconds,
        work_seconds=steps * seconds,
        depth_seconds=verdict_tokens * lone,
        work_flop=np.full_like(gpus, sequences * verdict_tokens * flops_token),
        hbm_bytes=gpus * steps * hbm_bytes,
        link_bytes=gpus * steps * np.where(links.tp.active(), sent, 0.0),
        gpus=gpus,
        compute_seconds=steps * compute,
        hbm_seconds=steps * hbm_bytes / hbm_rate,
        scale_up_seconds=up,
        scale_out_seconds=out,
    )


def reward_stage(
    fig: ModelFigures,
    scoring: Scoring,
    responses: float,
    layout: TrainLayout,
    links: TrainLinks,
    batch: Batch,
    hw: Hardware,
    eff: EfficiencyFactors,
    overheads: Overheads,
) -> StageCost:
    """Scoring `responses` responses on one pool: forward passes, then a judge's verdicts."""
    if scoring.chained:
        steps = scoring.steps_per_response
        prefixes = [replace(batch, response_tokens=batch.response_tokens * k / steps) for k in
                    range(1, steps + 1)]  # fmt: skip
        return chain(
            [forward_stage(fig, responses, layout, links, p, hw, eff, overheads) for p in prefixes]
        )
    sequences, passes = scoring.forward(batch, responses)
    stage = forward_stage(fig, sequences, layout, links, passes, hw, eff, overheads)
    if scoring.kind != "llm-judge" or not scoring.verdict_tokens:
        return stage
    decode = verdict_decode(
        fig,
        sequences,
        passes.sequence_tokens,
        scoring.verdict_tokens,
        layout,
        links,
        hw,
        eff,
        overheads,
    )
    return stage + decode


def relayout_stage(
    frozen: list[Frozen], layout: TrainLayout, links: TrainLinks, assessed: TrainLayout
) -> StageCost:
    """Re-laying the frozen models from the training layout into their own for the
    assessment (the buffer is memory.reshard_bytes): each rank receives what its assessment
    shard holds beyond its training shard, from the ranks that hold the rest: the ZeRO group
    under ZeRO-3, else the tensor group. One collective per model, before its passes (a
    bound: the weights whose shards a rank already holds are not sent again)."""
    n = layout.gpus.shape[0]
    target = reshard_bytes(frozen, layout, assessed)
    held = sum((frozen_weight_bytes(f, layout, b) * m for f, m, b in frozen), np.zeros(n))
    received = np.maximum(target - held, 0.0)
    calls = float(len(frozen))
    sharded = layout.zero >= 3
    link_s = np.where(
        sharded,
        transfer_seconds(received, links.shard, calls),
        transfer_seconds(received, links.tp, calls),
    )
    seconds = np.where(received > 0, link_s, 0.0)
    up = np.where(
        sharded, split_by_link(seconds, links.shard)[0], split_by_link(seconds, links.tp)[0]
    )
    zero = np.zeros(n)
    return StageCost(
        seconds=seconds,
        work_seconds=seconds,
        depth_seconds=zero,
        work_flop=zero,
        hbm_bytes=zero,
        link_bytes=layout.gpus * received,
        gpus=layout.gpus,
        compute_seconds=zero,
        hbm_seconds=zero,
        scale_up_seconds=up,
        scale_out_seconds=seconds - up,
    )


@dataclass(frozen=True, slots=True)
class OwnPool:
    """A model's own pool (OpenRLHF's critic, reference or reward GPUs) and which plans use it."""

    layout: TrainLayout
    links: TrainLinks
    apart: BoolArray


FROZEN_ROLES = ("reference", "reward")
"""The forward-only models, never trained: an assessment layout (plan.assessment) lays them out."""

Pass = Callable[[TrainLayout, TrainLinks], StageCost]
"""One model's part of the assessment on a pool's layout."""


@dataclass(frozen=True, slots=True)
class Reference:
    """The reference model's forward pass: the policy's architecture in bf16 by default, or
    another model (a smaller one) and/or fp8 matmuls."""

    fig: ModelFigures
    fp8: bool = False


@dataclass(frozen=True, slots=True)
class Assessment:
    """The stage, and the seconds of each model's part (`reference`, `actor` for the old
    log-probs, `critic`, `reward`) on whichever pool it runs; parts on the same GPUs add up
    to the stage, a part on its own pool runs beside them."""

    stage: StageCost
    parts: dict[str, FloatArray]

    def take(self, rows: np.ndarray) -> Assessment:
        return Assessment(self.stage.take(rows), {k: v[rows] for k, v in self.parts.items()})


def _repeated(run: Pass, times: int) -> Pass:
    """A pass run once per objective, one after the other."""
    if times == 1:
        return run
    return lambda lay, lnk: run(lay, lnk).repeated(times)


def assessment_stage(
    policy: ModelFigures,
    critic: ModelFigures | None,
    reward: ModelFigures | None,
    reference: Reference | None,
    old_log_probs: bool | BoolArray,
    layout: TrainLayout,
    links: TrainLinks,
    batch: Batch,
    hw: Hardware,
    eff: EfficiencyFactors,
    overheads: Overheads,
    pools: dict[str, OwnPool] | None = None,
    scoring: Scoring = ONE_PASS,
    critic_shared: BoolArray | None = None,
    objectives: int = 1,
    scored_per_response: int = 1,
    frozen_layout: tuple[TrainLayout, TrainLinks] | None = None,
) -> Assessment:
    """The passes run one after another on the training GPUs; a model on its own pool runs
    its pass there, beside the others, and the slowest pool sets the stage's time. With LoRA
    the reference is the base model inside the actor: its pass still runs (adapters off).
    Without `old_log_probs` the rollout engine's log-probs are trusted and no pass runs (per
    plan where it is an array: SkyRL's fully asynchronous launches skip the pass).
    Where `critic_shared`, the values come from a head on the policy: with old log-probs
    recomputed the actor's pass yields them for the head's FLOPs alone, otherwise the policy's
    forward pass runs for them (survey §4.1, Table 9). With more than one objective each has
    its value model and its scoring model, run in turn on the same GPUs (`objectives`). The
    scoring model scores `scored_per_response` sequences per response: the response and the
    completions a search decoded from its states (cost.step_search). The frozen models
    (reference, reward model) run in `frozen_layout` on the training GPUs where one is given
    (plan.assessment: data-parallel replicas of tp x pp, no ZeRO), the others in the
    training layout; a frozen model's own pool comes in `pools` laid out as it runs."""
    trained = float(batch.trained_sequences)
    n = layout.gpus.shape[0]
    recomputed = np.broadcast_to(np.asarray(old_log_probs, dtype=bool), (n,))

    def forward(fig: ModelFigures, fp8: bool = False) -> Pass:
        return lambda lay, lnk: forward_stage(
            fig, trained, lay, lnk, batch, hw, eff, overheads, fp8
        )

    passes: list[tuple[str, Pass]] = []
    if reference is not None:
        passes.append(("reference", forward(reference.fig, reference.fp8)))
    if recomputed.any():
        recompute = forward(policy)
        passes.append(
            ("actor", lambda lay, lnk: choose(recomputed, recompute(lay, lnk), idle_stage(n)))
        )
    if critic is not None:
        separate = _repeated(forward(critic), objectives)
        if critic_shared is not None and critic_shared.any():
            mask = critic_shared

            def critic_pass(lay: TrainLayout, lnk: TrainLinks) -> StageCost:
                # one backbone pass feeds a value head per objective
                head = value_head_stage(
                    policy, batch.trained_tokens, lay, hw, eff.forward_compute,
                    passes=float(objectives),
                )  # fmt: skip
                if not recomputed.all():
                    # without the old log-probs' pass the policy's forward runs for the head
                    head = choose(recomputed, head, forward(policy)(lay, lnk) + head)
                return choose(mask, head, separate(lay, lnk))

            passes.append(("critic", critic_pass))
        else:
            passes.append(("critic", separate))
    if reward is not None:
        # The reward also scores responses that are generated but not trained on.
        generated = float(batch.generated_sequences * scored_per_response)

        def scored(lay: TrainLayout, lnk: TrainLinks) -> StageCost:
            return reward_stage(reward, scoring, generated, lay, lnk, batch, hw, eff, overheads)

        passes.append(("reward", _repeated(scored, objectives)))
    pools = pools or {}
    shared = idle_stage(n, layout.gpus)
    apart: list[StageCost] = []
    parts: dict[str, FloatArray] = {}
    for role, run in passes:
        lay, lnk = (layout, links)
        if frozen_layout is not None and role in FROZEN_ROLES:
            lay, lnk = frozen_layout
        here = run(lay, lnk)
        own = pools.get(role)
        if own is None:
            shared = shared + here
            parts[role] = here.seconds
            continue
        there = run(own.layout, own.links)
        shared = shared + choose(own.apart, idle_stage(n), here)
        apart.append(choose(own.apart, there, idle_stage(n)))
        parts[role] = np.where(own.apart, there.seconds, here.seconds)
    for stage in apart:
        shared = shared.beside(stage)
    return Assessment(shared, parts)
