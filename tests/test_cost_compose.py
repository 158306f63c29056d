"""Composition by placement and execution mode; seq and par are associative."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rlmguide.cost.compose import Span, compose_step, par, seq, streamed_rollout
from rlmguide.cost.plans import ASYNC, COLOCATED, DISAGGREGATED, ONE_STEP_OFF, PARTIAL_ROLLOUT, SYNC
from rlmguide.cost.rollout import Stream
from rlmguide.cost.stage import StageCost


def stage(seconds: float, work: float, depth: float) -> StageCost:
    def a(x: float) -> np.ndarray:
        return np.array([x])

    zero = a(0.0)
    return StageCost(
        seconds=a(seconds), work_seconds=a(work), depth_seconds=a(depth), work_flop=zero,
        hbm_bytes=zero, link_bytes=zero, gpus=a(8.0), compute_seconds=a(work), hbm_seconds=zero,
        scale_up_seconds=zero, scale_out_seconds=zero,
    )  # fmt: skip


# rollout 100 s (work 60, depth 50), assessment 20, training 50, sync 5, switch 3
ROLLOUT, PREP, TRAIN, SYNC_STAGE, SWITCH = (
    stage(100, 60, 50), stage(20, 20, 1), stage(50, 48, 4), stage(5, 2, 3), stage(3, 3, 0),
)  # fmt: skip
# The same engine as a stream: 40 s to produce a step's sequences at its steady batch, 90 s
# for one longest response inside it.
STREAM = Stream(np.array([64.0]), np.array([40.0]), np.array([90.0]))


def compose(placement: int, execution: int, staleness: int = 1, stream: Stream = STREAM):
    return compose_step(
        np.array([placement]), np.array([execution]), np.array([staleness]),
        ROLLOUT, PREP, TRAIN, SYNC_STAGE, SWITCH, stream=stream,
    )  # fmt: skip


def step(placement: int, execution: int, staleness: int = 1) -> float:
    return float(compose(placement, execution, staleness).step.seconds[0])


def test_colocated_stages_add_up_with_the_switch() -> None:
    assert step(COLOCATED, SYNC) == 100 + 20 + 50 + 5 + 3
    assert step(COLOCATED, PARTIAL_ROLLOUT) == 178


def test_disaggregated_sync_takes_turns_and_reports_idle_time() -> None:
    # The switch (offload traffic) is the trainer's in any placement.
    assert step(DISAGGREGATED, SYNC) == 100 + 20 + 50 + 3 + 5
    timing = compose(DISAGGREGATED, SYNC)
    assert timing.rollout_idle[0] == 178 - 105  # waits for the trainer
    assert timing.train_idle[0] == 178 - 78  # waits for the rollout
    assert timing.overlap[0] == 0 and timing.hidden_share[0] == 0


def test_one_step_off_overlaps_the_pools_and_exposes_the_sync() -> None:
    assert step(DISAGGREGATED, ONE_STEP_OFF) == max(100, 20 + 50 + 3) + 5
    # The trainer's 73 s hide behind the rollout's 100 s: 100 + 73 + 5 - 105 = 73 s overlap.
    timing = compose(DISAGGREGATED, ONE_STEP_OFF)
    assert timing.overlap[0] == 73 and timing.hidden_share[0] == 1.0


def test_async_streams_the_rollout_and_pushes_weights_every_step() -> None:
    # The stream produces a step's sequences in 40 s; the trainer's 73 s bind: 73 + 5.
    assert step(DISAGGREGATED, ASYNC, 2) == 73 + 5
    # A faster trainer makes the stream bind: the same 40 s at any staleness (the frameworks
    # bound staleness by admission; a long response spans versions).
    quick = stage(10, 10, 1)
    for k in (1, 2, 8):
        timing = compose_step(
            np.array([DISAGGREGATED]), np.array([ASYNC]), np.array([k]),
            ROLLOUT, PREP, quick, SYNC_STAGE, SWITCH, stream=STREAM,
        )  # fmt: skip
        assert timing.step.seconds[0] == max(40, 20 + 10 + 3) + 5
    # Streaming beats draining every batch: one-step-off pays the 100 s batch.
    assert step(DISAGGREGATED, ASYNC, 1) < step(DISAGGREGATED, ONE_STEP_OFF)
    # Upper bound: a longest response (90 s) that had to finish within k steps.
    assert streamed_rollout(STREAM, np.array([1.0])).upper[0] == 90
    assert streamed_rollout(STREAM, np.array([4.0])).upper[0] == 40  # max(40, 22.5)
    streamed = streamed_rollout(STREAM, np.array([2.0]))
    assert streamed.lower[0] <= streamed.seconds[0] <= streamed.upper[0]


def test_colocated_plans_never_stream() -> None:
    # One pool cannot generate while it trains: async on one pool is still stage after stage.
    assert step(COLOCATED, ASYNC, 4) == step(COLOCATED, SYNC)


def test_composed_step_keeps_brent_bounds() -> None:
    for placement, execution in [
        (COLOCATED, SYNC),
        (DISAGGREGATED, SYNC),
        (DISAGGREGATED, ONE_STEP_OFF),
        (DISAGGREGATED, ASYNC),
    ]:
        s = compose(placement, execution, 2).step
        assert s.lower[0] <= s.seconds[0] <= s.upper[0]


def span(a: float, b: float, c: float) -> Span:
    """A span whose lower bound, time and upper bound are ordered."""
    return Span(np.array([min(a, b)]), np.array([min(a, b) * 0.5]), np.array([max(a, b) + c]))


spans = st.builds(span, st.floats(0, 1e6), st.floats(0, 1e6), st.floats(0, 1e6))


def same(x: Span, y: Span) -> None:
    for field in ("seconds", "lower", "upper"):
        assert getattr(x, field)[0] == pytest.approx(getattr(y, field)[0], rel=1e-12, abs=1e-9)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(a=spans, b=spans, c=spans)
def test_seq_and_par_are_associative(a: Span, b: Span, c: Span) -> None:
    same(seq(seq(a, b), c), seq(a, seq(b, c)))
    same(par(par(a, b), c), par(a, par(b, c)))
    same(seq(a, b, c), seq(a, seq(b, c)))
    same(par(a, b), par(b, a))
    for composed in (seq(a, b, c), par(a, b, c), seq(par(a, b), c)):
        assert composed.lower[0] <= composed.seconds[0] * (1 + 1e-12)
        assert composed.seconds[0] <= composed.upper[0] * (1 + 1e-12)


def stream_at_zero(minibatches: float, epochs: float = 1.0, train: StageCost = TRAIN) -> float:
    return float(
        compose_step(
            np.array([DISAGGREGATED]), np.array([ASYNC]), np.array([0]),
            ROLLOUT, PREP, train, SYNC_STAGE, SWITCH, stream=STREAM,
            minibatches=minibatches, epochs=epochs,
        ).step.seconds[0]
    )  # fmt: skip


def test_async_at_staleness_zero_streams_one_drained_batch_into_the_trainer() -> None:
    # Trainer 20 + 50 + 3 = 73 s over 4 mini-batches: only the last one's 18.25 s follows the
    # 100 s batch (the first mini-batch is in after 25 s, and 25 + 73 is shorter); then sync 5.
    assert stream_at_zero(4) == pytest.approx(100 + 73 / 4 + 5)
    # Two epochs: the second pass waits for the whole batch, 73 x (1 - 3/8) follows it.
    assert stream_at_zero(4, 2) == pytest.approx(100 + 73 * 5 / 8 + 5)
    # One mini-batch is nothing to stream: the pools take turns, as sync.
    assert stream_at_zero(1) == step(DISAGGREGATED, SYNC)
    # A slow trainer (20 + 400 + 3 s) binds from its first mini-batch, 25 s in.
    assert stream_at_zero(4, 1, stage(400, 400, 4)) == pytest.approx(25 + 423 + 5)
    # The batch drains, so the stream's 40 s never apply; staleness 1 streams the engine.
    assert stream_at_zero(4) > step(DISAGGREGATED, ASYNC, 1)
    timing = compose_step(
        np.array([DISAGGREGATED]), np.array([ASYNC]), np.array([0]),
        ROLLOUT, PREP, TRAIN, SYNC_STAGE, SWITCH, stream=STREAM, minibatches=4,
    )  # fmt: skip
    s = timing.step
    # Upper bound: no overlap at all, the synchronous turns.
    assert s.lower[0] <= s.seconds[0] <= s.upper[0] == compose(DISAGGREGATED, SYNC).step.upper[0]
    # 100 + 73 + 5 laid end to end against the 123.25 s step: 54.75 s run side by side.
    assert timing.overlap[0] == pytest.approx(54.75)


times = st.floats(0.0, 1e4)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    rollout=times, drained=times, train=times, prep=times, sync=times, produce=times,
    longest=times, minibatches=st.integers(1, 64), epochs=st.integers(1, 4),
)  # fmt: skip
def test_more_staleness_never_slows_the_step(
    rollout: float,
    drained: float,
    train: float,
    prep: float,
    sync: float,
    produce: float,
    longest: float,
    minibatches: int,
    epochs: int,
) -> None:
    """Sync, then async at 0, 1, 2, 4, 8: each allows what the one before does and more, so the
    step never grows. The stream never drains, so it produces a step's sequences no slower
    than the drained batch does (its precondition: produce <= rollout)."""
    r = stage(rollout + drained, rollout, drained)
    produced = np.array([min(produce, rollout + drained)])
    stream = Stream(np.array([8.0]), produced, np.array([longest]))
    stages = (r, stage(prep, prep, 0), stage(train, train, 0), stage(sync, sync, 0), SWITCH)
    kw = {"stream": stream, "minibatches": float(minibatches), "epochs": float(epochs)}
    one = (np.array([DISAGGREGATED]),)
    sync_step = compose_step(*one, np.array([SYNC]), np.array([1]), *stages, **kw).step.seconds[0]
    steps = [sync_step] + [
        compose_step(*one, np.array([ASYNC]), np.array([k]), *stages, **kw).step.seconds[0]
        for k in (0, 1, 2, 4, 8)
    ]
    for slower, faster in itertools.pairwise(steps):
        assert faster <= slower * (1 + 1e-12)
