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
- one-step-off: the rollout of step i+1 runs while step i trains; the step is the slower pool,
  then the weight sync that neither pool can hide (the rollout pool waits for the new weights);
- async with staleness k: generation streams without draining at each step, so the long tail
  of one step overlaps the next k steps: the rollout pool needs its queued work plus 1/k of
  its drain per step (never less than its work W/p);
- partial-rollout: the rollout stage itself caps its decode depth (`decode_caps`), the tail
  carries over to the next step and is counted there at the full-batch rate;
- inter-stage fusion (survey §4.3, Table 9: depth max{D_G, D_A} + D_T): in the plans where the
  assessment waits for the rollout (sync, partial-rollout), finished responses stream into
  the assessment while the long tail decodes. On separate pools the two run side by side,
  max(T_G, T_A); on one pool the assessment can only fill the GPUs the tail leaves idle, so
  the pair takes max(T_G, T_A, W_G + W_A). Overlapping modes already hide the assessment
  behind the rollout and are unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import reduce

import numpy as np
from rlmguide.cost.arrays import BoolArray, FloatArray, IntArray
from rlmguide.cost.plans import ASYNC, ONE_STEP_OFF, inter_stage, shares_gpus
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


def streamed_rollout(rollout: StageCost, staleness: FloatArray) -> Span:
    """The rollout pool's time per step when generation streams with staleness k."""
    work, depth = rollout.work_seconds, rollout.depth_seconds
    amortised = np.maximum(work, rollout.seconds - depth + depth / staleness)
    return Span(amortised, np.maximum(work, depth / staleness), work + depth / staleness)


def fused_assessment(rollout: StageCost, assessment: StageCost, one_pool: BoolArray) -> Span:
    """Rollout and assessment with inter-stage fusion: side by side on separate pools; on one
    pool, the assessment's work fills the tail's idle GPUs. Lower bound: the longer chain, and
    on one pool the summed work; upper bound: one after the other."""
    r, p = Span.of(rollout), Span.of(assessment)
    both = rollout.work_seconds + assessment.work_seconds
    side_by_side = par(r, p)
    crowded = Span(
        np.maximum(side_by_side.seconds, both),
        np.maximum(side_by_side.lower, both),
        r.upper + p.upper,
    )
    return where(one_pool, crowded, side_by_side)


@dataclass(frozen=True, slots=True)
class StepTime:
    step: Span
    rollout_idle: FloatArray
    """Seconds per step the rollout GPUs wait (disaggregated)."""
    train_idle: FloatArray


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
) -> StepTime:
    r, p, t, s, w = (Span.of(x) for x in (rollout, assessment, training, weight_sync, switch))
    streamed = streamed_rollout(rollout, staleness.astype(np.float64))
    # Offload traffic (parking state, loading frozen models) is the trainer's, in any placement.
    trainer = seq(p, t, w)
    is_colocated = shares_gpus(placement)
    fused = np.zeros(len(placement), dtype=bool) if fusion is None else inter_stage(fusion)
    in_turn = where(
        fused,
        seq(fused_assessment(rollout, assessment, is_colocated), t, w, s),
        seq(r, trainer, s),
    )
    one_step_off = seq(par(r, trainer), s)
    streaming = seq(par(streamed, trainer), s)
    is_async = execution == ASYNC
    disaggregated = where(
        execution == ONE_STEP_OFF, one_step_off, where(is_async, streaming, in_turn)
    )
    step = where(is_colocated, in_turn, disaggregated)
    rollout_busy = np.where(is_async, streamed.seconds, rollout.seconds) + weight_sync.seconds
    train_busy = trainer.seconds + weight_sync.seconds
    return StepTime(
        step=step,
        rollout_idle=np.where(is_colocated, 0.0, np.maximum(step.seconds - rollout_busy, 0.0)),
        train_idle=np.where(is_colocated, 0.0, np.maximum(step.seconds - train_busy, 0.0)),
    )
