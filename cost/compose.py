"""Composing stage times into the time of one RL step, by placement and execution mode.

A `Span` carries a time with its Brent bounds. `seq` (one after the other) adds all three;
`par` (side by side, the step waits for the slower) takes the maximum of each. Both are
associative and commutative, so compositions can be written in any grouping, and a composed
span keeps lower <= seconds <= upper.

- colocated (sync, partial-rollout): every stage on the same GPUs, one after another;
- in every placement the switch (offload traffic: state parked on the host and reloaded,
  frozen models loaded for the assessment) belongs to the trainer's side;
- disaggregated sync (and partial-rollout): the pools take turns; each idles while the other
  works;
- one-step-off: the rollout of step i+1 runs while step i trains (verl's one_step_off_policy,
  slime's train_async.py, NeMo RL async GRPO with max_trajectory_age_steps 1 and in-flight
  weight updates off): the engine
  generates one batch and drains it, so its long tail is paid every step, hidden only where the
  trainer is slower; the step is the slower pool, then the weight sync that neither pool can
  hide (the trainer pushes, the engine stops to load);
- async with staleness k: the asynchronous pipeline the frameworks run (NeMo RL async GRPO with
  in-flight weight updates, AReaL's interruptible rollouts, verl's fully_async_policy with
  partial rollouts, slime and Miles fully async): the engine admits requests as others finish,
  keeping k steps' worth in flight (the in-flight cap), and keeps decoding them while new
  weights arrive after every trainer step, so it never drains. Per step the pool is busy
  producing one step's sequences at that steady batch (`cost.rollout.Stream`; where the
  framework admits a prompt's whole group and frees its slots only when the group's longest
  response ends, as NeMo RL does, only the unfinished share decodes:
  Overheads.group_admission); a long
  response spans as many weight versions as it takes (the frameworks bound staleness by what
  they admit) and the trainer consumes samples as they arrive. The step is the slower of the
  two, then the weight push (the engine pauses to load it, the trainer to send it);
- async with staleness 0 (verl fully_async_policy's "stream off-policy pipeline":
  staleness_threshold 0, trigger_parameter_sync_step > 1): on-policy like sync, the engine
  generates exactly one step's batch and drains it, but it sends each sample to the trainer as
  it completes and the trainer updates on every mini-batch as soon as its samples are in
  (`streamed_batch`), so only the trainer's work on the last mini-batch follows the batch's
  tail; the weights are pushed once the step's last update is done, and the engine waits;
- partial-rollout: the rollout stage itself caps its decode depth (`decode_caps`), the tail
  carries over to the next step and is counted there at the full-batch rate;
- inter-stage fusion (survey §4.3, Table 9: depth max{D_G, D_A} + D_T): in the plans where the
  assessment waits for the rollout (sync, partial-rollout), finished responses stream into
  the assessment while the long tail decodes. On separate pools the two run side by side,
  max(T_G, T_A); on one pool the assessment can only fill the GPUs the tail leaves idle, so
  the pair takes max(T_G, T_A, W_G + W_A). The samples arrive in h chunks (plan.fusion_chunk,
  takeaway 23): the last chunk's share T_A / h only starts when the rollout ends, each
  hand-off costs a sync, and a chunk of fewer samples than the assessment's data-parallel
  ranks leaves some idle (T_A stretched by ranks / chunk), so the pair is
  max(T_G + T_A / h, T_A) + h x latency (one chunk is the unfused T_G + T_A plus a sync).
  Overlapping modes already hide the assessment behind the rollout and are unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import reduce

import numpy as np
from rlmguide.cost.arrays import BoolArray, FloatArray, IntArray
from rlmguide.cost.plans import ASYNC, ONE_STEP_OFF, inter_stage, shares_gpus
from rlmguide.cost.rollout import Stream
from rlmguide.cost.stage import StageCost


@dataclass(frozen=True, slots=True)
class Span:
    seconds: FloatArray
    lower: FloatArray
    upper: FloatArray

    @classmethod
    def of(cls, stage: StageCost) -> Span:
        return cls(stage.seconds, stage.lower_seconds, stage.upper_seconds)


def _seq2(a: Span, b: Span) -> Span:
    return Span(a.seconds + b.seconds, a.lower + b.lower, a.upper + b.upper)


def _par2(a: Span, b: Span) -> Span:
    return Span(
        np.maximum(a.seconds, b.seconds), np.maximum(a.lower, b.lower), np.maximum(a.upper, b.upper)
    )


def seq(*spans: Span) -> Span:
    """One after another."""
    return reduce(_seq2, spans)


def par(*spans: Span) -> Span:
    """Side by side; done when the slowest is."""
    return reduce(_par2, spans)


def where(condition: BoolArray, a: Span, b: Span) -> Span:
    """Per plan, span `a` where the condition holds, else span `b`."""
    return Span(
        np.where(condition, a.seconds, b.seconds),
        np.where(condition, a.lower, b.lower),
        np.where(condition, a.upper, b.upper),
    )


def streamed_rollout(stream: Stream, staleness: FloatArray) -> Span:
    """The rollout pool's time per step as a stream with staleness k: busy producing a step's
    sequences at the steady batch. verl, AReaL, slime and Miles bound staleness by what they
    admit, so a long response spans as many weight versions as it takes (verl counts them as
    max_partial_span); where a whole trajectory must finish within k versions (NeMo RL's
    max_trajectory_age_steps), a longest response spread over k steps can bind instead:
    that is the upper bound."""
    produce = stream.produce_seconds
    # Staleness 0 does not stream the engine (`streamed_batch`); its rows are not used here.
    bound = stream.sequence_seconds / np.maximum(staleness, 1.0)
    return Span(produce, produce, np.maximum(produce, bound))


def streamed_batch(rollout: Span, trainer: Span, minibatches: float, epochs: float) -> Span:
    """One drained batch whose samples stream into the trainer (async with staleness 0).

    The trainer's first pass over the step's m mini-batches can run while the batch
    generates; what must follow the batch's last sample is the last mini-batch of that pass
    and every later epoch, a share 1 - (m - 1) / (m x epochs) of the trainer's time. The
    trainer also cannot start before its first mini-batch is in: taken as 1/m of the
    rollout, which over-states the wait (short responses finish first, so the first
    mini-batches fill early) and so errs slow. Lower bound: the longer side alone, or the
    rollout then that last share; upper bound: one after the other, as sync."""
    after = 1.0 - (minibatches - 1.0) / (minibatches * epochs)
    first = 1.0 / minibatches
    return Span(
        np.maximum(
            rollout.seconds + after * trainer.seconds, first * rollout.seconds + trainer.seconds
        ),
        np.maximum(rollout.lower + after * trainer.lower, trainer.lower),
        rollout.upper + trainer.upper,
    )


def fused_assessment(
    rollout: StageCost,
    assessment: StageCost,
    one_pool: BoolArray,
    handoffs: FloatArray | float = np.inf,
    handoff_seconds: FloatArray | float = 0.0,
    stretch: FloatArray | float = 1.0,
) -> Span:
    """Rollout and assessment with inter-stage fusion, the samples handed over in `handoffs`
    chunks at `handoff_seconds` each, the assessment `stretch` times as long in chunks as in
    one batch: side by side on separate pools, but the last chunk's share of the assessment
    after the rollout; on one pool, the assessment's work also fills only the tail's idle
    GPUs. Lower bound: the longer chain, and on one pool the summed work; upper bound: one
    after the other; each with the hand-offs' syncs."""
    r, a = Span.of(rollout), Span.of(assessment)
    p = Span(a.seconds * stretch, a.lower * stretch, a.upper * stretch)
    sync = handoffs * handoff_seconds if np.any(handoff_seconds) else 0.0
    both = rollout.work_seconds + assessment.work_seconds + sync
    side_by_side = Span(
        np.maximum(r.seconds + p.seconds / handoffs, p.seconds) + sync,
        np.maximum(r.lower + p.lower / handoffs, p.lower) + sync,
        r.upper + p.upper + sync,
    )
    crowded = Span(
        np.maximum(side_by_side.seconds, both),
        np.maximum(side_by_side.lower, both),
        side_by_side.upper,
    )
    return where(one_pool, crowded, side_by_side)


@dataclass(frozen=True, slots=True)
class StepTime:
    step: Span
    rollout_idle: FloatArray
    """Seconds per step the rollout GPUs wait (disaggregated)."""
    train_idle: FloatArray
    overlap: FloatArray
    """Seconds per step that run concurrently: the stages' times in the plan's mode (the
    rollout as a stream where it streams) laid end to end, minus the step."""
    hidden_share: FloatArray
    """The overlap as a share of the shorter side (rollout, or assessment plus training and
    switch): 1 is the shorter side wholly hidden behind the longer."""
    engine_streams: BoolArray
    """Where the engine runs as a stream (async with a lag, on GPUs of its own): its time is
    the stream's (`cost.rollout.Stream`), at the stream's concurrency."""


def compose_step(
    placement: IntArray,
    execution: IntArray,
    staleness: IntArray,
    rollout: StageCost,
    assessment: StageCost,
    training: StageCost,
    weight_sync: StageCost,
    switch: StageCost,
    fusion: IntArray | None = None,
    *,
    stream: Stream,
    minibatches: float = 1.0,
    epochs: float = 1.0,
    handoffs: FloatArray | float = np.inf,
    handoff_seconds: FloatArray | float = 0.0,
    stretch: FloatArray | float = 1.0,
) -> StepTime:
    """`minibatches` and `epochs`: the trainer's optimizer steps per RL step and passes over
    the batch, which set how much of its work a batch streamed at staleness 0 can hide (one
    mini-batch, one epoch: none)."""
    r, p, t, s, w = (Span.of(x) for x in (rollout, assessment, training, weight_sync, switch))
    streamed = streamed_rollout(stream, staleness.astype(np.float64))
    # Offload traffic (parking state, loading frozen models) is the trainer's, in any placement.
    trainer = seq(p, t, w)
    is_colocated = shares_gpus(placement)
    fused = np.zeros(len(placement), dtype=bool) if fusion is None else inter_stage(fusion)
    in_turn = where(
        fused,
        seq(
            fused_assessment(rollout, assessment, is_colocated, handoffs, handoff_seconds, stretch),
            t,
            w,
            s,
        ),
        seq(r, trainer, s),
    )
    one_step_off = seq(par(r, trainer), s)
    is_async = execution == ASYNC
    on_policy_stream = is_async & (staleness == 0)
    streaming = where(
        on_policy_stream,
        seq(streamed_batch(r, trainer, minibatches, epochs), s),
        seq(par(streamed, trainer), s),
    )
    disaggregated = where(
        execution == ONE_STEP_OFF, one_step_off, where(is_async, streaming, in_turn)
    )
    step = where(is_colocated, in_turn, disaggregated)
    engine_streams = is_async & ~on_policy_stream & ~is_colocated
    generating = np.where(engine_streams, streamed.seconds, rollout.seconds)
    rollout_busy = generating + weight_sync.seconds
    train_busy = trainer.seconds + weight_sync.seconds
    overlap = np.maximum(generating + trainer.seconds + weight_sync.seconds - step.seconds, 0.0)
    shorter = np.minimum(generating, trainer.seconds)
    return StepTime(
        step=step,
        rollout_idle=np.where(is_colocated, 0.0, np.maximum(step.seconds - rollout_busy, 0.0)),
        train_idle=np.where(is_colocated, 0.0, np.maximum(step.seconds - train_busy, 0.0)),
        overlap=overlap,
        hidden_share=np.where(
            shorter > 0, np.minimum(overlap / np.maximum(shorter, 1e-300), 1.0), 0.0
        ),
        engine_streams=engine_streams,
    )
